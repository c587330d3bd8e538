"""What the measured validity table says about the intervals and verdicts of a given design.

The numbers come from :mod:`armlab.analysis.design.validity_measured`, written by
``benchmarks/coverage_sim.py --update`` from simulations with known truth
(analysis/README.md shows the same table). The report's "descriptive only"
wording is derived from them: an interval whose measured coverage at the
design's seed count is more than :data:`TOLERANCE` below nominal is flagged,
with the measured coverage quoted (for normal differences). The sign-flip
and paired t intervals keep their coverage by construction (exact under
symmetric, resp. normal, differences) and the table confirms it at 3, 5, 8
and 12 seeds, so they are never flagged.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from armlab.analysis.design import validity_measured
from armlab.analysis.stats import resampling

if TYPE_CHECKING:
    import pandas as pd

    from armlab.analysis.settings import Settings

TOLERANCE = 0.015  # coverage this far below nominal is "too narrow"


def measured(quantity: str, what: str, n: int, noise: str = "normal") -> tuple[float, float | None] | None:
    """``(value, mc_error)`` measured at the largest seed count <= n (coverage grows with n), or ``None``.

    ``mc_error`` is None where the table records none."""
    rows = [r for r in validity_measured.ROWS if r[:3] == (quantity, what, noise) and r[3] <= n and r[4] is not None]
    if not rows:
        return None
    best = max(rows, key=lambda r: r[3])
    return best[4], best[5]


def coverage(method: str, n: int, confidence: float) -> float | None:
    """Measured coverage of a nominal ``confidence`` bootstrap interval at n seeds, normal differences, or None."""
    # the bootstrap intervals' coverage depends on n and is looked up; the exact ones (sign_flip, t) are nominal
    if method not in resampling.BOOTSTRAP or not math.isclose(confidence, validity_measured.SETTINGS["confidence"]):
        return None
    found = measured("coverage", method, n)
    return None if found is None else found[0]


def too_narrow(method: str, n: int, confidence: float) -> float | None:
    """The measured coverage when it is more than :data:`TOLERANCE` below ``confidence``, else ``None``."""
    cover = coverage(method, n, confidence)
    return cover if cover is not None and cover < confidence - TOLERANCE else None


def bootstrap_sentence(n: int, methods: Iterable[str], confidence: float) -> str | None:
    """A note naming the bootstrap intervals that are too narrow with n seeds and their coverage, or ``None``."""
    narrow = {m: too_narrow(m, n, confidence) for m in methods}
    narrow = {m: c for m, c in narrow.items() if c is not None}
    if not narrow:
        return None
    names, covers = " and ".join(narrow), " and ".join(f"{c:.0%}" for c in narrow.values())
    return (
        f"With {n} seeds the {names} interval(s) are too narrow: at nominal {100 * confidence:g}% they cover "
        f"about {covers} (measured for normal differences, analysis/README.md), so read them as descriptive; "
        f"the first interval, the sign-flip test's, keeps its coverage."
    )


def unbounded_sentence(n: int, confidence: float) -> str:
    """Why the sign-flip interval is unbounded with n seeds, and what the t interval (if asked for) is not."""
    return (
        f"With {n} seeds the exact sign-flip test cannot reject at {1 - confidence:.3g} (its smallest p is "
        f"{2.0 ** (1 - n):.3g}), so the set of differences it does not reject is the whole line: its interval "
        f"is shown as unbounded. A paired t interval (analysis.ci_methods: [t]) rests on normality, and whether "
        f"it excludes 0 is not the verdict's test."
    )


def unpaired_sentences(n: int, n_reference: int, rows: pd.DataFrame, settings: Settings) -> list[str]:
    """What the unpaired permutation test of n against n_reference runs can say (``rows``: its comparisons)."""
    splits = math.comb(n + n_reference, n)
    exact = splits <= 2.0**settings.exact_max_seeds
    sentences = [
        f"Unpaired (analysis.pairing: unpaired): {n} runs of an arm against {n_reference} of its reference, "
        f"compared as independent samples by the exact permutation test of the run-level scores (Pitman 1937; "
        + (f"all {splits} splits" if exact else f"{settings.sign_flip_resamples} random splits of {splits}")
        + "). Seed-to-seed variation is not cancelled by pairing, so the same effect needs more runs."
    ]
    if (rows["note"] != "").any():
        sentences.append(
            f"With {n} and {n_reference} unpaired runs the exact permutation test cannot reject at "
            f"{1 - settings.confidence:.3g} (its smallest p is {min(1.0, 2 / splits):.3g}), so its interval is "
            f"shown as unbounded."
        )
    return sentences


def unattainable_equivalence_sentence(
    n: int, alpha: float, margin: float, tests: int = 1, where: str = "", n_reference: int | None = None
) -> str:
    """Why no equivalence verdict is possible with n (enumerated) seeds, or n against n_reference unpaired runs,
    under the exact TOST at the first step of a Holm over ``tests`` comparisons (``where``: which ones)."""
    if n_reference is None:
        one_sided, sizes, test = 2.0**-n, f"{n} seeds", "exact sign-flip TOST"
        needed = f"; it needs at least {math.ceil(math.log2(tests / alpha))} seeds"
    else:
        one_sided, sizes, test = (
            1 / math.comb(n + n_reference, n),
            f"{n} and {n_reference} unpaired runs",
            ("permutation TOST"),
        )
        needed = ""
    level = f"α = {alpha:g}" if tests == 1 else f"α/{tests} = {alpha / tests:.3g} (Holm's first step over {tests})"
    return (
        f"With {sizes} equivalence within ±{100 * margin:g} point(s) is not attainable{where}: the {test}'s "
        f"smallest one-sided p is {one_sided:.3g} > {level} whatever the data, so its verdict is "
        f"'not attainable' rather than 'no'{needed}."
    )
