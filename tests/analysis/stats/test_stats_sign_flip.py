"""The exact sign-flip test's interval and TOST: against scipy's permutation test, enumeration by hand and theory."""

import itertools

import numpy as np
import pytest
from scipy import stats

from armlab.analysis.stats import resampling


def _subset_means_by_hand(d):
    """All 2^n - 1 non-empty subset means, by itertools."""
    return sorted(np.mean(c) for size in range(1, len(d) + 1) for c in itertools.combinations(d, size))


def _scipy_p(d, alternative="two-sided"):
    return stats.permutation_test(
        (d,), np.mean, permutation_type="samples", n_resamples=np.inf, vectorized=True, alternative=alternative
    ).pvalue


def test_the_interval_is_hartigans_between_ordered_subset_means():
    rng = np.random.default_rng(3)
    for n in (6, 7, 8, 9):
        d = rng.normal(0.2, 1, n)
        means = _subset_means_by_hand(d)
        k = int(np.floor(0.025 * 2**n))  # 95%: rank floor(alpha 2^(n-1))
        ci = resampling.sign_flip(d, confidence=0.95)["ci"][0]
        assert ci == pytest.approx([means[k - 1], means[-k]], abs=1e-12)
    # 6 seeds at 95%: k = 1, the interval from the smallest to the largest difference
    d = np.array([0.3, -0.1, 0.5, 0.2, 0.9, 0.05])
    assert resampling.sign_flip(d, confidence=0.95)["ci"][0] == pytest.approx([-0.1, 0.9])


@pytest.mark.parametrize("n", [6, 8, 10])
def test_the_interval_inverts_scipys_permutation_test(n):
    # just outside each end the two-sided test rejects at 0.05, just inside it does not
    rng = np.random.default_rng(n)
    for d in rng.normal(0.3, 1, (4, n)):
        low, high = resampling.sign_flip(d, confidence=0.95)["ci"][0]
        eps = 1e-7
        assert _scipy_p(d - (low - eps)) <= 0.05 < _scipy_p(d - (low + eps))
        assert _scipy_p(d - (high + eps)) <= 0.05 < _scipy_p(d - (high - eps))


def test_the_interval_excludes_zero_exactly_when_p_is_at_most_the_level_even_with_ties():
    rng = np.random.default_rng(11)
    for n in range(6, 13):
        # dyadic and rounded values make many subset means equal to 0 up to float rounding
        d = np.concatenate(
            [np.round(rng.normal(0.3, 1, (200, n)) * 4) / 4, np.round(rng.normal(0.1, 0.05, (200, n)), 2)]
        )
        found = resampling.sign_flip(d, confidence=0.95)
        excludes = (found["ci"][:, 0] > 0) | (found["ci"][:, 1] < 0)
        assert (excludes == (found["p_value"] <= 0.05)).all()
        assert 0 < excludes.sum() < len(d)  # both outcomes occur


def test_no_data_can_bound_the_interval_below_the_tests_reach():
    # 5 seeds: the smallest two-sided p is 2/32 > 0.05; a 90% interval is bounded (2/32 <= 0.1)
    d = np.array([[1.0, 2.0, 3.0, 4.0, 5.0]])
    assert np.isinf(resampling.sign_flip(d, confidence=0.95)["ci"]).all()
    assert resampling.sign_flip(d, confidence=0.90)["ci"][0] == pytest.approx([1.0, 5.0])


def test_p_values_equal_scipy_and_the_share_of_patterns_by_hand():
    rng = np.random.default_rng(0)
    for n in range(2, 11):
        d = np.round(rng.normal(0.3, 1, (6, n)), 1)
        ours = resampling.sign_flip_pvalue(d)
        for row, p in zip(d, ours):
            observed = abs(row.sum())
            sums = [abs(np.dot(s, row)) for s in itertools.product([1, -1], repeat=n)]
            assert p == pytest.approx(sum(v >= observed - 1e-12 for v in sums) / 2**n, abs=1e-15)
            assert p == pytest.approx(_scipy_p(row), abs=1e-12)


