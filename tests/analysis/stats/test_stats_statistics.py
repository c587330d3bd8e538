"""Per-run statistics (the registry) against rliable's definitions, and how the analysis compares and ranks them.

rliable's aggregates (Agarwal et al. 2021; rliable/metrics.py) are written out here from their published
definitions, without importing rliable: ``aggregate_iqm(scores) = scipy.stats.trim_mean(scores, 0.25, axis=None)``
and ``aggregate_optimality_gap(scores, gamma) = gamma - mean(minimum(scores, gamma))``.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from armlab.analysis import pipeline, tables
from armlab.analysis.config import parse_config
from armlab.analysis.design.synthetic import synthetic_scores
from armlab.analysis.stats import statistics

# rliable's own test matrix (tests/rliable/metrics_test.py), runs x tasks, and an 8-benchmark run by hand
RLIABLE_X = np.array([[1, 2], [2, 2], [1, 1], [2, 1]], dtype=float)
EIGHT = np.array([[0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.6, 0.4]])


def rliable_iqm(scores):
    return stats.trim_mean(scores, proportiontocut=0.25, axis=None)


def rliable_optimality_gap(scores, gamma=1):
    return gamma - np.mean(np.minimum(scores, gamma))


def test_iqm_of_a_run_is_rliables_on_that_run_alone():
    # eight benchmarks: drop the two lowest (0.1, 0.2) and two highest (0.7, 0.9): mean(0.3, 0.4, 0.5, 0.6)
    assert statistics.interquartile_mean(EIGHT) == pytest.approx([0.45])
    rng = np.random.default_rng(0)
    for runs in (RLIABLE_X, EIGHT, rng.uniform(size=(5, 6)), rng.uniform(size=(3, 13)), rng.uniform(size=(2, 3))):
        expected = [rliable_iqm(run[None]) for run in runs]
        np.testing.assert_allclose(statistics.interquartile_mean(runs), expected, rtol=0, atol=1e-15)
    # rliable pools runs x tasks before trimming; armlab trims each run, so the two differ in general
    pooled = np.array([[0.0, 0.1, 0.2, 0.3], [0.7, 0.8, 0.9, 1.0]])
    assert statistics.interquartile_mean(pooled).mean() == pytest.approx(0.5)
    assert rliable_iqm(pooled) == pytest.approx(0.5)
    skewed = np.array([[0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    assert statistics.interquartile_mean(skewed).tolist() == [0.0, 1.0] and rliable_iqm(skewed) == 0.75


def test_optimality_gap_averages_over_seeds_to_rliables_over_all_runs_and_tasks():
    runs = np.array([[0.95, 0.5, 0.2], [0.4, 1.0, 0.85]])
    # gamma 0.9: shortfalls (0, 0.4, 0.7) and (0.5, 0, 0.05)
    np.testing.assert_allclose(statistics.optimality_gap(runs, gamma=0.9), [1.1 / 3, 0.55 / 3])
    for gamma in (1.0, 0.9, 0.5):
        got = statistics.optimality_gap(runs, gamma=gamma)
        assert got.mean() == pytest.approx(rliable_optimality_gap(runs, gamma))
        np.testing.assert_allclose(got, [rliable_optimality_gap(run[None], gamma) for run in runs])
    np.testing.assert_allclose(statistics.optimality_gap(runs), 1 - runs.mean(axis=1))  # gamma = 1: 1 - flat


@pytest.mark.parametrize("name", sorted(statistics.STATISTICS))
def test_every_registered_statistic_keeps_the_registry_contract(name):
    entry = statistics.STATISTICS[name]
    assert entry.function.__doc__.splitlines()[0].endswith(").")  # one line that names its source
    assert "rliable" in entry.function.__doc__.splitlines()[0]
    runs = pd.DataFrame(
        np.random.default_rng(1).uniform(size=(4, 6)),
        index=pd.MultiIndex.from_product([["a", "b"], [1, 2]], names=["arm", "seed"]),
    )
    chosen = {name: statistics.parameters(entry)}
    values = statistics.per_run(runs, chosen)
    assert list(values.columns) == [name] and values.index.equals(runs.index) and np.isfinite(values).all().all()
    # one run's value depends on that run only
    np.testing.assert_array_equal(statistics.per_run(runs.iloc[1:2], chosen), values.iloc[1:2])
    assert statistics.higher_is_better(chosen) == {name: entry.higher_is_better}


# domains of unequal size, so flat is not domain_balanced under another name (that one would be tested once)
BENCHMARKS = {"a": "math", "b": "math", "c": "logic", "d": "logic", "e": "science"}


def _analysis(**analysis):
    cfg = parse_config(
        {
            "experiment": "demo",
            "comparisons": [{"family": "f", "reference": "ref", "arms": ["up", "down"]}],
            "analysis": {"resamples": 500, **analysis},
        }
    )
    scores = synthetic_scores(
        arms=["ref", "up", "down"],
        seeds=range(1, 11),
        benchmarks=BENCHMARKS,
        items=None,
        experiment="demo",
        rng=np.random.default_rng(4),
        effects={"up": 0.8, "down": -0.8},
        seed_sd=0.3,
        run_sd=0.01,
    )
    return pipeline.run_analysis(cfg, scores)


@pytest.fixture(scope="module")
def with_statistics():
    return _analysis(statistics=["iqm", "optimality_gap"])


def test_statistics_are_secondary_measures_and_leave_every_other_number_alone(with_statistics):
    plain = _analysis().comparisons
    table = with_statistics.comparisons
    assert list(dict.fromkeys(table["measure"]))[:4] == ["domain_balanced", "flat", "iqm", "optimality_gap"]
    shared = table[table["measure"].isin(plain["measure"])].reset_index(drop=True)
    columns = ["measure", "arm", "ci_method", "mean_diff", "ci_low", "ci_high", "p_value", "sd_diff", "p_equivalence"]
    pd.testing.assert_frame_equal(shared[columns], plain[columns])
    stats_rows = table[table["measure"].isin(["iqm", "optimality_gap"])]
    assert (stats_rows["stage"] == "secondary").all() and (stats_rows["level"] == "summary").all()
    # secondary Holm is over the larger family now: 2 arms x (1 + 2 statistics + 5 benchmarks)
    first = table[table["ci_method"] == "sign_flip"]
    np.testing.assert_allclose(first.loc[first["stage"] == "secondary", "min_attainable_p"], 16 * 2 / 1024)


def test_a_lower_gap_is_better_and_with_gamma_one_it_mirrors_flat(with_statistics):
    first = with_statistics.comparisons.query("ci_method == 'sign_flip'").set_index(["arm", "measure"])
    gap, flat = first.loc["up", "optimality_gap"], first.loc["up", "flat"]
    assert gap["mean_diff"] == pytest.approx(-flat["mean_diff"]) and gap["p_value"] == flat["p_value"]
    assert not gap["higher_is_better"] and flat["higher_is_better"]
    assert first["reject"].all()  # ten seeds, clear effects both ways: the gate opens for every cell
    cells = first.loc[[("up", "flat"), ("up", "optimality_gap"), ("down", "flat"), ("down", "optimality_gap")]]
    assert tables.verdicts(cells).tolist() == ["better", "better", "worse", "worse"]
    per_run = with_statistics.summaries
    assert per_run["iqm"].to_numpy() == pytest.approx(statistics.interquartile_mean(with_statistics.accuracy))


def test_rankings_put_the_lowest_gap_first_and_correlate_in_the_same_direction(with_statistics):
    ranks = with_statistics.rankings.pivot(index="arm", columns="summary", values="rank")
    assert (ranks["optimality_gap"] == ranks["flat"]).all() and ranks["optimality_gap"].to_dict() == {
        "up": 1,
        "ref": 2,
        "down": 3,
    }
    corr = with_statistics.correlations.set_index(["summary_a", "summary_b"])
    assert corr.loc[("flat", "optimality_gap"), "spearman"] == pytest.approx(1.0)


def test_crossed_intervals_are_empty_for_statistics_that_are_not_weighted_means():
    cfg = parse_config(
        {
            "experiment": "demo",
            "comparisons": [{"family": "f", "reference": "ref", "arms": ["up"]}],
            "analysis": {
                "resamples": 200,
                "item_bootstrap": True,
                "statistics": ["iqm"],
                "crossed_methods": ["components", "percentile"],
            },
        }
    )
    scores = synthetic_scores(
        arms=["ref", "up"],
        seeds=range(1, 5),
        benchmarks=BENCHMARKS,
        items=6,
        experiment="demo",
        rng=np.random.default_rng(2),
    )
    result = pipeline.run_analysis(cfg, scores)
    crossed = result.comparisons[result.comparisons["ci_method"].str.startswith("crossed")].set_index("measure")
    assert crossed.loc["iqm", ["ci_low", "ci_high"]].isna().all().all()
    assert (crossed.loc["iqm", "note"] == "no crossed interval: not a weighted mean of benchmarks").all()
    assert crossed.drop(index="iqm")[["ci_low", "ci_high"]].notna().all().all()
    assert any("which iqm is not: its crossed rows are empty" in note for note in result.notes)
    shown = tables.comparison_display(result.comparisons.query("level == 'summary'")).set_index("measure")
    assert shown.loc["iqm", "95% CI crossed_components"] == "—"
