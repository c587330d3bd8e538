"""Normal-theory intervals: the paired t interval and TOST, and the crossed seeds x items interval.

The paired t interval (Student 1908) is the first interval of a comparison
where the sign-flip interval is unbounded (few seeds), and an optional extra
one; the paired t-TOST (Schuirmann 1987, J. Pharmacokinet. Biopharm. 15) is
the optional equivalence test. The crossed interval estimates the variance of
a mean over seeds and items from the variance components of a two-way
random-effects model (seed, item, seed x item) and uses Satterthwaite's
(1946, Biometrics Bull. 2) degrees of freedom.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from armlab.lazy import lazy_module

stats = lazy_module("scipy.stats")


def spread(diffs: np.ndarray) -> np.ndarray:
    """Standard deviation (ddof 1) of each row; exactly 0 when all differences are equal up to rounding."""
    diffs = np.atleast_2d(diffs)
    sd = diffs.std(axis=1, ddof=1)
    # equal values that differ only by rounding give sd ~ 1e-17, which would make an MDE of 1e-17
    equal = np.abs(diffs - diffs.mean(axis=1, keepdims=True)).max(axis=1) <= 1e-10 * np.abs(diffs).max(axis=1)
    return np.where(equal, 0.0, sd)


def t_interval(diffs: np.ndarray, confidence: float) -> np.ndarray:
    """Two-sided paired t interval ``(K, 2)`` for the mean of each row of n differences."""
    diffs = np.atleast_2d(diffs)
    n = diffs.shape[1]
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * spread(diffs) / np.sqrt(n)
    mean = diffs.mean(axis=1)
    return np.stack([mean - half, mean + half], axis=1)


def t_tost(diffs: np.ndarray, margin: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Paired t-TOST of |mean| >= margin: ``(p, (1 - 2 alpha) interval (K, 2))``.

    p is the larger of the one-sided t p-values against -margin and +margin
    (statsmodels' ``ttost_paired``); p <= alpha exactly when the interval lies
    inside (-margin, margin). With no spread, p is 0 inside the margin and 1
    outside.
    """
    diffs = np.atleast_2d(diffs)
    n = diffs.shape[1]
    mean, se = diffs.mean(axis=1), spread(diffs) / np.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = stats.t.sf((mean + margin) / se, n - 1)
        upper = stats.t.cdf((mean - margin) / se, n - 1)
    p = np.where(se > 0, np.maximum(lower, upper), np.where(np.abs(mean) < margin, 0.0, 1.0))
    return p, t_interval(diffs, 1 - 2 * alpha)


def item_mean_squares(item_diffs: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per benchmark, the two-way ANOVA's ``(MS_item, MS_residual)`` of each comparison's seeds x items table, ``(P,)``.

    E[MS_item - MS_residual] = n sigma2_item (Searle, Casella & McCulloch 1992, ch. 4); NaN with one item.
    """
    out = []
    for x in item_diffs:
        n, m = x.shape[1], x.shape[2]
        seed_means, item_means = x.mean(axis=2, keepdims=True), x.mean(axis=1)  # (P, n, 1), (P, m)
        grand = item_means.mean(axis=1, keepdims=True)
        if m < 2:
            out.append((np.full(len(x), np.nan), np.full(len(x), np.nan)))
            continue
        ms_item = n * ((item_means - grand) ** 2).sum(axis=1) / (m - 1)
        residual = x - seed_means - item_means[:, None, :] + grand[:, :, None]
        out.append((ms_item, (residual**2).sum(axis=(1, 2)) / ((n - 1) * (m - 1))))
    return out


def crossed_components(
    item_diffs: Sequence[np.ndarray], weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, standard error and Satterthwaite df over new seeds and new items, per comparison and measure.

    ``item_diffs`` is a list over benchmarks of ``(P, n, m_b)`` arrays (P
    comparisons, n matched seeds, m_b items); ``weights`` is ``(M, B)``, each
    measure a weighted mean of benchmark means. Model per benchmark:
    d[s, i] = mu + a_s + c_i + e_si, seed effects correlated across
    benchmarks (the same run). The variance of the measure's mean is

        Var(seed means of the measure) / n + sum_b w_b^2 sigma2_item_b / m_b,

    estimated by the variance over seeds of each seed's measure and, per
    benchmark, the ANOVA estimate sigma2_item = (MS_item - MS_residual) / n,
    truncated at 0 (Searle, Casella & McCulloch 1992, Variance Components,
    ch. 4). Satterthwaite's df of a difference of mean squares collapses
    towards 0 when the seed term is small by chance; it is kept at least the
    smallest df of the mean squares that enter with a plus sign, the df of a
    sum of positive terms (measured coverage: analysis/README.md). Returns
    ``(mean, se, df)``, each ``(P, M)``.
    """
    weights = np.asarray(weights, dtype=float)
    seed_means = np.stack([x.mean(axis=2) for x in item_diffs], axis=2)  # (P, n, B)
    n = seed_means.shape[1]
    per_seed = seed_means @ weights.T  # (P, n, M)
    mean = per_seed.mean(axis=1)
    seed_term = per_seed.var(axis=1, ddof=1) / n  # (P, M)
    item_term = np.zeros_like(seed_term)
    df_denominator = seed_term**2 / (n - 1)
    min_df = np.full(seed_term.shape, n - 1.0)
    for b, (ms_item, ms_residual) in enumerate(item_mean_squares(item_diffs)):
        m = item_diffs[b].shape[2]
        if m < 2:
            continue  # one item: no item variance to estimate
        keep = (ms_item > ms_residual)[:, None]  # truncation at 0 drops both mean squares
        scale = weights[:, b] ** 2 / (n * m)  # (M,)
        item_term += np.where(keep, scale * (ms_item - ms_residual)[:, None], 0.0)
        df_denominator += np.where(
            keep,
            (scale * ms_item[:, None]) ** 2 / (m - 1) + (scale * ms_residual[:, None]) ** 2 / ((n - 1) * (m - 1)),
            0.0,
        )
        min_df = np.where(keep & (scale > 0), np.minimum(min_df, m - 1.0), min_df)
    variance = seed_term + item_term
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(variance > 0, np.maximum(variance**2 / df_denominator, min_df), np.inf)
    return mean, np.sqrt(variance), df


def crossed_interval(item_diffs: Sequence[np.ndarray], weights: np.ndarray, confidence: float) -> np.ndarray:
    """The crossed seeds x items interval ``(P * M, 2)``, rows comparison-major and measure-minor."""
    mean, se, df = crossed_components(item_diffs, weights)
    half = stats.t.ppf(0.5 + confidence / 2, df) * se
    return np.stack([mean - half, mean + half], axis=2).reshape(-1, 2)
