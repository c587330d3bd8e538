"""run_analysis on small synthetic tables: fallbacks, notes, rankings."""

import numpy as np
import pandas as pd
import pytest

from analysis import pipeline
from analysis.config import parse_config
from analysis.errors import AnalysisInputError
from analysis.synthetic import synthetic_scores

BENCHMARKS = {"a": "math", "b": "math", "c": "logic"}


def _config(**analysis):
    return parse_config({"experiment": "demo",
                         "comparisons": [{"family": "f", "reference": "ref", "arms": ["shifted", "other"]}],
                         "analysis": {"resamples": 500, **analysis}})


def _per_benchmark_scores():
    scores = synthetic_scores(arms=["ref", "other"], seeds=range(1, 9), benchmarks=BENCHMARKS, items=None,
                              experiment="demo", rng=np.random.default_rng(0))
    shifted = scores[scores["arm"] == "ref"].assign(arm="shifted", score=lambda f: f["score"] + 0.1)
    return pd.concat([scores, shifted], ignore_index=True)


def test_constant_differences_fall_back_from_bca_with_a_note():
    result = pipeline.run_analysis(_config(), _per_benchmark_scores())
    rows = result.comparisons[(result.comparisons["arm"] == "shifted")].set_index(["summary", "ci_method"])
    bca, pct = rows.xs("bca", level="ci_method"), rows.xs("percentile", level="ci_method")
    assert (bca["note"] != "").all() and (pct["note"] == "").all()
    np.testing.assert_allclose(bca[["ci_low", "ci_high"]], pct[["ci_low", "ci_high"]])
    np.testing.assert_allclose(bca["ci_low"], 0.1)
    assert (rows["p_value"] == 2 / 2**8).all()  # eight positive differences: the smallest exact p
    assert any(n.startswith("BCa was undefined for") for n in result.notes)


def test_item_bootstrap_on_per_benchmark_rows_is_skipped_with_a_note():
    result = pipeline.run_analysis(_config(item_bootstrap=True), _per_benchmark_scores())
    assert "crossed_percentile" not in set(result.comparisons["ci_method"])
    assert any("per-benchmark rows only" in n for n in result.notes)


def test_eight_seeds_can_reach_alpha_and_the_report_says_nothing_about_it():
    result = pipeline.run_analysis(_config(), _per_benchmark_scores())
    assert not any("whatever the data" in n for n in result.notes)  # 2 * 2/256 = 0.016 <= 0.05
    np.testing.assert_allclose(result.comparisons["min_attainable_p"], 4 / 256)
    assert result.comparisons.loc[result.comparisons["arm"] == "shifted", "reject"].all()


def test_rankings_follow_the_config_and_unknown_arms_are_an_error():
    scores = _per_benchmark_scores()
    result = pipeline.run_analysis(_config(rankings={"all": ["ref", "shifted", "other"]}), scores)
    top = result.rankings[(result.rankings["summary"] == "flat") & (result.rankings["rank"] == 1)]
    assert top["arm"].tolist() == ["shifted"]
    assert set(result.correlations["ranking"]) == {"all"}
    with pytest.raises(AnalysisInputError, match=r"analysis.rankings: arm\(s\) \['ghost'\] have no scores"):
        pipeline.run_analysis(_config(rankings={"r": ["ref", "ghost"]}), scores)
