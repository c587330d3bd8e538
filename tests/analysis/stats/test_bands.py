"""Simultaneous inference over the steps of paired learning curves (analysis/stats/bands.py): each statistic against
an independent computation (scipy's t interval, a brute-force enumeration of sign patterns), and its error rates by
simulation with known truth at the seed counts users run."""

import itertools

import numpy as np
import pytest
from scipy import stats

from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.stats import bands
from armlab.analysis.stats.bands import max_t_sign_flip, t_band

STEPS = 8


def _curves(rng, reps, n, rho=0.7, heavy=False):
    """reps x n x STEPS paired differences around 0: AR(1) over steps with correlation rho, spread growing with the
    step (later checkpoints differ more), normal or t with 3 df."""
    t = np.arange(STEPS)
    chol = np.linalg.cholesky(rho ** np.abs(t[:, None] - t[None]))
    noise = rng.standard_t(3, (reps, n, STEPS)) / np.sqrt(3) if heavy else rng.standard_normal((reps, n, STEPS))
    return (noise @ chol.T) * (0.02 + 0.03 * t / STEPS)


def test_the_band_is_scipys_paired_t_interval_at_the_bonferroni_level():
    d = np.random.default_rng(0).normal(0.01, 0.02, (5, STEPS))
    low, high = t_band(d, 0.95)
    for step in range(STEPS):
        ci = stats.ttest_1samp(d[:, step], 0).confidence_interval(1 - 0.05 / STEPS)
        assert low[step] == pytest.approx(ci.low, rel=1e-12) and high[step] == pytest.approx(ci.high, rel=1e-12)


@pytest.mark.parametrize("n", [3, 5, 8, 12])
@pytest.mark.parametrize("rho, heavy", [(0.7, False), (0.0, False), (0.7, True)])
def test_the_band_covers_the_whole_true_curve_at_its_level(n, rho, heavy):
    """Coverage of all 8 steps at once, 4000 replicates (Monte-Carlo sd 0.0034): at least 0.95 - 3 sd. The band
    without its Bonferroni step, per-step 95% intervals, covers all 8 steps in only 0.55-0.80 of the replicates,
    which the same bound refuses (checked here too)."""
    rng = np.random.default_rng(n)
    truth = 0.05 * (1 - np.exp(-np.arange(STEPS) / 3))
    diffs = truth + _curves(rng, 4000, n, rho, heavy)
    low, high = t_band(diffs, 0.95)
    assert np.all((low <= truth) & (truth <= high), axis=1).mean() >= 0.95 - 3 * 0.0034
    low, high = (
        np.hstack([t_band(diffs[:, :, [s]], 0.95)[0] for s in range(STEPS)]),
        np.hstack([t_band(diffs[:, :, [s]], 0.95)[1] for s in range(STEPS)]),
    )  # one step at a time: no Bonferroni, pointwise intervals
    assert np.all((low <= truth) & (truth <= high), axis=1).mean() < 0.95 - 3 * 0.0034


