"""Intervals and p-values against scipy and against enumeration by hand."""

import itertools
import tracemalloc

import numpy as np
import pytest
from scipy import stats
from threadpoolctl import threadpool_limits

from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.stats import resampling


def _mean_diff(x, y, axis=-1):
    return np.mean(x - y, axis=axis)


def _ours(diffs, seed, resamples, confidence=0.95):
    """(percentile (K, 2), (bca (K, 2), bca defined (K,)))"""
    counts = resampling.resample_counts(np.random.default_rng(seed), diffs.shape[1], resamples)
    boot = resampling.bootstrap_means(diffs, counts)
    intervals, defined = resampling.bootstrap_intervals(boot, diffs, ("percentile", "bca"), (confidence,))
    return intervals["percentile"][:, 0], (intervals["bca"][:, 0], defined)


@pytest.mark.parametrize("n, dyadic", [(5, True), (12, False), (20, False)])
def test_intervals_equal_scipy_paired_bootstrap_with_the_same_generator(n, dyadic):
    rng = np.random.default_rng(7)
    x, y = rng.normal(0.5, 0.1, (4, n)), rng.normal(0.45, 0.1, (4, n))
    if dyadic:
        # at 5 seeds 4% of resamples permute the data and tie with the estimate; with multiples of
        # 1/64 those ties are exact in both implementations, elsewhere rounding decides them in scipy
        x, y = np.round(x * 64) / 64, np.round(y * 64) / 64
    percentile, (bca, defined) = _ours(x - y, seed=11, resamples=5000)
    assert defined.all()
    for method, ours in (("percentile", percentile), ("BCa", bca)):
        ref = stats.bootstrap(
            (x, y),
            _mean_diff,
            paired=True,
            vectorized=True,
            n_resamples=5000,
            axis=-1,
            method=method,
            rng=np.random.default_rng(11),
        ).confidence_interval
        np.testing.assert_allclose(ours[:, 0], ref.low, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ours[:, 1], ref.high, rtol=0, atol=1e-12)


def test_intervals_agree_with_scipy_within_monte_carlo_error_on_independent_draws():
    rng = np.random.default_rng(3)
    d = rng.standard_t(4, (3, 12))
    percentile, (bca, _) = _ours(d, seed=1, resamples=20_000)
    se = d.std(axis=1, ddof=1) / np.sqrt(12)
    for method, ours in (("percentile", percentile), ("BCa", bca)):
        ref = stats.bootstrap(
            (d,), np.mean, vectorized=True, n_resamples=20_000, axis=-1, method=method, rng=np.random.default_rng(2)
        ).confidence_interval
        # 2.5% quantile of 20,000 resamples: MC sd ~0.03 se each, so 0.2 se is ~5 sd of the difference
        assert np.all(np.abs(ours[:, 0] - ref.low) < 0.2 * se)
        assert np.all(np.abs(ours[:, 1] - ref.high) < 0.2 * se)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # scipy's own 0/0
def test_bca_falls_back_to_percentile_on_degenerate_data_where_scipy_gives_nan():
    d = np.array([[0.02, 0.02, 0.02, 0.02], [0.01, -0.02, 0.03, 0.0]])
    percentile, (bca, defined) = _ours(d, seed=0, resamples=2000)
    assert defined.tolist() == [False, True]
    np.testing.assert_allclose(bca[0], [0.02, 0.02])
    np.testing.assert_array_equal(bca[0], percentile[0])
    with pytest.warns(stats.DegenerateDataWarning):
        ref = stats.bootstrap(
            (d[:1],), np.mean, axis=-1, n_resamples=2000, method="BCa", rng=np.random.default_rng(0)
        ).confidence_interval
    assert np.isnan(ref.low).all()


def test_resample_counts_rows_sum_to_n_and_follow_the_generator():
    counts = resampling.resample_counts(np.random.default_rng(5), 7, 1000)
    assert counts.shape == (1000, 7) and (counts.sum(axis=1) == 7).all()
    idx = np.random.default_rng(5).integers(0, 7, (1000, 7))
    assert (counts[3] == np.bincount(idx[3], minlength=7)).all()


def _sign_flip_by_hand(d):
    observed = abs(sum(d))
    sums = [abs(sum(s * x for s, x in zip(signs, d))) for signs in itertools.product([1, -1], repeat=len(d))]
    return sum(v >= observed - 1e-12 for v in sums) / len(sums)


def test_sign_flip_small_cases_by_hand():
    # +-1 +-2 +-3: |sum| >= 6 only for (+,+,+) and (-,-,-): 2 of 8
    assert resampling.sign_flip_pvalue([1.0, 2.0, 3.0])[0] == 0.25
    # (0.5, 1, -0.2, 2): |sum| >= 3.3 for it, (0.5, 1, 0.2, 2) and their negations: 4 of 16
    assert resampling.sign_flip_pvalue([0.5, 1.0, -0.2, 2.0])[0] == 0.25
    assert resampling.sign_flip_pvalue([0.0, 0.0, 0.0])[0] == 1.0
    rng = np.random.default_rng(0)
    for n in range(2, 11):
        d = np.round(rng.normal(0.3, 1, n), 1)  # rounding makes ties between patterns common
        assert resampling.sign_flip_pvalue(d)[0] == pytest.approx(_sign_flip_by_hand(d), abs=1e-15)


@pytest.mark.parametrize("n", [3, 8, 12])
def test_sign_flip_matches_scipy_permutation_test(n):
    rng = np.random.default_rng(n)
    d = rng.normal(0.2, 1, (5, n))
    ours = resampling.sign_flip_pvalue(d)
    for row, p in zip(d, ours):
        ref = stats.permutation_test((row,), np.mean, permutation_type="samples", n_resamples=np.inf, vectorized=True)
        assert p == pytest.approx(ref.pvalue, abs=1e-12)


