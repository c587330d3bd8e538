"""Simulations with known truth: Holm's family-wise error and interval coverage.

Sized to run in a few seconds; the long runs behind analysis/README.md come
from benchmarks/coverage_sim.py. Tolerances are stated as Monte-Carlo
standard deviations (sd) of the estimated rate.
"""

import numpy as np
import pytest

from analysis import resampling, synthetic

NORMAL = lambda rng, shape: rng.normal(size=shape)  # noqa: E731
HEAVY = lambda rng, shape: rng.standard_t(3, size=shape)  # noqa: E731


def _mc_sd(p, reps):
    return np.sqrt(p * (1 - p) / reps)


@pytest.mark.parametrize("draw", [NORMAL, HEAVY], ids=["normal", "t3"])
def test_holm_keeps_the_family_wise_error_under_alpha_under_a_global_null(draw):
    reps, alpha = 2000, 0.05
    rates = synthetic.null_family_rejections(draw, arms=5, seeds=12, replicates=reps, alpha=alpha,
                                             rng=np.random.default_rng(11))
    assert rates["fwer_holm"] <= alpha + 3 * _mc_sd(alpha, reps)  # 0.065
    # the simulation can see a missing correction: unadjusted, five tests reject far more often
    assert rates["fwer_unadjusted"] > 0.12
    # the exact test's size at 12 seeds is 102/2048 = 0.0498
    assert abs(rates["per_comparison"] - 102 / 2048) < 4 * _mc_sd(0.05, 5 * reps)


# Measured with 20,000 replicates x 10,000 resamples (benchmarks/coverage_sim.py, analysis/README.md).
DOCUMENTED = {("normal", "percentile"): 0.907, ("normal", "bca"): 0.904,
              ("t3", "percentile"): 0.903, ("t3", "bca"): 0.871}


@pytest.mark.parametrize("name, draw", [("normal", NORMAL), ("t3", HEAVY)])
def test_coverage_at_12_seeds_matches_the_documented_rate(name, draw):
    reps = 3000
    d = draw(np.random.default_rng(5), (reps, 12)) + 0.3  # true mean difference 0.3
    cover = synthetic.interval_coverage(d, 0.3, resamples=2000, confidence=0.95, rng=np.random.default_rng(6))
    for method, measured in cover.items():
        documented = DOCUMENTED[(name, method)]
        assert abs(measured - documented) < 4 * _mc_sd(documented, reps), (method, measured)
    # bootstrap intervals over 12 seeds are too narrow; the theory for the normal case says by how much
    if name == "normal":
        assert abs(cover["percentile"] - resampling.normal_theory_coverage(12, 0.95)) < 4 * _mc_sd(0.91, reps)


def test_crossed_interval_covers_the_population_mean_where_the_seed_interval_does_not():
    rng = np.random.default_rng(8)
    reps, seeds, items = 300, 12, 60
    d = (rng.normal(0, 0.1, (reps, 1, items)) + rng.normal(0, 0.01, (reps, seeds, 1))
         + rng.normal(0, 0.3, (reps, seeds, items)))
    seed_only = synthetic.interval_coverage(d.mean(axis=2), 0.0, resamples=1000, confidence=0.95, rng=rng)
    boot = resampling.crossed_bootstrap_means([d], rng, 1000)[:, :, 0]
    ci = resampling.bootstrap_intervals(boot, None, ["percentile"], (0.95,))[0]["percentile"][:, 0]
    crossed = np.mean((ci[:, 0] <= 0) & (ci[:, 1] >= 0))
    # item effects (sd 0.1 / sqrt(60)) dominate: seeds-only covers ~0.7, crossed >= 0.95
    assert seed_only["percentile"] < 0.85
    assert crossed > 0.93
