"""Power of the exact sign-flip test: closed forms, an independent simulation, and the MDE's promise."""

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from armlab.analysis.stats import power, resampling


def _mc_sd(p, reps):
    return np.sqrt(p * (1 - p) / reps)


def test_power_at_six_seeds_has_a_closed_form():
    # 6 seeds at 0.05: only the two all-same-sign patterns reject, so power = Phi(e)^6 + Phi(-e)^6
    e = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    closed = stats.norm.cdf(e) ** 6 + stats.norm.cdf(-e) ** 6
    ours = power.sign_flip_power(e, 6, 0.05, replicates=20_000)
    assert np.all(np.abs(ours - closed) < 4 * _mc_sd(closed, 20_000) + 1e-3)
    exact_mde = stats.norm.ppf(0.8 ** (1 / 6))  # the Phi(-e)^6 term is below 1e-9 there
    assert power.detectable_effect_sd(6, 0.05, 0.8, 20_000) == pytest.approx(exact_mde, rel=0.01)


@pytest.mark.parametrize("n, level", [(8, 0.0125), (12, 0.05), (10, 0.025)])
def test_power_matches_an_independent_simulation_of_the_test(n, level):
    e = power.detectable_effect_sd(n, level, 0.8)
    reps = 6000
    z = np.random.default_rng([7, n]).normal(size=(reps, n))
    rejected = np.mean(resampling.sign_flip_pvalue(z + e) <= level)
    # the promise: power 0.8 at the reported MDE (e2d0814's t-based MDE gave 0.61 at 8 seeds, level 0.0125)
    assert abs(rejected - 0.8) < 4 * _mc_sd(0.8, reps) + 4 * _mc_sd(0.8, 4000)


def test_e2d0814s_t_based_mde_is_too_optimistic_at_few_seeds():
    # the t-test reaches power 0.8 at a smaller effect than the sign-flip test that decides
    t_mde = TTestPower().solve_power(nobs=8, alpha=0.0125, power=0.8)
    assert power.sign_flip_power(t_mde, 8, 0.0125) < 0.7
    assert power.detectable_effect_sd(8, 0.0125, 0.8) > 1.1 * t_mde


def test_mde_is_infinite_where_the_test_cannot_reject_and_nan_without_spread():
    mde = power.minimum_detectable_effect(np.array([0.02, 0.02, 0.0, 0.02]), np.array([3, 5, 12, 12]), level=0.05)
    assert np.isinf(mde[:2]).all()  # 2/8 and 2/32 > 0.05
    assert np.isnan(mde[2])
    assert mde[3] == pytest.approx(0.02 * power.detectable_effect_sd(12, 0.05, 0.8))
    # a stricter Holm level needs a larger effect
    assert power.detectable_effect_sd(12, 0.05 / 4, 0.8) > power.detectable_effect_sd(12, 0.05, 0.8)


def test_a_curve_of_mdes_is_each_seed_counts_own_mde_and_beyond_the_range_statsmodels_t_test_mde():
    """minimum_detectable_effect searches the t-test's range for all cells at once; each cell equals the
    one-cell search (on either side of the simulated range), and statsmodels' solver of the t-test's power gives
    the same effect sizes."""
    paired, unpaired = np.array([6, 8, *range(15, 25)]), np.array([3, 4, 9, 10, 12])  # simulated, then t-test
    for seeds, level, n_reference in [(paired, 0.05 / 3, 0 * paired), (unpaired, 0.05, unpaired)]:
        curve = power.minimum_detectable_effect(0.02, seeds, level=level, n_reference=n_reference)
        one_by_one = [
            0.02 * power.detectable_effect_sd(n, level, 0.8, n_reference=r) for n, r in zip(seeds, n_reference)
        ]
        assert np.array_equal(curve, one_by_one)
    beyond = np.arange(15, 41)
    solved = [TTestPower().solve_power(nobs=int(n), alpha=0.01, power=0.8) for n in beyond]
    assert power.minimum_detectable_effect(1.0, beyond, level=0.01) == pytest.approx(solved, rel=1e-4)


