"""Simultaneous inference over the evaluated steps of paired learning curves.

``diffs`` is an ``(n, T)`` array: for each of n matched seeds, the arm's value minus the reference's at each of T
evaluated checkpoints. Both functions hold over all T steps at once, so "the arm is ahead at some step" is claimed
with the family-wise error rate of one test, not T.

- :func:`t_band`: the mean difference at every step with a band that covers the whole true difference curve with
  probability >= the confidence (paired t intervals, Bonferroni over the steps).
- :func:`max_t_sign_flip`: per step, a p-value adjusted for testing every step (the single-step max-statistic
  sign-flip test), exact under the sharp null that each seed's curve of differences is symmetric about 0.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy import stats

from armlab.analysis.errors import AnalysisInputError
from armlab.spec import DEFAULT_ANALYSIS as ANALYSIS  # every default a keyword below takes

_BLOCK_CELLS = 1 << 21  # sign patterns x steps evaluated at once (16 MB)


def _checked(diffs: np.ndarray, ndim: tuple[int, ...] = (2,)) -> np.ndarray:
    """``diffs`` as floats, refused unless finite, of an allowed rank, with >= 2 seeds (axis -2) and >= 1 step."""
    diffs = np.asarray(diffs, dtype=float)
    if diffs.ndim not in ndim or diffs.shape[-2] < 2 or diffs.shape[-1] < 1 or not np.isfinite(diffs).all():
        raise AnalysisInputError(
            f"curve differences: expected a finite (seeds >= 2, steps >= 1) array, got shape {diffs.shape}"
        )
    return diffs


def t_band(diffs: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Simultaneous band (low, high) per step: paired t intervals at level 1 - (1 - confidence) / T each.

    Bonferroni's inequality over the T steps (Dunn 1961, JASA 56) makes the band cover every step's true mean
    difference at once with probability >= ``confidence`` when the differences are normal, whatever the
    dependence between steps; the max-statistic calibrations that use the estimated correlation over steps
    under-cover at 3-5 seeds (docs/statistics.md). ``diffs`` may stack many curves: ``(..., n, T)``.
    """
    diffs = _checked(diffs, ndim=(2, 3))
    n, steps = diffs.shape[-2:]
    mean, se = diffs.mean(axis=-2), diffs.std(axis=-2, ddof=1) / np.sqrt(n)
    half = stats.t.ppf(1 - (1 - confidence) / (2 * steps), n - 1) * se
    return mean - half, mean + half


def sign_patterns(
    n: int, max_exact: int, resamples: int, rng: np.random.Generator | None, rows: int | None = None
) -> Iterator[np.ndarray]:
    """Sign patterns of n seeds in blocks of at most ``rows`` (all at once by default), the identity first: all 2^n
    up to ``max_exact`` seeds, else the identity and ``resamples`` random ones (each seed flipped with probability
    1/2)."""
    if n <= max_exact:
        total = 2**n
        rows = rows or total
        for start in range(0, total, rows):
            codes = np.arange(start, min(start + rows, total))
            yield 1.0 - 2.0 * ((codes[:, None] >> np.arange(n)) & 1)
        return
    if rng is None:
        raise AnalysisInputError("max-statistic sign-flip test: beyond max_exact the drawn patterns need a generator")
    drawn = np.vstack([np.ones(n), np.where(rng.random((resamples, n)) < 0.5, -1.0, 1.0)])
    rows = rows or len(drawn)
    for start in range(0, len(drawn), rows):
        yield drawn[start : start + rows]


def max_t_sign_flip(
    diffs: np.ndarray,
    *,
    max_exact: int = ANALYSIS.exact_max_seeds,
    resamples: int = ANALYSIS.sign_flip_resamples,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Per step, the p-value of mean difference = 0 adjusted for all T steps (single-step maxT, Westfall & Young 1993,
    Resampling-Based Multiple Testing, sec. 2.6), by flipping the signs of whole seeds.

    Each step's statistic is |sum_s d_s| / sqrt(sum_s d_s^2), an increasing function of its paired |t| that every
    sign pattern leaves the denominator of; a step's adjusted p is the share of patterns whose largest statistic
    over the steps reaches the step's observed one. A pattern flips a seed's whole curve, so the dependence between
    steps is kept, and the family-wise error over the steps is at most alpha under any partial null where the null
    steps' differences are jointly symmetric (subset pivotality: each statistic reads its own step only). Beyond
    ``max_exact`` seeds, ``resamples`` drawn patterns and the identity: p = (b + 1) / (B + 1) (Phipson & Smyth 2010).
    Steps where every difference is 0 get p = 1.
    """
    diffs = _checked(diffs)
    n = diffs.shape[0]
    norm = np.sqrt((diffs**2).sum(axis=0))
    scale = np.where(norm > 0, norm, 1.0)
    observed = np.abs(diffs.sum(axis=0)) / scale
    rows = max(1, _BLOCK_CELLS // diffs.shape[1])  # patterns x steps per block: bounded memory at 20 seeds
    maxima = np.concatenate(
        [(np.abs(block @ diffs) / scale).max(axis=1) for block in sign_patterns(n, max_exact, resamples, rng, rows)]
    )
    tol = 1e-12 * np.maximum(observed, 1.0)  # equal sums in another order are ties, which count as reaching
    p = (maxima[None, :] >= (observed - tol)[:, None]).mean(axis=1)
    return np.where(norm > 0, p, 1.0)
