"""run_analysis on small synthetic tables: fallbacks, notes, the family's procedure, rankings."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.weightstats import ttost_paired

from armlab.analysis import pipeline, tables
from armlab.analysis.comparisons import paired
from armlab.analysis.config import parse_config
from armlab.analysis.design.synthetic import synthetic_scores
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.stats import intervals, multiplicity

BENCHMARKS = {"a": "math", "b": "math", "c": "logic"}


def _config(**analysis):
    return parse_config(
        {
            "experiment": "demo",
            "comparisons": [{"family": "f", "reference": "ref", "arms": ["shifted", "other"]}],
            "analysis": {"resamples": 500, **analysis},
        }
    )


def _per_benchmark_scores(seeds=8):
    """``shifted``: the reference + 10 points on every run; ``other``: +-1 point, alternating by seed."""
    ref = synthetic_scores(
        arms=["ref"],
        seeds=range(1, seeds + 1),
        benchmarks=BENCHMARKS,
        items=None,
        experiment="demo",
        rng=np.random.default_rng(0),
    )
    shifted = ref.assign(arm="shifted", score=ref["score"] + 0.1)
    other = ref.assign(arm="other", score=ref["score"] + np.where(ref["seed"] % 2 == 0, 0.01, -0.01))
    return pd.concat([ref, shifted, other], ignore_index=True)


def test_constant_differences_fall_back_from_bca_and_have_no_spread():
    result = pipeline.run_analysis(_config(ci_methods=["percentile", "bca"]), _per_benchmark_scores())
    rows = result.comparisons[(result.comparisons["arm"] == "shifted")].set_index(["measure", "ci_method"])
    bca, pct = rows.xs("bca", level="ci_method"), rows.xs("percentile", level="ci_method")
    assert (bca["note"] != "").all() and (pct["note"] == "").all()
    np.testing.assert_allclose(bca[["ci_low", "ci_high"]], pct[["ci_low", "ci_high"]])
    np.testing.assert_allclose(bca["ci_low"], 0.1)
    assert (rows["p_value"] == 2 / 2**8).all()  # eight positive differences: the smallest exact p
    assert any(n.startswith("BCa was undefined for") for n in result.notes)
    # score + 0.1 - score differs from 0.1 by rounding: e2d0814 gave sd 2e-17, MDE 2.6e-17, 100,000 seeds
    assert (rows["sd_diff"] == 0).all()
    assert rows[["mde", "mde_low", "mde_high", "seeds_needed", "seeds_needed_high"]].isna().all().all()
    assert any("have no spread" in n for n in result.notes)


def test_item_bootstrap_on_per_benchmark_rows_is_skipped_with_a_note():
    result = pipeline.run_analysis(_config(item_bootstrap=True), _per_benchmark_scores())
    assert not result.comparisons["ci_method"].str.startswith("crossed").any()
    assert any("per-benchmark rows only" in n for n in result.notes)


def test_the_primary_decides_first_and_the_benchmarks_wait_for_every_arm():
    result = pipeline.run_analysis(_config(), _per_benchmark_scores())
    table = result.comparisons[result.comparisons["ci_method"] == intervals.FIRST_METHOD]
    primary = table[table["stage"] == "primary"]
    assert set(primary["measure"]) == {"domain_balanced"}
    np.testing.assert_allclose(primary["min_attainable_p"], 4 / 256)  # Holm over 2 arms: 2 x 2/256
    assert primary.set_index("arm")["reject"].to_dict() == {"shifted": True, "other": False}
    # `other` is not significant, so no secondary cell is tested: shifted's +10 points on every
    # benchmark stay descriptive; with 8 cells and 8 seeds none could be significant anyway
    secondary = table[table["stage"] == "secondary"]
    assert len(secondary) == 2 * (1 + 3) and not secondary["reject"].any()
    np.testing.assert_allclose(secondary["min_attainable_p"], 8 * 2 / 256)
    assert any("8 secondary summary and benchmark comparison(s) are tested only once" in n for n in result.notes)
    # the adjusted p-values are the gatekept Holm of the table's own p-values
    (_, holm_1), (_, holm_2) = multiplicity.gatekept_holm(primary["p_value"], secondary["p_value"], 0.05)
    np.testing.assert_allclose(primary["p_holm"], holm_1)
    np.testing.assert_allclose(secondary["p_holm"], holm_2)


def test_twelve_seeds_and_one_arm_open_the_gate():
    cfg = parse_config(
        {
            "experiment": "demo",
            "comparisons": [{"family": "f", "reference": "ref", "arms": ["shifted"]}],
            "analysis": {"resamples": 500},
        }
    )
    scores = _per_benchmark_scores(seeds=12)
    result = pipeline.run_analysis(cfg, scores[scores["arm"] != "other"])
    table = result.comparisons[result.comparisons["ci_method"] == intervals.FIRST_METHOD]
    assert table["reject"].all()  # 4 secondary cells x 2/4096 <= 0.05
    assert not any("whatever the data" in n for n in result.notes)


def _values(diffs):
    """Runs (arm, seed) x one summary, a reference and one arm whose differences are ``diffs``."""
    seeds = range(1, len(diffs) + 1)
    ref = 0.5 + 0.01 * np.arange(len(diffs))
    index = pd.MultiIndex.from_product([["ref", "arm"], seeds], names=["arm", "seed"])
    return pd.DataFrame({"domain_balanced": np.concatenate([ref, ref + np.asarray(diffs)])}, index=index)


def _compare(diffs, **analysis):
    cfg = parse_config(
        {
            "experiment": "x",
            "comparisons": [{"family": "f", "reference": "ref", "arms": ["arm"]}],
            "analysis": {"resamples": 500, "ci_methods": ["t", "percentile"], **analysis},
        }
    )
    return paired.compare(_values(diffs), cfg.comparisons, cfg.settings, levels={"domain_balanced": "summary"})


def test_three_seeds_show_the_sign_flip_interval_unbounded_and_the_t_interval_in_its_own_column():
    # DataFlex-RL's maxvar: 3 seeds, a spread of 1.4 points, reported "equivalent" by e2d0814; before, the
    # unbounded sign-flip interval was replaced by this t interval in the sign_flip column (issue 26)
    diffs = np.array([-0.0199, 0.0074, -0.0003])
    table, notes = _compare(diffs)
    first = table[table["ci_method"] == intervals.FIRST_METHOD].iloc[0]
    t_row = table[table["ci_method"] == "t"].iloc[0]
    expected = stats.t.interval(0.95, 2, loc=diffs.mean(), scale=diffs.std(ddof=1) / np.sqrt(3))
    assert [first["ci_low"], first["ci_high"]] == [-np.inf, np.inf]
    assert [t_row["ci_low"], t_row["ci_high"]] == pytest.approx(expected) and t_row["note"] == ""
    assert first["note"] == "unbounded: with 3 seeds the exact test cannot reject at 0.05"
    assert [first["decision_low"], first["decision_high"]] == [-np.inf, np.inf]
    shown = tables.comparison_display(table).iloc[0]
    assert shown["95% CI sign_flip"] == "unbounded" and shown["95% CI t"].startswith("[-3.")
    assert shown[tables.DECISION_COLUMN] == "unbounded (95%)"
    assert not first["equivalent"] and not first["equivalence_attainable"] and np.isinf(first["eq_high"])
    assert tables.comparison_display(table)["equiv. ±1"].tolist() == ["not attainable with 3 seeds"]
    assert tables.verdicts(table.iloc[:1]).tolist() == ["inconclusive"]
    assert any("equivalence within ±1 point(s) is not attainable" in n for n in notes)
    assert any("its interval is shown as unbounded" in n for n in notes)
    assert any("percentile interval(s) are too narrow" in n for n in notes)
    # the t-TOST option can say yes or no with 3 seeds, and equals statsmodels
    table, _ = _compare(diffs, equivalence_test="t")
    ref = 0.5 + 0.01 * np.arange(3)
    assert table["p_equivalence"].iloc[0] == pytest.approx(ttost_paired(ref + diffs, ref, -0.01, 0.01)[0])
    assert (table["equivalence_method"] == "t").all() and table["equivalence_attainable"].all()


def test_the_sign_flip_tost_declares_equivalence_with_enough_seeds():
    diffs = np.array([0.001, -0.002, 0.0015, 0.0, -0.001, 0.002, 0.0005, -0.0005])
    table, _ = _compare(diffs)
    first = table[table["ci_method"] == intervals.FIRST_METHOD].iloc[0]
    assert first["equivalent"] and first["p_equivalence"] == pytest.approx(1 / 256)  # all |d| well inside
    assert -0.01 < first["eq_low"] < first["eq_high"] < 0.01
    assert tables.verdicts(table.iloc[:1]).tolist() == ["equivalent"]
    # every interval-method row carries the comparison's one verdict
    assert table.groupby("measure")[["equivalent", "p_value", "p_holm"]].nunique().eq(1).all().all()


@pytest.mark.filterwarnings("error")
def test_constant_scores_rank_with_a_note_and_no_scipy_warning():
    scores = synthetic_scores(
        arms=["ref", "shifted", "other"],
        seeds=range(1, 4),
        benchmarks=BENCHMARKS,
        items=None,
        experiment="demo",
        rng=np.random.default_rng(1),
    )
    scores.loc[scores["benchmark"] == "c", "score"] = 0.5  # the logic domain: every arm the same
    cfg = _config(subsets={"logic": ["c"]}, rankings={"all": ["ref", "shifted", "other"]})
    result = pipeline.run_analysis(cfg, scores)
    logic = result.correlations[
        (result.correlations["summary_a"] == "logic") | (result.correlations["summary_b"] == "logic")
    ]
    assert len(logic) and logic[["spearman", "kendall"]].isna().all().all()
    assert logic["note"].str.contains("all arms have the same mean under logic").all()
    others = result.correlations.drop(logic.index)
    assert others[["spearman", "kendall"]].notna().all().all() and (others["note"] == "").all()
    assert "| — | — |" in tables.report_markdown(result)


def test_rankings_follow_the_config_and_unknown_arms_are_an_error():
    scores = _per_benchmark_scores()
    result = pipeline.run_analysis(_config(rankings={"all": ["ref", "shifted", "other"]}), scores)
    top = result.rankings[(result.rankings["summary"] == "flat") & (result.rankings["rank"] == 1)]
    assert top["arm"].tolist() == ["shifted"]
    assert set(result.correlations["ranking"]) == {"all"}
    with pytest.raises(AnalysisInputError, match=r"analysis.rankings: arm\(s\) \['ghost'\] have no scores"):
        pipeline.run_analysis(_config(rankings={"r": ["ref", "ghost"]}), scores)


@pytest.mark.parametrize(
    "benchmarks, twins",
    [
        ({"gsm8k": "math"}, "flat = domain_balanced; gsm8k = domain_balanced"),  # one benchmark: three names
        ({"a": "math", "b": "math", "c": "logic", "d": "logic"}, "flat = domain_balanced"),  # balanced domains
    ],
)
def test_a_measure_under_two_names_is_tested_and_shown_once(benchmarks, twins):
    scores = synthetic_scores(
        arms=["ref", "shifted", "other"],
        seeds=range(1, 9),
        benchmarks=benchmarks,
        items=20,
        experiment="demo",
        rng=np.random.default_rng(5),
        effects={"shifted": 0.3},
    )
    result = pipeline.run_analysis(_config(), scores)
    first = result.comparisons[result.comparisons["ci_method"] == intervals.FIRST_METHOD]
    measures = list(dict.fromkeys(first["measure"]))
    assert "flat" not in measures and measures[0] == "domain_balanced"
    assert (
        f"Same measure under another name, tested and shown once: {twins} (they weigh the benchmarks identically)."
        in (result.notes)
    )
    # the secondary Holm family counts each measure once: 2 arms x its distinct secondary measures
    secondary = first[first["stage"] == "secondary"]
    assert len(secondary) == 2 * (len(measures) - 1)
    assert "flat" in result.summaries.columns  # summaries.csv still has every name
    markdown = tables.comparisons_markdown(result.comparisons)
    assert markdown.count("| shifted |") == len(measures)