def test_beyond_the_simulated_range_the_t_test_power_is_used():
    e = power.detectable_effect_sd(20, 0.05, 0.8)
    assert power.t_power(e, 20, 0.05) == pytest.approx(0.8, abs=1e-6)
    # and the simulated power at the edge of the range is within 0.02 of the t-test's
    edge = power.detectable_effect_sd(14, 0.05, 0.8)
    assert abs(power.t_power(edge, 14, 0.05) - 0.8) < 0.02


def test_seeds_needed_is_the_fewest_seeds_with_enough_sign_flip_power():
    sds, effect, level = np.array([0.0, 0.004, 0.008, 0.03]), 0.01, 0.05 / 4
    needed = power.seeds_needed(effect, sds, level=level)
    assert np.isnan(needed[0])
    for sd, n in zip(sds[1:3], needed[1:3]):  # found in the simulated range: a plain loop agrees
        ok = [
            resampling.min_sign_flip_pvalue(m) <= level and power.sign_flip_power(effect / sd, m, level) >= 0.8
            for m in range(2, int(n) + 1)
        ]
        assert ok[-1] and not any(ok[:-1])
    # beyond it: the t-test's answer
    assert needed[3] > power.SIMULATED_MAX_SEEDS
    n = int(needed[3])
    assert power.t_power(effect / 0.03, n, level) >= 0.8 > power.t_power(effect / 0.03, n - 1, level)
    # a huge effect still needs 2/2^n <= level: 8 seeds at 0.0125
    assert power.seeds_needed(1.0, np.array([0.01]), level=level)[0] == 8


def test_seeds_needed_rows_are_independent_of_each_other():
    sds = np.array([0.0, 0.002, 0.01, 0.05])
    levels = np.array([0.05, 0.025, 0.05, 0.025])
    together = power.seeds_needed(0.01, sds, level=levels)
    for i in range(len(sds)):
        alone = power.seeds_needed(0.01, sds[i : i + 1], level=levels[i : i + 1])[0]
        assert np.isnan(alone) and np.isnan(together[i]) or alone == together[i]


def test_seeds_needed_takes_a_scalar_sd_as_its_docstring_allows():
    # before: TypeError ('numpy.bool' object does not support item assignment)
    alone = power.seeds_needed(0.02, 0.01, level=0.05)
    assert np.shape(alone) == () and alone == power.seeds_needed(0.02, np.array([0.01]), level=0.05)[0]
    grid = power.seeds_needed(0.02, np.array([[0.01], [0.03]]), level=np.array([0.05, 0.025]))
    assert grid.shape == (2, 2) and grid[0, 0] == alone


def test_sd_interval_is_the_chi_square_interval_and_covers_for_normal_differences():
    low, high = power.sd_interval(1.0, 3, 0.95)
    assert low == pytest.approx(np.sqrt(2 / stats.chi2.ppf(0.975, 2)))
    assert high == pytest.approx(np.sqrt(2 / stats.chi2.ppf(0.025, 2)))  # 6.3 x the observed sd at 3 seeds
    z = np.random.default_rng(2).normal(size=(20_000, 5))
    low, high = power.sd_interval(z.std(axis=1, ddof=1), 5, 0.95)
    assert abs(np.mean((low <= 1) & (1 <= high)) - 0.95) < 4 * _mc_sd(0.95, 20_000)


@pytest.mark.parametrize("n", [3, 7, 12, 14])
def test_the_simulated_lower_ends_are_the_sign_flip_intervals_of_the_same_draws(n):
    """One enumeration of each replicate's extreme subset means serves every level: the draws equal those of
    sign_flip's own interval on the same normal samples, at Holm levels within what is kept, beyond it (0.2), and
    where the test cannot reject (every end -inf)."""
    replicates = 500
    z = np.random.default_rng([0, n, replicates]).normal(size=(replicates, n))
    for level in (0.05, 0.05 / 3, 0.05 / 7, 0.2):
        ci = resampling.sign_flip(z, confidence=1 - level, max_exact=power.SIMULATED_MAX_SEEDS)["ci"]
        expected = np.sort(np.concatenate([ci[:, 0], -ci[:, 1]]))
        np.testing.assert_array_equal(power._lower_ends(n, level, replicates, 0), expected)