def _max_t_by_enumeration(d):
    """The adjusted p of each step, straight from the definition: every sign pattern, studentized |t| per step."""
    n = len(d)

    def t_stats(x):
        sd = x.std(axis=0, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(np.where(sd > 0, x.mean(axis=0) / (sd / np.sqrt(n)), np.inf))

    observed = t_stats(d)
    maxima = [t_stats(np.array(signs)[:, None] * d).max() for signs in itertools.product([1, -1], repeat=n)]
    return np.array([np.mean([m >= o * (1 - 1e-12) for m in maxima]) for o in observed])


@pytest.mark.parametrize("n", [2, 3, 5, 7])
def test_the_max_t_p_values_equal_a_brute_force_enumeration_of_studentized_statistics(n):
    rng = np.random.default_rng(n)
    d = rng.normal(0.01, 0.02, (n, 5)) + np.array([0, 0, 0.02, 0.04, 0.0])
    np.testing.assert_allclose(max_t_sign_flip(d), _max_t_by_enumeration(d), rtol=0, atol=1e-12)


def test_drawn_patterns_approximate_the_enumeration_and_count_the_observed_one():
    rng = np.random.default_rng(3)
    d = rng.normal(0.01, 0.02, (12, 6))
    exact = max_t_sign_flip(d)
    drawn = max_t_sign_flip(d, max_exact=8, resamples=40_000, rng=np.random.default_rng(0))
    assert np.abs(drawn - exact).max() < 4 * np.sqrt(0.25 / 40_000) + 1 / 40_001
    assert drawn.min() >= 1 / 40_001  # the identity counts: p is never 0
    with pytest.raises(AnalysisInputError, match="need a generator"):
        max_t_sign_flip(d, max_exact=8)


def test_a_step_without_any_difference_gets_p_one_and_bad_input_is_refused():
    d = np.column_stack([np.zeros(4), [0.1, 0.2, 0.15, 0.12]])
    p = max_t_sign_flip(d)
    assert p[0] == 1 and p[1] == pytest.approx(2 / 16)
    for bad in (np.ones(4), np.ones((1, 3)), np.array([[0.1, np.nan], [0.2, 0.1]])):
        with pytest.raises(AnalysisInputError, match="curve differences"):
            t_band(bad, 0.95)


@pytest.mark.parametrize("n", [3, 5, 8, 12])
def test_the_max_t_test_holds_the_family_wise_error_over_steps(n):
    """Every step null, 2000 replicates: the share with any step's adjusted p <= 0.05 is at most 0.05 + 3 Monte-Carlo
    sd (0.0049). Unadjusted per-step sign-flip tests on the same data reject somewhere far more often at 5-12 seeds,
    which the bound refuses (below 6 seeds no sign-flip p can be <= 0.05: 2/32 is the smallest at 5)."""
    rng = np.random.default_rng(100 + n)
    diffs = _curves(rng, 2000, n, rho=0.5, heavy=True)
    any_rejected = [np.any(max_t_sign_flip(d) <= 0.05) for d in diffs]
    assert np.mean(any_rejected) <= 0.05 + 3 * 0.0049
    if n >= 8:
        unadjusted = [np.any([max_t_sign_flip(d[:, [s]])[0] <= 0.05 for s in range(STEPS)]) for d in diffs[:400]]
        assert np.mean(unadjusted) > 0.05 + 3 * 0.011


def test_the_max_t_test_finds_a_planted_difference_at_the_steps_that_have_it():
    """12 seeds, a difference of 3 spreads at steps 5-7 only: found there in most replicates, almost never elsewhere."""
    rng = np.random.default_rng(7)
    effect = np.where(np.arange(STEPS) >= 5, 0.1, 0.0)
    found = np.array([max_t_sign_flip(effect + d) <= 0.05 for d in _curves(rng, 300, 12, rho=0.5)])
    assert found[:, 5:].mean() > 0.8
    assert found[:, :5].any(axis=1).mean() <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 300)


@pytest.mark.parametrize("seed", range(6))
def test_discrete_differences_tie_as_the_enumeration_says(seed):
    """Accuracy differences are multiples of 1/items, so sums in another order tie up to rounding; the statistic
    must count those ties as reaching (without its tolerance, p differs from the enumeration on such data)."""
    rng = np.random.default_rng(seed)
    d = rng.integers(-3, 4, (6, 5)) / 300
    d[:, 0] = [1 / 300, 2 / 300, 3 / 300, -1 / 300, 4 / 300, 2 / 300]  # equal sums reached in several orders
    np.testing.assert_allclose(max_t_sign_flip(d), _max_t_by_enumeration(d), rtol=0, atol=1e-12)


def test_a_strong_effect_drawn_p_counts_exactly_the_patterns_that_reach_it():
    """Every seed ahead at every step: only the drawn patterns that flip all seeds or none reach the observed
    maximum, so p = (1 + their count) / (B + 1), counted here from the same generator's draws."""
    n, draws = 14, 20_000
    d = np.abs(np.random.default_rng(5).normal(0.05, 0.01, (n, 3)))
    p = max_t_sign_flip(d, max_exact=10, resamples=draws, rng=np.random.default_rng(9))
    flips = np.random.default_rng(9).random((draws, n)) < 0.5
    reaching = int((flips.all(axis=1) | ~flips.any(axis=1)).sum())
    assert p.min() == pytest.approx((1 + reaching) / (draws + 1), abs=1e-15)


@pytest.mark.parametrize("n, max_exact", [(8, 20), (9, 4)])
def test_the_patterns_in_many_small_blocks_give_the_p_values_of_one_block(monkeypatch, n, max_exact):
    """At 20 seeds the 2^20 patterns are evaluated a block at a time; blocks of 3 patterns (10 cells over 3 steps,
    the last block short) give the p-values of one block, exact and drawn alike; the blocks hold every pattern once."""
    diffs = np.random.default_rng(5).normal(0.3, 1.0, (n, 3))
    one_block = bands.max_t_sign_flip(diffs, max_exact=max_exact, resamples=999, rng=np.random.default_rng(1))
    monkeypatch.setattr(bands, "_BLOCK_CELLS", 10)
    blocks = bands.max_t_sign_flip(diffs, max_exact=max_exact, resamples=999, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(blocks, one_block)
    patterns = np.vstack(list(bands.sign_patterns(n, 20, 0, None, rows=3)))
    assert len(patterns) == 2**n and len(np.unique(patterns, axis=0)) == 2**n and (patterns[0] == 1).all()
