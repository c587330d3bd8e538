"""Family-wise error control over everything a family calls better or worse, and what a design can reach.

A family's cells are its arms x measures. The primary summary is tested
first, Holm across the family's arms at alpha; the secondary cells (the other
summaries and every benchmark, of every arm) are tested only when every
primary comparison is rejected, then by Holm over all of them at alpha
(serial gatekeeping). The procedure is a closed test, so the probability of
any false rejection anywhere in the family is at most alpha.
"""

from __future__ import annotations

import numpy as np


def holm(pvalues: np.ndarray | list[float], alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm-adjusted p-values and reject flags at ``alpha`` (Holm 1979, Scand. J. Statist. 6).

    Step-down: with the m p-values in increasing order, the i-th smallest (i = 1..m) is rejected while every one
    up to it has p_(i) <= alpha / (m - i + 1); its adjusted p is the running maximum of (m - i + 1) * p_(i), at
    most 1. The tests compare it with statsmodels' ``multipletests(..., method="holm")``.
    """
    pvalues = np.asarray(pvalues, dtype=float)
    if np.isnan(pvalues).any():
        raise ValueError(f"Holm needs a p-value for every test, got {pvalues.tolist()}")
    order = np.argsort(pvalues, kind="stable")
    multipliers = np.arange(pvalues.size, 0, -1)
    ranked = pvalues[order]
    within = ranked <= alpha / multipliers
    rejected = int(np.argmin(within)) if not within.all() else pvalues.size  # the step-down stops at the first miss
    reject, adjusted = np.empty(pvalues.size, dtype=bool), np.empty(pvalues.size)
    reject[order] = np.arange(pvalues.size) < rejected
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(ranked * multipliers))
    return reject, adjusted


def gatekept_holm(
    primary: np.ndarray | list[float], secondary: np.ndarray | list[float], alpha: float
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Serial gatekeeping: Holm on ``primary`` p-values, then Holm on ``secondary`` once all primaries reject.

    Returns ``(reject, adjusted)`` for the primaries and for the secondaries.
    A secondary's adjusted p is the larger of the largest primary Holm p and
    its own Holm p among the secondaries (Westfall & Krishen 2001, J. Stat.
    Plan. Inference 99; Dmitrienko, Offen & Westfall 2003, Stat. Med. 22).
    """
    primary_reject, primary_adjusted = holm(primary, alpha)
    _, secondary_adjusted = holm(secondary, alpha)
    gate = primary_adjusted.max() if len(primary_adjusted) else 0.0
    secondary_adjusted = np.maximum(secondary_adjusted, gate)
    return (primary_reject, primary_adjusted), (secondary_adjusted <= alpha, secondary_adjusted)


def min_attainable_p(p_min: np.ndarray | float, k: np.ndarray | int) -> np.ndarray:
    """Smallest Holm-adjusted p among k tests when no single p can go below ``p_min``: min(1, k * p_min).

    With an exact sign-flip test on n seeds p_min = 2/2^n, so this is the
    bound k * 2 / 2^n of docs/statistics.md. For the gatekept secondary cells of a family
    of k arms and m secondary cells it is min(1, max(k, m) * p_min).
    """
    return np.minimum(1.0, k * np.asarray(p_min, dtype=float))


def attainability_statement(
    n: int, k: int, p_min: float, alpha: float, family: str, design: str | None = None
) -> str | None:
    """Plain words on whether n seeds can reach ``alpha`` in a family of k primary comparisons, or ``None``.

    ``design`` replaces "with n seeds an exact sign-flip test has 2^n sign patterns" (unpaired runs).
    """
    bound = float(min_attainable_p(p_min, k))
    if bound <= alpha:
        return None
    single = (
        f"even a single comparison cannot give p below {p_min:.3g}"
        if p_min > alpha
        else f"a single comparison could reach p = {p_min:.3g}, but not after Holm over {k}"
    )
    return (
        f"Family {family}: {design or f'with {n} seeds an exact sign-flip test has {2**n} sign patterns'}, "
        f"so {single}; "
        f"the smallest Holm-adjusted p over its {k} comparison(s) is {bound:.3g} > alpha = {alpha}. "
        f"No result in this family can be significant at alpha whatever the data, so 'not significant' "
        f"here is not evidence of no effect; more seeds are needed."
    )


def secondary_attainability_statement(
    n: int, k: int, m: int, p_min: float, alpha: float, family: str, runs: str | None = None
) -> str | None:
    """Plain words on whether the family's m gatekept secondary cells can reach ``alpha``, or ``None``.

    ``runs`` replaces "n seeds" (unpaired runs).
    """
    bound = float(min_attainable_p(p_min, max(k, m)))
    if bound <= alpha:
        return None
    return (
        f"Family {family}: its {m} secondary summary and benchmark comparison(s) are tested only once all "
        f"{k} primary comparison(s) are significant, then with Holm over all {m}; with {runs or f'{n} seeds'} "
        f"their smallest adjusted p is {bound:.3g} > alpha = {alpha}, so none of them can be significant whatever "
        f"the data: read them as descriptive."
    )
