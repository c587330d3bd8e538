"""Resampling for paired differences (bootstrap intervals, the exact sign-flip test) and for independent runs
(the exact two-sample permutation test).

All functions work on many comparisons at once: ``diffs`` is a ``(K, n)``
array, one row of n paired (seed-matched) differences per comparison, and the
statistic is their mean. Every measure is a per-run value (a weighted summary,
a benchmark, or a statistic of :mod:`armlab.analysis.stats.statistics`) differenced seed by
seed, so the mean of the differences is the compared quantity for all of them.
Every random draw comes from a ``numpy.random.Generator`` passed in by the
caller, never the global one.

Speed comes from drawing the resamples once as a ``(R, n)`` count matrix
(how often each seed is drawn) and turning all K x R bootstrap means into
one matrix product, instead of indexing the data R times.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Sequence
from itertools import combinations

import numpy as np
from scipy.special import ndtr, ndtri

from armlab.analysis.errors import AnalysisInputError
from armlab.spec import DEFAULT_ANALYSIS as ANALYSIS  # every default a keyword below takes

_BLOCK_CELLS = 1 << 21  # cells per block (rows x subset means, resamples x items): 16 MB at any seed or item count
_BLOCK_ROWS = 64  # resamples per block of the crossed bootstrap: a multiple of every BLAS kernel's row tile


def resample_counts(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    """Counts ``(resamples, n)``: how often each of n units is drawn in each bootstrap resample.

    The draws are ``rng.integers(0, n, (resamples, n))``, the same as
    ``scipy.stats.bootstrap`` makes, so with equal generators the two see the
    same resamples.
    """
    idx = rng.integers(0, n, (resamples, n))
    offsets = np.arange(resamples)[:, None] * n
    return np.bincount((idx + offsets).ravel(), minlength=resamples * n).reshape(resamples, n)


def bootstrap_means(diffs: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Bootstrap distribution ``(K, R)`` of the mean of each row of ``diffs``, in resample order."""
    diffs = np.atleast_2d(diffs)
    return (diffs / diffs.shape[1]) @ counts.T.astype(float)


def row_quantiles(values: np.ndarray, levels: np.ndarray, bins: int = 1024) -> np.ndarray:
    """Quantiles at ``levels`` (K, Q) of each row of ``values`` (K, R), without sorting the rows.

    Equal to ``np.quantile(values[i], levels[i])`` (linear interpolation
    between order statistics, scipy's default too). Sorting 10,000 resamples
    of every comparison was most of the bootstrap's time; instead each row is
    counted into ``bins`` equal-width bins (bin order is value order), the
    cumulative counts locate the bin holding each wanted order statistic, and
    only the values in those few bins are sorted.
    """
    k, r = values.shape
    pos = np.clip(levels, 0.0, 1.0) * (r - 1)
    low = np.floor(pos).astype(np.int64)
    frac = pos - low
    ranks = np.concatenate([low, np.minimum(low + 1, r - 1)], axis=1)
    vmin = values.min(axis=1, keepdims=True)
    span = values.max(axis=1, keepdims=True) - vmin
    scale = np.divide(bins, span, out=np.zeros_like(span), where=span > 0)
    scaled = values * scale
    scaled -= vmin * scale  # monotone in the value, 0 at the row minimum
    bucket = scaled.astype(np.int32)  # converts several times faster than to int64
    np.minimum(bucket, bins - 1, out=bucket)  # the row maximum lands on the upper edge
    bucket += (np.arange(k, dtype=np.int32) * bins)[:, None]  # K * bins < 2^31 for any K x R that fits in memory
    bucket = bucket.ravel().astype(np.intp)
    counts = np.bincount(bucket, minlength=k * bins)
    cumulative = np.cumsum(counts)
    wanted_rank = ranks + np.arange(k)[:, None] * r  # ranks within all rows, laid end to end
    target = np.searchsorted(cumulative, wanted_rank, side="right")
    offset = wanted_rank - (cumulative[target] - counts[target])
    wanted = np.zeros(k * bins, dtype=bool)
    wanted[target] = True
    chosen = np.flatnonzero(wanted[bucket])
    chosen_bucket, chosen_value = bucket[chosen], values.ravel()[chosen]
    order = np.lexsort((chosen_value, chosen_bucket))
    chosen_bucket, chosen_value = chosen_bucket[order], chosen_value[order]
    picked = chosen_value[np.searchsorted(chosen_bucket, target) + offset]
    q = levels.shape[1]
    return picked[:, :q] * (1 - frac) + picked[:, q:] * frac


