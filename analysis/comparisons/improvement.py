"""Paired probability of improvement: how often an arm beats its reference on the same seed and benchmark.

rliable's probability of improvement (Agarwal et al. 2021, "Deep RL at the
Edge of the Statistical Precipice", NeurIPS; ``rliable.metrics``) is
unpaired: per task, the Mann-Whitney share of all (run of X, run of Y) pairs
with X > Y, ties 1/2, averaged over tasks. A seed-matched grid pairs the
runs, so armlab counts the matched pairs only, the diagonal of rliable's
run-by-run table: per family and arm,

    P = mean over matched seeds s and benchmarks b of 1(a_sb > r_sb) + 1/2 1(a_sb = r_sb),

with a and r the benchmark accuracies of the arm and its reference. With
w_s the seed's share over benchmarks, P = mean(w). Swapping arm and
reference within a seed turns w_s into 1 - w_s, so the exact sign-flip test
of w - 1/2 (``p_value``, unadjusted) is a randomization test of "arm and
reference are exchangeable within seeds"; the intervals are the
comparisons' (:mod:`armlab.analysis.stats.intervals`) for the mean of w, clipped to
[0, 1]. They assume w symmetric about P, which a bounded, discrete w is only
approximately; their coverage is not in the validity table. The table is
descriptive: the family's verdicts are the comparisons'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from armlab.analysis.comparisons import paired
from armlab.analysis.stats import intervals

if TYPE_CHECKING:
    from armlab.analysis.config import Comparison
    from armlab.analysis.settings import Settings

COLUMNS = [
    "family",
    "arm",
    "reference",
    "n_seeds",
    "n_benchmarks",
    "probability",
    "ci_low",
    "ci_high",
    "ci_method",
    "ci_level",
    "p_value",
    "note",
]


def seed_wins(diffs: pd.DataFrame | np.ndarray) -> np.ndarray:
    """Per seed, the share of benchmarks where the arm beats its reference, ties 1/2 (``diffs``: seeds x benchmarks)."""
    diffs = np.asarray(diffs, dtype=float)
    return ((diffs > 0) + 0.5 * (diffs == 0)).mean(axis=1)


def probability_of_improvement(
    accuracy: pd.DataFrame, comparisons: Sequence[Comparison], settings: Settings
) -> pd.DataFrame:
    """The paired probability of improvement of every (family, arm), one row per interval method (:data:`COLUMNS`).

    ``accuracy`` is runs (index arm, seed) x benchmarks. Runs not matched by
    seed (``analysis.pairing: unpaired``) get :func:`unpaired_probability`.
    """
    if settings.pairing == "unpaired":
        return unpaired_probability(accuracy, comparisons, settings.confidence)
    pairs = paired.paired_differences(accuracy, comparisons)
    by_n: dict[int, list[int]] = {}
    for i, pair in enumerate(pairs):
        by_n.setdefault(len(pair.diffs), []).append(i)
    found = {}
    for n, members in by_n.items():
        wins = np.stack([seed_wins(pairs[i].diffs) for i in members])
        block = intervals.Block(wins - 0.5, **settings.interval_options())
        methods = intervals.seed_intervals(block)
        for j, i in enumerate(members):
            found[i] = pd.DataFrame(
                [
                    {
                        "family": pairs[i].family,
                        "arm": pairs[i].arm,
                        "reference": pairs[i].reference,
                        "n_seeds": n,
                        "n_benchmarks": pairs[i].diffs.shape[1],
                        "probability": wins[j].mean(),
                        "ci_low": np.clip(0.5 + ci[j, 0], 0, 1),
                        "ci_high": np.clip(0.5 + ci[j, 1], 0, 1),
                        "ci_method": method,
                        "ci_level": settings.confidence,
                        "p_value": block.sign_flip["p_value"][j],
                        "note": note[j],
                    }
                    for method, (ci, note) in methods.items()
                ]
            )
    return pd.concat([found[i] for i in range(len(pairs))], ignore_index=True)[COLUMNS]


def unpaired_probability(accuracy: pd.DataFrame, comparisons: Sequence[Comparison], confidence: float) -> pd.DataFrame:
    """rliable's unpaired probability of improvement (Agarwal et al. 2021), one row per (family, arm), no interval.

    Per benchmark, the share of all (run of the arm, run of the reference)
    pairs where the arm scores higher, ties 1/2 (the Mann-Whitney U over
    n1 n2); the mean over benchmarks. Descriptive: no interval or p-value
    (rliable's stratified bootstrap is not exact at these run counts).
    """
    rows = []
    for comp in comparisons:
        ref = accuracy.loc[comp.reference].to_numpy()
        for arm in comp.arms:
            mine = accuracy.loc[arm].to_numpy()
            beats = mine[:, None, :] - ref[None, :, :]  # arm runs x reference runs x benchmarks
            rows.append(
                {
                    "family": comp.family,
                    "arm": arm,
                    "reference": comp.reference,
                    "n_seeds": len(mine),
                    "n_benchmarks": mine.shape[1],
                    "probability": ((beats > 0) + 0.5 * (beats == 0)).mean(),
                    "ci_low": np.nan,
                    "ci_high": np.nan,
                    "ci_method": "",
                    "ci_level": confidence,
                    "p_value": np.nan,
                    "note": f"unpaired: Mann-Whitney share over {len(mine)} x {len(ref)} runs, no interval",
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)
