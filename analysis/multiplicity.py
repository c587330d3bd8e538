"""Family-wise error control: Holm's step-down procedure and what a design can reach."""

import gc

import numpy as np
from statsmodels.stats.multitest import multipletests


def holm(pvalues, alpha):
    """Holm-adjusted p-values and reject flags at ``alpha`` (Holm 1979, Scand. J. Statist. 6).

    Calls statsmodels ``multipletests(..., method="holm")``; its default
    method is Holm-Sidak, so the method is always passed.
    """
    pvalues = np.asarray(pvalues, dtype=float)
    if pvalues.size == 0:
        return np.array([], dtype=bool), np.array([])
    # statsmodels' Holm branch calls gc.collect(), a full pass over every object the imports
    # created (~50 ms); freezing them first (O(1), undone right after) makes the pass trivial
    gc.freeze()
    try:
        reject, adjusted, _, _ = multipletests(pvalues, alpha=alpha, method="holm")
    finally:
        gc.unfreeze()
    return reject, adjusted


def min_attainable_p(p_min, k):
    """Smallest Holm-adjusted p among k tests when no single p can go below ``p_min``: min(1, k * p_min).

    With an exact sign-flip test on n seeds p_min = 2/2^n, so this is the
    DESIGN.md bound k * 2 / 2^n.
    """
    return np.minimum(1.0, k * np.asarray(p_min, dtype=float))


def attainability_statement(n, k, p_min, alpha, family):
    """Plain words on whether n seeds can reach ``alpha`` in a family of k comparisons, or ``None``."""
    bound = float(min_attainable_p(p_min, k))
    if bound <= alpha:
        return None
    single = (
        f"even a single comparison cannot give p below {p_min:.3g}"
        if p_min > alpha
        else f"a single comparison could reach p = {p_min:.3g}, but not after Holm over {k}"
    )
    return (
        f"Family {family}: with {n} seeds an exact sign-flip test has {2 ** n} sign patterns, so {single}; "
        f"the smallest Holm-adjusted p over its {k} comparison(s) is {bound:.3g} > alpha = {alpha}. "
        f"No result in this family can be significant at alpha whatever the data, so 'not significant' "
        f"here is not evidence of no effect; more seeds are needed."
    )