def percentile_levels(k: int, confidences: Sequence[float]) -> np.ndarray:
    """Quantile levels ``(K, 2C)`` of the percentile interval (Efron & Tibshirani 1993, ch. 13).

    For each confidence c: (1 - c) / 2 and (1 + c) / 2.
    """
    tails = np.ravel([((1 - c) / 2, (1 + c) / 2) for c in confidences])
    return np.tile(tails, (k, 1))


def _percentile(
    boot: np.ndarray, diffs: np.ndarray | None, confidences: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile levels of every row (:func:`percentile_levels`), always defined; ``diffs`` is not read."""
    return percentile_levels(len(boot), confidences), np.ones(len(boot), dtype=bool)


def bca_levels(
    boot: np.ndarray, diffs: np.ndarray | None, confidences: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Quantile levels ``(K, 2C)`` of the BCa interval for the mean (Efron 1987; Efron & Tibshirani 1993, sec. 14.3).

    Bias correction z0 = Phi^-1(share of bootstrap means below the estimate,
    ties counted half, as scipy does); acceleration from the jackknife of the
    mean, which has the closed form a = sum(e^3) / (6 sum(e^2)^1.5) with
    e = d - mean(d); each level is Phi(z0 + (z0 + z) / (1 - a (z0 + z))).

    Returns ``(levels, defined (K,))``. BCa is undefined when all differences
    are equal, up to rounding (a = 0/0), or the estimate lies outside the bootstrap
    distribution (z0 infinite); there z0 = a = 0 gives the percentile levels
    and ``defined`` is False, so the caller can say so.
    """
    if diffs is None:  # None will do for the percentile interval only (bootstrap_intervals)
        raise AnalysisInputError("BCa interval: needs the differences that were resampled")
    diffs = np.atleast_2d(diffs)
    estimate = diffs.mean(axis=1)
    # a resample that permutes the data has the estimate as its mean (4% of them at 5 seeds);
    # rounding must not decide on which side it falls
    tol = 1e-10 * np.abs(diffs).max(axis=1)
    below = (boot < (estimate - tol)[:, None]).sum(axis=1)
    at_or_below = (boot <= (estimate + tol)[:, None]).sum(axis=1)
    z0 = ndtri((below + at_or_below) / (2 * boot.shape[1]))
    e = diffs - estimate[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        accel = (e**3).sum(axis=1) / (6 * ((e**2).sum(axis=1)) ** 1.5)
    # a is scale-free, so equal differences that differ only by rounding would give an arbitrary a
    spread = np.abs(e).max(axis=1) > tol
    defined = np.isfinite(z0) & np.isfinite(accel) & spread
    z0 = np.where(defined, z0, 0.0)[:, None]
    accel = np.where(defined, accel, 0.0)[:, None]
    shifted = z0 + ndtri(percentile_levels(1, confidences))
    return ndtr(z0 + shifted / (1 - accel * shifted)), defined


def bootstrap_intervals(
    boot: np.ndarray, diffs: np.ndarray | None, methods: Collection[str], confidences: Sequence[float]
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Intervals for every method and confidence from one quantile pass.

    ``boot`` is :func:`bootstrap_means` of ``diffs`` (None will do for the percentile method, which does not read
    them); ``methods`` are names in
    :data:`BOOTSTRAP` (another name is an error naming ``analysis.ci_methods``).
    Returns ``({method: (K, C, 2)}, defined (K,))``; ``defined`` is False
    where one of the methods is undefined (only BCa can be) and its
    percentile levels were used.
    """
    k, c = len(boot), len(confidences)
    defined = np.ones(k, dtype=bool)
    levels = []
    for method in methods:
        if method not in BOOTSTRAP:
            raise AnalysisInputError(
                f"analysis.ci_methods: {method!r} is not a bootstrap interval; known: {sorted(BOOTSTRAP)}"
            )
        found, ok = BOOTSTRAP[method](boot, diffs, confidences)
        levels.append(found)
        defined &= ok
    quantiles = row_quantiles(boot, np.concatenate(levels, axis=1)).reshape(k, len(methods), c, 2)
    return {method: quantiles[:, i] for i, method in enumerate(methods)}, defined


BOOTSTRAP = {"percentile": _percentile, "bca": bca_levels}  # bootstrap intervals: name -> quantile levels


def crossed_bootstrap_means(item_diffs: Sequence[np.ndarray], rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Crossed seeds x items bootstrap of per-benchmark mean differences.

    ``item_diffs`` is a list over benchmarks of ``(P, n, m_b)`` arrays: P
    comparisons, n matched seeds, m_b items (the same items in every run).
    Each resample draws n seeds and, independently, m_b items per benchmark,
    both with replacement and shared by all comparisons and benchmarks, and
    takes the mean over the drawn seed x item cells (the "pigeonhole"
    bootstrap, Owen 2007, Ann. Appl. Stat. 1(2)). It is conservative: in
    expectation it counts the seed x item interaction about three times.

    The item draws of a benchmark are made a block of resamples at a time (about :data:`_BLOCK_CELLS`
    resample x item cells), in the generator's order, so memory stays bounded at any item count; a block is a
    multiple of :data:`_BLOCK_ROWS` resamples, where BLAS tiles the rows of a product, so the result is the same
    to the bit as drawing and multiplying all ``(R, m_b)`` at once.

    Returns ``(P, R, B)`` resampled mean differences, unsorted.
    """
    p, n = item_diffs[0].shape[:2]
    seed_counts = resample_counts(rng, n, resamples).astype(float)
    out = np.empty((p, resamples, len(item_diffs)))
    for b, x in enumerate(item_diffs):
        m = x.shape[2]
        cells = x.transpose(2, 0, 1).reshape(m, p * n)
        per_seed = np.empty((resamples, p * n))  # item-weighted sums per resample, comparison and seed
        step = max(1, _BLOCK_CELLS // m // _BLOCK_ROWS) * _BLOCK_ROWS
        for start in range(0, resamples, step):
            stop = min(start + step, resamples)
            per_seed[start:stop] = resample_counts(rng, m, stop - start).astype(float) @ cells
        out[:, :, b] = np.einsum("rpn,rn->pr", per_seed.reshape(resamples, p, n), seed_counts) / (n * m)
    return out


def sign_flip(
    diffs: np.ndarray,
    *,
    confidence: float | None = None,
    alpha: float | None = None,
    margin: float | None = None,
    max_exact: int = ANALYSIS.exact_max_seeds,
    resamples: int = ANALYSIS.sign_flip_resamples,
    rng: np.random.Generator | None = None,
) -> dict[str, np.ndarray]:
    """Exact sign-flip test of mean(d) = 0, its confidence interval and its TOST, per row of ``diffs``.

    Under H0: mean = theta with each d - theta symmetric about 0, every sign
    pattern s of d - theta is equally likely (Fisher 1935, sec. 21). For a
    pattern, sum(s (d - theta)) >= sum(d - theta) exactly when the mean of the
    seeds it flips, the subset S = {s = -1}, is <= theta (or S is empty). So
    the one-sided p-values are ranks of theta among the 2^n - 1 subset means,
    and inverting the test gives Hartigan's (1969, JASA 64) interval between
    the k-th smallest and k-th largest subset mean, whose coverage is
    1 - 2k / 2^n for symmetric continuous differences.

    Returns a dict of arrays, one entry per row:

    - ``p_value``: two-sided p = min(1, 2 min(p_greater, p_less)) at theta = 0
      (equal to the share of patterns with |sum(s d)| >= |sum(d)|);
    - with ``confidence``: ``ci`` (K, 2), the set of theta the two-sided test
      at level 1 - confidence does not reject; (-inf, inf) when no data could
      make it reject (2 / 2^n > 1 - confidence). It excludes 0 exactly when
      ``p_value <= 1 - confidence``;
    - with ``alpha`` and ``margin``: the two one-sided tests of mean <= -margin
      and mean >= margin (Schuirmann 1987), ``p_equivalence`` = the larger of
      their p-values, and ``eq`` (K, 2), the (1 - 2 alpha) interval, which lies
      inside (-margin, margin) exactly when ``p_equivalence <= alpha``; and
      ``equivalence_attainable``, False when 1 / 2^n > alpha.

    Up to ``max_exact`` seeds all 2^n patterns are enumerated. Beyond,
    ``resamples`` random patterns (shared by all rows) replace them and each
    one-sided p is (b + 1) / (B + 1) (Phipson & Smyth 2010, Stat. Appl.
    Genet. Mol. Biol. 9). Subset means within 1e-10 x max |d| of a tested
    value (rounding of equal sums) count as ties, that is as not rejecting.
    """
    diffs = np.atleast_2d(np.asarray(diffs, dtype=float))
    patterns = _Patterns(diffs.shape[1], max_exact, resamples, rng)
    return _invert(patterns, patterns.subset_means(diffs), len(diffs), confidence, alpha, margin)


def permutation(
    x: np.ndarray,
    y: np.ndarray,
    *,
    confidence: float | None = None,
    alpha: float | None = None,
    margin: float | None = None,
    max_exact: int = ANALYSIS.exact_max_seeds,
    resamples: int = ANALYSIS.sign_flip_resamples,
    rng: np.random.Generator | None = None,
) -> dict[str, np.ndarray]:
    """Exact permutation test of mean(x) - mean(y) = 0 for independent samples, its interval and its TOST, per row.

    Rows of ``x`` (K, n1) and ``y`` (K, n2) are the run-level scores of an arm
    and of its reference. Under H0: x - theta and y are exchangeable (the
    shift model), every split of the n1 + n2 pooled runs into groups of n1 and
    n2 is equally likely (Pitman 1937, JRSS Suppl. 4; Lehmann & Romano 2005,
    sec. 15.2). A split that moves m >= 1 runs Xo of x to y and m runs Yi of y
    to x gives a difference of means >= the observed one, at theta, exactly
    when mean(Xo) - mean(Yi) <= theta. So the one-sided p-values are ranks of
    theta among these C(n1 + n2, n1) - 1 swap means, and the interval lies
    between the k-th smallest and the k-th largest of them, as the sign-flip
    set does among subset means; everything else (two-sided p, interval, TOST,
    ties, Monte-Carlo splits beyond C(n1 + n2, n1) > 2^max_exact) is as in
    :func:`sign_flip`, which returns the same keys.
    """
    x, y = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float))
    splits = _Splits(x.shape[1], y.shape[1], max_exact, resamples, rng)
    return _invert(splits, splits.swap_means(x, y), len(x), confidence, alpha, margin)


def _invert(
    thresholds: _Patterns | _Splits,
    blocks: Iterator[tuple[slice, np.ndarray, np.ndarray]],
    k: int,
    confidence: float | None,
    alpha: float | None,
    margin: float | None,
) -> dict[str, np.ndarray]:
    """p-values, interval and TOST of a randomization test whose one-sided p at theta ranks theta among thresholds.

    ``blocks`` yields ``(rows, thresholds (r, count), scale (r,))``: the
    values at or below which theta is not rejected by the test of "greater"
    (subset means of :func:`sign_flip`, swap means of :func:`permutation`).
    """
    orders = []
    if confidence is not None:
        ci_rank = thresholds.rank((1 - confidence) / 2)
        orders.append(ci_rank)
    if margin is not None:
        if alpha is None:
            raise AnalysisInputError("equivalence test: a margin needs its alpha")
        eq_rank = thresholds.rank(alpha)
        orders.append(eq_rank)
    orders = [r for r in orders if r >= 1]
    out = {"p_value": np.empty(k)}
    if confidence is not None:
        out["ci"] = np.empty((k, 2))
    if margin is not None:
        out["p_equivalence"], out["eq"] = np.empty(k), np.empty((k, 2))
        out["equivalence_attainable"] = np.full(k, eq_rank >= 1)
    for rows, means, scale in blocks:
        tol = 1e-10 * scale[:, None]
        greater, less = thresholds.p_at(means, 0.0, tol)
        out["p_value"][rows] = np.minimum(1.0, 2 * np.minimum(greater, less))
        ordered = _order_statistics(means, orders)
        if confidence is not None:
            out["ci"][rows] = _endpoints(ordered, ci_rank, (0.0, 0.0), tol)
        if margin is not None:
            eq_tol = 1e-10 * (scale[:, None] + margin)
            lower_p, _ = thresholds.p_at(means, -margin, eq_tol)
            _, upper_p = thresholds.p_at(means, margin, eq_tol)
            out["p_equivalence"][rows] = np.maximum(lower_p, upper_p)
            out["eq"][rows] = _endpoints(ordered, eq_rank, (-margin, margin), eq_tol)
    return out


def sign_flip_pvalue(
    diffs: np.ndarray,
    *,
    max_exact: int = ANALYSIS.exact_max_seeds,
    resamples: int = ANALYSIS.sign_flip_resamples,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Two-sided exact sign-flip p-value for mean(d) = 0, per row (see :func:`sign_flip`)."""
    return sign_flip(diffs, max_exact=max_exact, resamples=resamples, rng=rng)["p_value"]


def min_sign_flip_pvalue(
    n: np.ndarray | int, *, max_exact: int = ANALYSIS.exact_max_seeds, resamples: int = ANALYSIS.sign_flip_resamples
) -> np.ndarray:
    """Smallest two-sided p :func:`sign_flip` can return with n seeds: 2/2^n, or 2/(B+1) beyond ``max_exact``."""
    n = np.asarray(n)
    return np.where(n <= max_exact, 2.0 ** (1.0 - n), 2.0 / (resamples + 1))


def min_permutation_pvalue(
    n1: np.ndarray | int,
    n2: np.ndarray | int,
    *,
    max_exact: int = ANALYSIS.exact_max_seeds,
    resamples: int = ANALYSIS.sign_flip_resamples,
) -> np.ndarray:
    """Smallest two-sided p :func:`permutation` gives with n1 and n2 runs: 2 / C(n1 + n2, n1), or 2/(B+1) beyond."""
    n1, n2 = np.broadcast_arrays(np.asarray(n1), np.asarray(n2))
    splits = np.vectorize(lambda a, b: float(math.comb(int(a) + int(b), int(a))), otypes=[float])(n1, n2)
    return np.minimum(1.0, np.where(splits <= 2.0**max_exact, 2.0 / splits, 2.0 / (resamples + 1)))


def min_pvalue(
    n: np.ndarray | int,
    n_reference: np.ndarray | int = 0,
    *,
    max_exact: int = ANALYSIS.exact_max_seeds,
    resamples: int = ANALYSIS.sign_flip_resamples,
) -> np.ndarray:
    """Smallest two-sided p of the exact test: sign-flip on n seeds, or permutation of n against n_reference runs."""
    n, n_reference = np.broadcast_arrays(np.asarray(n), np.asarray(n_reference))
    flip = min_sign_flip_pvalue(n, max_exact=max_exact, resamples=resamples)
    if not np.any(n_reference):
        return flip
    runs = min_permutation_pvalue(n, np.maximum(n_reference, 1), max_exact=max_exact, resamples=resamples)
    return np.where(n_reference > 0, runs, flip)


def sign_flip_rank(n: np.ndarray | int, tail: np.ndarray | float) -> np.ndarray:
    """Which order statistic of the 2^n - 1 subset means bounds the exact sign-flip set at one-sided level ``tail``.

    The one-sided test of n enumerated seeds rejects theta below the k-th
    smallest subset mean, k = floor(tail 2^n); k < 1: it never rejects.
    Works elementwise on arrays of n and tail.
    """
    return _rank(np.asarray(tail, dtype=float), 2.0 ** np.asarray(n), 1)


def _rank(tail: np.ndarray | float, total: np.ndarray | float, base: int) -> np.ndarray:
    """k such that (base + k - 1) / total <= tail < (base + k) / total: the one-sided test's rejection rank."""
    return np.floor(tail * total).astype(int) - base + 1


def _generator(rng: np.random.Generator | None) -> np.random.Generator:
    """The generator of the drawn patterns or splits (the enumerated ones need none)."""
    if rng is None:
        raise AnalysisInputError("randomization test: beyond max_exact the draws need a generator (rng)")
    return rng


class _Thresholds:
    """Where a randomization test's one-sided p-values change: ``count`` values, ``base`` always-extreme draws."""

    total: float
    base: int
    count: int

    def rank(self, tail: float) -> int:
        return int(_rank(np.float64(tail), self.total, self.base))

    def p_at(self, means: np.ndarray, theta: float, tol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One-sided p-values (greater, less) of the test of mean = theta."""
        below = (means <= theta + tol).sum(axis=1)
        above = (means >= theta - tol).sum(axis=1)
        return (self.base + below) / self.total, (self.base + above) / self.total


class _Patterns(_Thresholds):
    """The sign patterns of n seeds, enumerated or drawn, as the subsets of seeds they flip."""

    def __init__(self, n: int, max_exact: int, resamples: int, rng: np.random.Generator | None) -> None:
        self.n = n
        if n <= max_exact:
            self.flipped = None
            self.sizes = np.zeros(1)
            for _ in range(n):  # binary counting order: bit i of the subset's index is seed i
                self.sizes = np.concatenate([self.sizes, self.sizes + 1])
            self.sizes = self.sizes[1:]
            self.total, self.base = float(2**n), 1
        else:
            flipped = _generator(rng).random((resamples, n)) < 0.5
            empty = ~flipped.any(axis=1)
            # a drawn pattern that flips nothing always counts as extreme, like the observed one
            self.flipped = flipped[~empty].astype(float)
            self.sizes = self.flipped.sum(axis=1)
            self.total, self.base = resamples + 1.0, 1 + int(empty.sum())
        self.count = len(self.sizes)

    def subset_means(self, diffs: np.ndarray) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
        """``(rows, means (r, count), scale (r,))`` for blocks of rows; scale is max |d| of each row."""
        block = max(1, _BLOCK_CELLS // self.count)
        for start in range(0, len(diffs), block):
            d = diffs[start : start + block]
            if self.flipped is None:
                sums = np.empty((len(d), self.count + 1))  # column j: the subset whose bits are j
                sums[:, 0] = 0.0
                for i in range(self.n):
                    np.add(sums[:, : 1 << i], d[:, i : i + 1], out=sums[:, 1 << i : 2 << i])
                sums = sums[:, 1:]
            else:
                sums = d @ self.flipped.T
            sums /= self.sizes
            yield slice(start, start + len(d)), sums, np.abs(d).max(axis=1)


class _Splits(_Thresholds):
    """The splits of n1 + n2 pooled runs into groups of n1 and n2 other than the observed one, as the runs they swap.

    Enumerated, m = 1 .. min(n1, n2) runs at a time, while C(n1 + n2, n1) <= 2^max_exact; beyond, drawn.
    """

    def __init__(self, n1: int, n2: int, max_exact: int, resamples: int, rng: np.random.Generator | None) -> None:
        self.n1, self.n2 = n1, n2
        splits = math.comb(n1 + n2, n1)
        if splits <= 2.0**max_exact:
            self.swaps = [
                (m, np.array(list(combinations(range(n1), m))), np.array(list(combinations(range(n2), m))))
                for m in range(1, min(n1, n2) + 1)
            ]
            self.drawn = None
            self.total, self.base, self.count = float(splits), 1, splits - 1
        else:
            order = np.argsort(_generator(rng).random((resamples, n1 + n2)), axis=1)
            member = np.zeros((resamples, n1 + n2), dtype=bool)
            np.put_along_axis(member, order[:, :n1], True, axis=1)
            moved_out, moved_in = ~member[:, :n1], member[:, n1:]
            same = ~moved_out.any(axis=1)  # a drawn split that swaps nothing counts as extreme, like the observed one
            self.drawn = moved_out[~same].astype(float), moved_in[~same].astype(float)
            self.sizes = self.drawn[0].sum(axis=1)
            self.total, self.base, self.count = resamples + 1.0, 1 + int(same.sum()), int((~same).sum())

    def swap_means(self, x: np.ndarray, y: np.ndarray) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
        """``(rows, mean(Xo) - mean(Yi) (r, count), scale (r,))`` for blocks of rows; scale is max |value| of a row."""
        block = max(1, _BLOCK_CELLS // self.count)
        for start in range(0, len(x), block):
            a, b = x[start : start + block], y[start : start + block]
            if self.drawn is None:
                parts = [
                    (a[:, out].sum(axis=2)[:, :, None] - b[:, into].sum(axis=2)[:, None, :]).reshape(len(a), -1) / m
                    for m, out, into in self.swaps
                ]
                means = np.concatenate(parts, axis=1)
            else:
                means = (a @ self.drawn[0].T - b @ self.drawn[1].T) / self.sizes
            scale = np.maximum(np.abs(a).max(axis=1), np.abs(b).max(axis=1))
            yield slice(start, start + len(a)), means, scale


def _order_statistics(means: np.ndarray, ranks: Collection[int]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``{rank: (k-th smallest, k-th largest)}`` of each row of ``means`` (NaN sorts last), which it may reorder
    within each row."""
    return {r: (kth_from_end(means, r, largest=False), kth_from_end(means, r, largest=True)) for r in ranks}


# A bound from one column in at most this many: a sample small enough to select in quickly, large enough that the
# values it lets through stay few
_SAMPLE_EVERY = 32


def _below_a_bound(means: np.ndarray, k: int, sign: float) -> tuple[np.ndarray, np.ndarray] | None:
    """``(packed, whole)``: the values of each row of ``sign * means`` at or below a bound, side by side and padded
    with +inf, and the rows for which the bound let fewer than k through or that hold a NaN (to be taken whole).
    None where k is too large against the row for a bound to pay.

    A partition of every row (numpy's introselect, about 8 ns a value) was most of the time of the sign-flip
    intervals and of every power simulation. Where k is small against the row, a bound is cheaper: the j-th
    smallest of a random sample of about one column in s, j four standard deviations above the k / s expected
    there, lets through the k smallest values of nearly every row and few others. Any bound through which at least
    k values pass keeps the k smallest, so the sample decides only the speed. A sample with a pattern (every s-th
    subset, which never flips the lowest seeds) would not be representative.
    """
    rows, count = means.shape
    every = min(_SAMPLE_EVERY, count // (4 * k))
    if every < 4:
        return None
    size = count // every
    expected = k / every
    j = min(size - 1, int(expected + 4 * math.sqrt(expected)) + 2)
    sample = sign * means[:, np.sort(np.random.default_rng(count).integers(0, count, size))]
    sample.partition(j, axis=1)
    bound = sign * sample[:, j]
    passed = means >= bound[:, None] if sign < 0 else means <= bound[:, None]
    per_row = passed.sum(axis=1)
    values = sign * means[passed]  # row by row, in row order
    packed = np.full((rows, max(int(per_row.max()), k)), np.inf)
    starts = np.cumsum(per_row) - per_row
    packed[np.repeat(np.arange(rows), per_row), np.arange(len(values)) - np.repeat(starts, per_row)] = values
    return packed, (per_row < k) | np.isnan(means.sum(axis=1))  # the sum is NaN where the row holds one


def _partitioned_end(means: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """Each row's k smallest (or largest) values, the k-th in the last column, by a partition of ``means`` in place
    (NaN sorts last)."""
    position = means.shape[1] - k if largest else k - 1
    means.partition(position, axis=1)
    return means[:, position:][:, ::-1] if largest else means[:, :k]


def _k_from_end(means: np.ndarray, k: int, largest: bool) -> np.ndarray | None:
    """``sign *`` each row's k smallest (or largest) values, the k-th in the last column (sign -1 for the largest),
    from the values below a sampled bound (:func:`_below_a_bound`); None where a bound does not pay. Rows the bound
    cannot serve are partitioned whole."""
    sign = -1.0 if largest else 1.0
    below = _below_a_bound(means, k, sign)
    if below is None:
        return None
    packed, whole = below
    packed.partition(k - 1, axis=1)
    kept = packed[:, :k]
    if whole.any():
        kept[whole] = sign * _partitioned_end(means[whole], k, largest)
    return kept


def kth_from_end(means: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """The k-th smallest (or largest) of each row of ``means``: exact, the value a partition of the row puts there
    (NaN sorts last); from the values below a sampled bound where that pays. It may reorder ``means`` within each
    row."""
    kept = _k_from_end(means, k, largest)
    if kept is None:  # in place: a copy per selection cost as much as the selection
        return _partitioned_end(means, k, largest)[:, -1].copy()
    return (-1.0 if largest else 1.0) * kept[:, -1]


def extreme_subset_means(diffs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(smallest (K, k), largest (K, k), scale (K,))``: the k smallest subset means of each row of ``diffs`` in
    increasing order, its k largest in decreasing order, and its max |d|; all 2^n - 1 subsets enumerated.

    The sign-flip interval at rank r (:func:`sign_flip`) lies between column r - 1 of the two: one enumeration
    serves every level whose rank is at most k (the power simulation asks for several). Rows hold no NaN.
    """
    diffs = np.atleast_2d(np.asarray(diffs, dtype=float))
    patterns = _Patterns(diffs.shape[1], diffs.shape[1], 0, None)
    if not 1 <= k <= patterns.count:
        raise AnalysisInputError(f"extreme_subset_means: k = {k}, not within 1..{patterns.count} subset means")
    ends = {sign: np.empty((len(diffs), k)) for sign in (1.0, -1.0)}  # of sign * means, increasing
    scale = np.empty(len(diffs))
    for rows, means, block_scale in patterns.subset_means(diffs):
        scale[rows] = block_scale
        for sign, out in ends.items():
            kept = _k_from_end(means, k, largest=sign < 0)
            if kept is None:
                kept = sign * _partitioned_end(means, k, largest=sign < 0)
            out[rows] = np.sort(kept, axis=1)
    return ends[1.0], -ends[-1.0], scale


def _endpoints(
    ordered: dict[int, tuple[np.ndarray, np.ndarray]], rank: int, targets: tuple[float, float], tol: np.ndarray
) -> np.ndarray:
    """Interval from the order statistics; endpoints within ``tol`` of a tested value are that value.

    Snapping makes "the interval excludes the value" agree with the p-value
    that counts the same near-ties as ties.
    """
    if rank < 1:
        return np.array([[-np.inf, np.inf]])
    low, high = ordered[rank]
    low = np.where(np.abs(low - targets[0]) <= tol[:, 0], targets[0], low)
    high = np.where(np.abs(high - targets[1]) <= tol[:, 0], targets[1], high)
    return np.stack([low, high], axis=1)