def test_tost_is_the_larger_of_two_one_sided_permutation_tests():
    rng = np.random.default_rng(5)
    margin = 0.5
    for n in (5, 7, 9):
        for d in rng.normal(0.1, 0.4, (4, n)):
            found = resampling.sign_flip(d, alpha=0.05, margin=margin)
            by_scipy = max(_scipy_p(d + margin, "greater"), _scipy_p(d - margin, "less"))
            assert found["p_equivalence"][0] == pytest.approx(by_scipy, abs=1e-12)
            inside = (found["eq"][0, 0] > -margin) & (found["eq"][0, 1] < margin)
            assert inside == (found["p_equivalence"][0] <= 0.05)


def test_tost_is_not_attainable_below_five_seeds_at_alpha_005():
    # one-sided smallest p is 1/2^n: 1/16 > 0.05 at 4 seeds, 1/32 <= 0.05 at 5
    tiny = np.full((1, 4), 1e-6) + np.array([0.0, 1e-7, -1e-7, 2e-7])
    four = resampling.sign_flip(tiny, alpha=0.05, margin=0.01)
    assert not four["equivalence_attainable"][0] and four["p_equivalence"][0] == 1 / 16
    assert np.isinf(four["eq"]).all()
    five = resampling.sign_flip(np.append(tiny, 0.0)[None], alpha=0.05, margin=0.01)
    assert five["equivalence_attainable"][0] and five["p_equivalence"][0] == 1 / 32


def test_coverage_is_one_minus_2k_over_2n_for_symmetric_differences():
    # Hartigan: each of the 2^n gaps between ordered subset means holds the centre with probability 1/2^n
    rng = np.random.default_rng(9)
    reps = 20_000
    for n, draw in ((6, rng.standard_t(3, (reps, 6))), (8, rng.laplace(size=(reps, 8)))):
        ci = resampling.sign_flip(draw, confidence=0.95)["ci"]
        k = int(np.floor(0.025 * 2**n))
        expected = 1 - 2 * k / 2**n  # 0.969 at 6 seeds, 0.953 at 8
        measured = np.mean((ci[:, 0] <= 0) & (0 <= ci[:, 1]))
        assert abs(measured - expected) < 4 * np.sqrt(expected * (1 - expected) / reps)


def test_monte_carlo_beyond_the_exact_limit_agrees_with_enumeration():
    rng = np.random.default_rng(4)
    d = rng.normal(0.25, 1, (3, 16))
    exact = resampling.sign_flip(d, confidence=0.95, alpha=0.05, margin=0.3, max_exact=16)
    mc = resampling.sign_flip(
        d, confidence=0.95, alpha=0.05, margin=0.3, max_exact=15, resamples=200_000, rng=np.random.default_rng(9)
    )
    sd_p = np.sqrt(exact["p_value"] * (1 - exact["p_value"]) / 200_000)
    assert np.all(np.abs(mc["p_value"] - exact["p_value"]) < 5 * sd_p + 1e-5)
    # the interval's ends are order statistics of subset means; a few thousandths of an sd apart
    assert mc["ci"] == pytest.approx(exact["ci"], abs=0.02)
    # the (b + 1) / (B + 1) correction: no random pattern reaches an all-positive sum; two-sided = 2 x
    clear = resampling.sign_flip_pvalue(np.ones(30), max_exact=20, resamples=999, rng=np.random.default_rng(0))
    assert clear[0] == pytest.approx(2 / 1000)
    assert resampling.min_sign_flip_pvalue(30, max_exact=20, resamples=999) == pytest.approx(2 / 1000)


def test_rows_are_independent_of_each_other_and_of_the_block_size(monkeypatch):
    d = np.random.default_rng(1).normal(size=(7, 9))
    together = resampling.sign_flip(d, confidence=0.95, alpha=0.05, margin=0.2)
    monkeypatch.setattr(resampling, "_BLOCK_CELLS", 600)  # one row per block at 9 seeds
    for i, row in enumerate(d):
        alone = resampling.sign_flip(row, confidence=0.95, alpha=0.05, margin=0.2)
        for key in ("p_value", "ci", "p_equivalence", "eq"):
            np.testing.assert_array_equal(alone[key][0], together[key][i])


