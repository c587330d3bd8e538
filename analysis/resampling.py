"""Resampling for paired differences: bootstrap intervals and the exact sign-flip test.

All functions work on many comparisons at once: ``diffs`` is a ``(K, n)``
array, one row of n paired (seed-matched) differences per comparison, and the
statistic is always their mean. Summaries are linear in benchmark accuracies,
so this covers every summary and every benchmark. Every random draw comes from
a ``numpy.random.Generator`` passed in by the caller, never the global one.

Speed comes from drawing the resamples once as a ``(R, n)`` count matrix
(how often each seed is drawn) and turning all K x R bootstrap means into
one matrix product, instead of indexing the data R times.
"""

import numpy as np
from scipy import stats
from scipy.special import ndtr, ndtri

_EXACT_CHUNK = 1 << 14  # sign patterns per block, to bound memory at 20 seeds


def resample_counts(rng, n, resamples):
    """Counts ``(resamples, n)``: how often each of n units is drawn in each bootstrap resample.

    The draws are ``rng.integers(0, n, (resamples, n))``, the same as
    ``scipy.stats.bootstrap`` makes, so with equal generators the two see the
    same resamples.
    """
    idx = rng.integers(0, n, (resamples, n))
    offsets = np.arange(resamples)[:, None] * n
    return np.bincount((idx + offsets).ravel(), minlength=resamples * n).reshape(resamples, n)


def bootstrap_means(diffs, counts):
    """Bootstrap distribution ``(K, R)`` of the mean of each row of ``diffs``, in resample order."""
    diffs = np.atleast_2d(diffs)
    return (diffs / diffs.shape[1]) @ counts.T.astype(float)


def row_quantiles(values, levels, bins=1024):
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


def percentile_levels(k, confidences):
    """Quantile levels ``(K, 2C)`` of the percentile interval (Efron & Tibshirani 1993, ch. 13).

    For each confidence c: (1 - c) / 2 and (1 + c) / 2.
    """
    tails = np.ravel([((1 - c) / 2, (1 + c) / 2) for c in confidences])
    return np.tile(tails, (k, 1))


def bca_levels(boot, diffs, confidences):
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


def bootstrap_intervals(boot, diffs, methods, confidences):
    """Intervals for every method and confidence from one quantile pass.

    ``boot`` is :func:`bootstrap_means` of ``diffs``; ``methods`` are drawn
    from ``("percentile", "bca")``. Returns ``({method: (K, C, 2)},
    bca_defined (K,))``; ``bca_defined`` is all True without BCa.
    """
    k, c = len(boot), len(confidences)
    defined = np.ones(k, dtype=bool)
    levels = []
    for method in methods:
        if method == "bca":
            bca, defined = bca_levels(boot, diffs, confidences)
            levels.append(bca)
        else:
            levels.append(percentile_levels(k, confidences))
    quantiles = row_quantiles(boot, np.concatenate(levels, axis=1)).reshape(k, len(methods), c, 2)
    return {method: quantiles[:, i] for i, method in enumerate(methods)}, defined


def crossed_bootstrap_means(item_diffs, rng, resamples):
    """Crossed seeds x items bootstrap of per-benchmark mean differences.

    ``item_diffs`` is a list over benchmarks of ``(P, n, m_b)`` arrays: P
    comparisons, n matched seeds, m_b items (the same items in every run).
    Each resample draws n seeds and, independently, m_b items per benchmark,
    both with replacement and shared by all comparisons and benchmarks, and
    takes the mean over the drawn seed x item cells (the "pigeonhole"
    bootstrap, Owen 2007, Ann. Appl. Stat. 1(2)). It is conservative: in
    expectation it counts the seed x item interaction about three times.

    Returns ``(P, R, B)`` resampled mean differences, unsorted.
    """
    p, n = item_diffs[0].shape[:2]
    seed_counts = resample_counts(rng, n, resamples).astype(float)
    out = np.empty((p, resamples, len(item_diffs)))
    for b, x in enumerate(item_diffs):
        m = x.shape[2]
        item_counts = resample_counts(rng, m, resamples).astype(float)
        # (R, m) @ (m, P*n): item-weighted sums per comparison and seed, then weight the seeds
        per_seed = (item_counts @ x.transpose(2, 0, 1).reshape(m, p * n)).reshape(resamples, p, n)
        out[:, :, b] = np.einsum("rpn,rn->pr", per_seed, seed_counts) / (n * m)
    return out


def sign_flip_pvalue(diffs, *, max_exact=20, resamples=100_000, rng=None):
    """Two-sided sign-flip (paired randomization) p-value for mean(d) = 0, per row.

    Under H0 each paired difference is symmetric about 0, so every pattern of
    signs is equally likely (Fisher 1935, sec. 21). p is the share of patterns
    with |sum(s * d)| >= |sum(d)|. Up to ``max_exact`` seeds all 2^n patterns
    are enumerated (half of them: s and -s give the same |sum|), so the
    smallest possible p is 2 / 2^n. Beyond, ``resamples`` random patterns give
    p = (b + 1) / (B + 1) (Phipson & Smyth 2010, Stat. Appl. Genet. Mol. Biol. 9).
    """
    diffs = np.atleast_2d(np.asarray(diffs, dtype=float))
    n = diffs.shape[1]
    observed = np.abs(diffs.sum(axis=1))
    # float sums of the same terms in another order differ by rounding; count those as ties
    threshold = observed - 1e-10 * np.abs(diffs).sum(axis=1)
    if n <= max_exact:
        total = 1 << (n - 1)
        hits = np.zeros(diffs.shape[0], dtype=np.int64)
        for start in range(0, total, _EXACT_CHUNK):
            codes = np.arange(start, min(start + _EXACT_CHUNK, total))
            signs = 1 - 2 * ((codes[:, None] >> np.arange(n - 1)) & 1)
            sums = diffs[:, :1] + diffs[:, 1:] @ signs.T  # first sign fixed at +1
            hits += (np.abs(sums) >= threshold[:, None]).sum(axis=1)
        return hits / total
    hits = np.zeros(diffs.shape[0], dtype=np.int64)
    for start in range(0, resamples, _EXACT_CHUNK):
        signs = rng.choice([-1.0, 1.0], size=(min(_EXACT_CHUNK, resamples - start), n))
        hits += (np.abs(diffs @ signs.T) >= threshold[:, None]).sum(axis=1)
    return (hits + 1) / (resamples + 1)


def min_sign_flip_pvalue(n, *, max_exact=20, resamples=100_000):
    """Smallest p-value :func:`sign_flip_pvalue` can return with n seeds: 2/2^n, or 1/(B+1) beyond ``max_exact``."""
    n = np.asarray(n)
    return np.where(n <= max_exact, 2.0 ** (1.0 - n), 1.0 / (resamples + 1))


def normal_theory_coverage(n, confidence):
    """Approximate coverage of the percentile interval for the mean of n normal differences.

    With many resamples the interval is close to mean +- z * s_n / sqrt(n),
    with the plug-in s_n = s * sqrt((n - 1) / n); against the t distribution
    of the mean that covers P(|t_{n-1}| <= z * sqrt((n - 1) / n)): too
    narrow at few seeds (Hesterberg 2015, Am. Stat. 69(4), sec. 6.1).
    """
    n = np.asarray(n, dtype=float)
    z = ndtri(0.5 + confidence / 2)
    return 1 - 2 * stats.t.sf(z * np.sqrt((n - 1) / n), n - 1)