def test_sign_flip_rows_are_independent_of_each_other():
    d = np.random.default_rng(1).normal(size=(6, 9))
    together = resampling.sign_flip_pvalue(d)
    assert [resampling.sign_flip_pvalue(row)[0] for row in d] == together.tolist()


# the Monte-Carlo sign-flip test (beyond exact_max_seeds) is checked against enumeration in
# tests/analysis/stats/test_stats_sign_flip.py


def test_min_sign_flip_pvalue():
    assert resampling.min_sign_flip_pvalue(3) == 0.25
    assert resampling.min_sign_flip_pvalue(12) == 2 / 4096
    # beyond the exact limit: twice the one-sided (0 + 1) / (B + 1)
    assert resampling.min_sign_flip_pvalue(25, max_exact=20, resamples=999) == pytest.approx(2e-3)


def test_crossed_bootstrap_equals_a_loop_over_the_same_draws():
    rng = np.random.default_rng(2)
    item_diffs = [rng.normal(size=(2, 4, 5)), rng.normal(size=(2, 4, 3))]  # 2 comparisons, 4 seeds, 2 benchmarks
    fast = resampling.crossed_bootstrap_means(item_diffs, np.random.default_rng(8), 50)
    draws = np.random.default_rng(8)
    seeds = draws.integers(0, 4, (50, 4))
    items = [draws.integers(0, x.shape[2], (50, x.shape[2])) for x in item_diffs]
    for p in range(2):
        for b, x in enumerate(item_diffs):
            for r in range(50):
                cells = x[p][np.ix_(seeds[r], items[b][r])]
                assert fast[p, r, b] == pytest.approx(cells.mean(), abs=1e-12)


def _crossed_peak(monkeypatch, block_cells, item_diffs, resamples):
    """(crossed bootstrap means with ``block_cells`` cells per block, peak bytes traced while computing them)"""
    monkeypatch.setattr(resampling, "_BLOCK_CELLS", block_cells)
    tracemalloc.start()
    # one BLAS thread: with more, where the threads split the rows decides the last bit of some products
    try:
        with threadpool_limits(1, user_api="blas"):
            means = resampling.crossed_bootstrap_means(item_diffs, np.random.default_rng(8), resamples)
        return means, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_crossed_bootstrap_in_blocks_of_resamples_is_bit_identical_to_one_draw_and_bounded(monkeypatch):
    rng = np.random.default_rng(3)
    item_diffs = [rng.normal(size=(3, 5, 1000)), rng.normal(size=(3, 5, 1500))]
    resamples = 4001  # not a multiple of the block: the last block is shorter
    whole, whole_peak = _crossed_peak(monkeypatch, resamples * 1500, item_diffs, resamples)  # one block: all at once
    blocks, blocks_peak = _crossed_peak(monkeypatch, 200_000, item_diffs, resamples)  # 192 and 128 resamples a block
    np.testing.assert_array_equal(blocks, whole)
    assert whole_peak > 1500 * resamples * 8  # the (R, m) draws
    assert blocks_peak < 8 * 2**20  # the (P, R, B) result is 192 kB; each block's draws below 2 MB


def test_bca_counts_resamples_tied_with_the_estimate_as_ties_whatever_the_rounding():
    # symmetric data: the bootstrap distribution is symmetric about the mean, so z0 = a = 0 and BCa
    # equals the percentile interval; 22% (n=3) and 4% (n=5) of resamples tie with the estimate
    c, h0, h1 = 0.903, 0.094, 0.743  # values where rounding puts tied resamples on one side
    for d in ([0.1, 0.2, 0.3], [c - h0, c - h1, c, c + h1, c + h0]):
        d = np.array([d])
        percentile, (bca, defined) = _ours(d, seed=4, resamples=4000)
        assert defined.all()
        np.testing.assert_allclose(bca, percentile, atol=1e-15)


def test_row_quantiles_equal_numpy_quantile_per_row():
    rng = np.random.default_rng(12)
    values = np.concatenate(
        [
            rng.normal(size=(5, 1000)),
            np.round(rng.normal(size=(3, 1000)), 1),  # heavy ties
            np.full((1, 1000), 0.3),  # constant
            rng.standard_cauchy(size=(2, 1000)),  # a few extreme values squeeze the rest into one bin
        ]
    )
    levels = np.concatenate(
        [np.tile([0.0, 0.025, 0.5, 0.975, 1.0], (len(values), 1)), rng.uniform(size=(len(values), 4))], axis=1
    )
    ours = resampling.row_quantiles(values, levels)
    expected = np.stack([np.quantile(v, q) for v, q in zip(values, levels)])
    np.testing.assert_allclose(ours, expected, rtol=1e-14, atol=1e-15)  # numpy lerps in another order


def test_calls_the_randomization_tests_cannot_answer_are_one_line_errors():
    """An equivalence margin without its alpha (before: an unbounded interval, silently), draws beyond max_exact
    without a generator (before: an AttributeError)."""
    d = np.random.default_rng(0).normal(size=(2, 6))
    with pytest.raises(AnalysisInputError, match="a margin needs its alpha"):
        resampling.sign_flip(d, margin=0.1)
    with pytest.raises(AnalysisInputError, match="a margin needs its alpha"):
        resampling.permutation(d, d + 1, margin=0.1)
    with pytest.raises(AnalysisInputError, match="beyond max_exact the draws need a generator"):
        resampling.sign_flip(d, confidence=0.95, max_exact=4)
    assert resampling.sign_flip(d, alpha=0.05, margin=0.1)["eq"].shape[0] == 2