def test_rank_of_the_order_statistic():
    assert resampling.sign_flip_rank(5, 0.025) == 0  # unbounded at 95% with 5 seeds
    assert resampling.sign_flip_rank(6, 0.025) == 1
    assert resampling.sign_flip_rank(12, 0.025) == 102  # floor(0.025 * 4096)
    np.testing.assert_array_equal(resampling.sign_flip_rank(np.array([4, 5]), 0.05), [0, 1])


def test_order_statistics_from_a_sampled_bound_are_those_of_a_full_sort():
    """Where k is small against the row, the k-th smallest and largest come from the values below a bound drawn
    from a sample of the row's columns: the same values as sorting the row, with ties, infinities and NaN (sorted
    last), at ranks on both sides of the point where the bound stops paying, and in rows built so that the sample
    holds the row's smallest (or largest) values, which lets too few through and makes the row be sorted whole."""
    rng = np.random.default_rng(12)
    count = 4095
    rows = np.concatenate([rng.normal(size=(6, count)), rng.integers(-3, 4, size=(4, count)).astype(float)])
    rows[1, 7], rows[2, 100], rows[3, 5] = np.inf, -np.inf, np.nan
    k = 34  # one column in 30 sampled (count // (4 k))
    sampled = np.unique(np.random.default_rng(count).integers(0, count, count // 30))  # the columns sampled
    adversarial = np.tile(np.arange(count, dtype=float), (2, 1))
    adversarial[0, sampled] = -1.0 - np.arange(len(sampled))  # the sample holds the smallest values
    adversarial[1, sampled] = count + np.arange(len(sampled))  # and here the largest
    rows = np.concatenate([rows, adversarial])
    ordered = np.sort(rows, axis=1)
    for rank in (1, 2, k, 200, 256, 1500):
        smallest, largest = resampling._order_statistics(rows.copy(), [rank])[rank]
        np.testing.assert_array_equal(smallest, ordered[:, rank - 1])
        np.testing.assert_array_equal(largest, ordered[:, count - rank])


@pytest.mark.parametrize("bound_fails", [False, True])
def test_extreme_subset_means_are_the_ends_of_every_subset_mean_sorted(bound_fails, monkeypatch):
    """The k smallest (increasing) and k largest (decreasing) of the 2^n - 1 subset means, by itertools, for k from
    1 to all of them, with ties (integer differences), also where every row's sampled bound lets too few through
    (the rows are then taken whole); a k outside them is refused in one line."""
    if bound_fails:
        below = resampling._below_a_bound

        def failing(means, k, sign):
            found = below(means, k, sign)  # as if nothing had passed: only the whole rows can give the answer
            return None if found is None else (np.full_like(found[0], np.inf), np.ones(len(means), dtype=bool))

        monkeypatch.setattr(resampling, "_below_a_bound", failing)
    rng = np.random.default_rng(4)
    for n in (1, 5, 8, 10):
        rows = np.concatenate([rng.normal(size=(3, n)), rng.integers(-2, 3, size=(2, n)).astype(float)])
        by_hand = np.array([_subset_means_by_hand(d) for d in rows])
        for k in sorted({1, 2**n // 16, 2**n // 3, 2**n - 1} - {0}):
            smallest, largest, scale = resampling.extreme_subset_means(rows, k)
            np.testing.assert_allclose(smallest, by_hand[:, :k], rtol=0, atol=1e-12)
            np.testing.assert_allclose(largest, by_hand[:, ::-1][:, :k], rtol=0, atol=1e-12)
            np.testing.assert_array_equal(scale, np.abs(rows).max(axis=1))
    with pytest.raises(resampling.AnalysisInputError, match=r"k = 32, not within 1..31 subset means"):
        resampling.extreme_subset_means(rows[:, :5], 32)
