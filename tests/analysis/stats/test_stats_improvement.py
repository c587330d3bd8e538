"""Paired probability of improvement and performance profiles against rliable's definitions and by hand.

rliable (Agarwal et al. 2021; rliable/metrics.py, rliable/library.py) is written out here from its published
definitions, without importing it: ``probability_of_improvement`` is, per task, scipy's Mann-Whitney U of X over Y
divided by n_x n_y (0.5 when the two are equal), averaged over tasks; ``run_score_deviation(scores, tau)`` is
``mean(scores > tau)``.
"""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from armlab.analysis.comparisons import improvement, profiles
from armlab.analysis.config import Comparison, parse_config


def rliable_probability_of_improvement(x, y):
    per_task = []
    for task in range(x.shape[1]):
        if np.array_equal(x[:, task], y[:, task]):
            per_task.append(0.5)
        else:
            u = stats.mannwhitneyu(x[:, task], y[:, task], alternative="greater").statistic
            per_task.append(u / (len(x) * len(y)))
    return np.mean(per_task)


def _settings(**analysis):
    return parse_config(
        {
            "experiment": "x",
            "comparisons": [{"family": "f", "reference": "ref", "arms": ["arm"]}],
            "analysis": {"resamples": 2000, **analysis},
        }
    ).settings


def _accuracy(arm, ref):
    """Runs (arm, seed) x benchmarks from two seeds x benchmarks arrays."""
    seeds = range(1, len(arm) + 1)
    index = pd.MultiIndex.from_product([["ref", "arm"], seeds], names=["arm", "seed"])
    return pd.DataFrame(np.vstack([ref, arm]), index=index, columns=[f"b{j}" for j in range(arm.shape[1])])


def test_seed_wins_count_ties_as_half():
    diffs = np.array([[0.1, 0.0, -0.2, 0.3], [0.0, 0.0, 0.0, 0.0]])
    assert improvement.seed_wins(diffs).tolist() == [(1 + 0.5 + 0 + 1) / 4, 0.5]


def test_the_paired_probability_is_the_diagonal_of_rliables_run_by_run_table():
    rng = np.random.default_rng(0)
    x, y = np.round(rng.uniform(size=(5, 4)), 1), np.round(rng.uniform(size=(5, 4)), 1)  # rounding makes ties
    beats = (x[:, None, :] > y[None, :, :]) + 0.5 * (x[:, None, :] == y[None, :, :])  # runs of X x runs of Y x tasks
    # the table is rliable's: its mean over all run pairs is the unpaired probability
    assert beats.mean() == pytest.approx(rliable_probability_of_improvement(x, y))
    paired = improvement.seed_wins(x - y).mean()
    assert paired == pytest.approx(np.mean([np.diag(beats[:, :, t]).mean() for t in range(4)]))
    # with one run per algorithm the two coincide (rliable's own 4 x 2 and 3 x 2 test arrays, first runs)
    for a, b in (([1.0, 2.0], [1.0, 1.0]), ([2.0, 1.0], [3.0, 3.0]), ([1.0, 1.0], [1.0, 1.0])):
        a, b = np.array([a]), np.array([b])
        assert improvement.seed_wins(a - b).mean() == rliable_probability_of_improvement(a, b)


def test_table_rows_have_the_hand_probability_and_hartigans_interval():
    # 8 seeds x 2 benchmarks, the arm ahead or tied everywhere
    diffs = np.array([[0.1, 0.2], [0.3, 0.1], [0.1, 0.0], [0.2, 0.2], [0.1, 0.0], [0.2, 0.1], [0.4, 0.1], [0.0, 0.1]])
    ref = np.full_like(diffs, 0.4)
    w = improvement.seed_wins(diffs)
    assert w.tolist() == [1, 1, 0.75, 1, 0.75, 1, 1, 0.75]
    table = improvement.probability_of_improvement(
        _accuracy(ref + diffs, ref), [Comparison("f", "ref", ("arm",))], _settings(ci_methods=["t"])
    )
    assert list(table.columns) == improvement.COLUMNS and table["ci_method"].tolist() == ["sign_flip", "t"]
    first = table.iloc[0]
    assert first["probability"] == pytest.approx(w.mean()) and (first["n_seeds"], first["n_benchmarks"]) == (8, 2)
    assert first["p_value"] == 2 / 256  # every seed above 1/2: the smallest two-sided exact p
    # the sign-flip interval for the mean of w: the 6th smallest and 6th largest of the 255 subset means
    # (floor(0.025 x 256) = 6; Hartigan 1969), enumerated here by brute force
    means = sorted(np.mean(w[list(s)]) for r in range(1, 9) for s in itertools.combinations(range(8), r))
    assert [first["ci_low"], first["ci_high"]] == pytest.approx([means[5], means[-6]])
    t_row = table.iloc[1]
    t_ci = stats.t.interval(0.95, 7, loc=w.mean(), scale=w.std(ddof=1) / np.sqrt(8))
    assert [t_row["ci_low"], t_row["ci_high"]] == pytest.approx([t_ci[0], min(t_ci[1], 1.0)])
    assert t_row["ci_high"] == 1.0  # clipped: a probability is at most 1


def test_profiles_are_rliables_score_distribution_with_a_bootstrap_band_over_seeds():
    rng = np.random.default_rng(3)
    scores = np.round(rng.uniform(size=(4, 5)), 2)  # seeds x benchmarks
    accuracy = _accuracy(scores, scores[::-1])
    settings = _settings()
    table = profiles.performance_profiles(accuracy, ["arm"], settings, thresholds=np.array([0.0, 0.3, 0.5, 0.99]))
    assert list(table.columns) == profiles.COLUMNS
    np.testing.assert_allclose(table["fraction"], [np.mean(scores > tau) for tau in (0.0, 0.3, 0.5, 0.99)])
    # the band: percentile interval of the profile over resampled seeds, drawn by index with the comparisons'
    # generator for 4 seeds and quantiles by numpy (not the count matrix and histogram selection of the code)
    idx = np.random.default_rng([0, 4, 0]).integers(0, 4, (2000, 4))
    per_seed = (scores[:, :, None] > np.array([0.0, 0.3, 0.5, 0.99])).mean(axis=1)  # seeds x thresholds
    boot = per_seed[idx].mean(axis=1)  # resamples x thresholds
    np.testing.assert_allclose(table[["ci_low", "ci_high"]], np.quantile(boot, [0.025, 0.975], axis=0).T, atol=1e-12)
    assert (table["n_seeds"] == 4).all() and (table["ci_method"] == "percentile").all()
