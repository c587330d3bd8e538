"""The contamination screen: does an arm gain more over its reference on a benchmark's items than on fresh items of
the same kind?

A gain on published items that does not carry over to fresh items drawn the same way is the signature of leakage
(ConStat, arXiv 2405.16281, compares a model's score on a benchmark with its score on a rephrased or fresh one of
the same kind). A benchmark with a procedural twin (``benchmarks.<b>.twin``, ``eval.external.<b>.twin``) is evaluated
beside its twin ``<b>__twin`` in the same evaluation jobs, every answer drawn from the same streams as the arms'.
Per run and benchmark, m = accuracy on b − accuracy on its twin; seed by seed, an arm's difference from its
reference on m is

    d_s = (gain on b at seed s) − (gain on its twin at seed s),   gain = arm − reference,

tested by the analysis's own paired comparison (:func:`armlab.analysis.comparisons.paired.compare_screen`: the exact
sign-flip test and interval, Holm across the family's arms on the pooled row, the benchmarks gatekept behind it), in a
family of tests of its own. The pooled row weighs the benchmarks with a twin like the primary summary (renormalized over
them). A row is ``flagged`` where the test rejects and the gain on the benchmark exceeds the gain on its twin (a gain
that does not carry over); a difference of the other sign is shown, never flagged. ``contamination.csv``
(docs/contracts.md); the report card's contamination item and the report's section read it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from armlab.analysis.comparisons import paired
from armlab.contract import RUN, published_name, twin_name

if TYPE_CHECKING:
    from armlab.analysis.config import Comparison
    from armlab.analysis.settings import Settings

COLUMNS = [
    "family", "arm", "reference", "level", "benchmark", "n_seeds", "n_items", "n_twin_items", "gain", "twin_gain",
    "mean_diff", "ci_low", "ci_high", "ci_method", "p_value", "p_holm", "decision_level", "decision_low",
    "decision_high", "planted_leak", "flagged",
]  # fmt: skip


def twin_accuracy(twin_scores: pd.DataFrame) -> pd.DataFrame:
    """Each run's accuracy on each twin: index (arm, seed), one column per benchmark the twin is of."""
    found = twin_scores.groupby([*RUN, "benchmark"], observed=True)["score"].mean().unstack("benchmark")
    return found.rename(columns=published_name)


def planted_leaks(runs: Mapping[tuple[str, int], dict]) -> dict[str, dict]:
    """Arm -> the planted leak its run manifests record (``leak``: share, copies, items; training/data.py
    ``arm_pools``)."""
    return {arm: manifest["leak"] for (arm, _), manifest in runs.items() if isinstance(manifest.get("leak"), dict)}


def screen(
    accuracy: pd.DataFrame,
    twin_scores: pd.DataFrame,
    item_counts: pd.Series,
    weights: pd.Series,
    summary: str,
    comparisons: Sequence[Comparison],
    settings: Settings,
    leaks: Mapping[str, Mapping] | None = None,
) -> pd.DataFrame:
    """The rows of ``contamination.csv`` (:data:`COLUMNS`): every (family, arm) on the pooled row ``summary`` and on
    each benchmark whose twin every compared run was evaluated on. ``accuracy``: runs x benchmarks; ``twin_scores``:
    the tidy rows of the twins (benchmark ``<b>__twin``); ``item_counts``: items per benchmark and twin;
    ``weights``: the primary summary's benchmark weights; ``leaks``: each planted control's leak (its share is shown).
    A header only where no benchmark has such a twin."""
    if not len(twin_scores):
        return pd.DataFrame(columns=COLUMNS)
    compared = list(dict.fromkeys(name for c in comparisons for name in (c.reference, *c.arms)))
    twins = twin_accuracy(twin_scores).reindex(accuracy.index)
    in_comparison = accuracy.index.get_level_values("arm").isin(compared)
    present = [b for b in accuracy.columns if b in twins.columns and twins.loc[in_comparison, b].notna().all()]
    if not present or not in_comparison.any():
        return pd.DataFrame(columns=COLUMNS)
    share = weights.reindex(present).fillna(0.0)
    share = share / share.sum() if share.sum() > 0 else pd.Series(1.0 / len(present), index=present)
    both = {"published": accuracy[present], "twin": twins[present]}
    pooled = {side: (frame @ share).rename(summary) for side, frame in both.items()}
    sides = {side: pd.concat([pooled[side], frame], axis=1) for side, frame in both.items()}
    values = sides["published"] - sides["twin"]
    levels = {name: "summary" if i == 0 else "benchmark" for i, name in enumerate(values.columns)}
    table = paired.compare_screen(
        values, comparisons, settings, levels=levels, higher_is_better=dict.fromkeys(levels, True)
    )
    gains = {
        side: {
            (pair.family, pair.arm, measure): value
            for pair in paired.paired_differences(frame, comparisons)
            for measure, value in pair.diffs.mean().items()
        }
        for side, frame in sides.items()
    }
    cells = list(zip(table["family"], table["arm"], table["measure"]))
    return pd.DataFrame(
        {
            **paired.screen_fields(table),
            "n_items": [_items(item_counts, present, b, twin=False) for b in table["measure"]],
            "n_twin_items": [_items(item_counts, present, b, twin=True) for b in table["measure"]],
            "gain": [gains["published"][cell] for cell in cells],
            "twin_gain": [gains["twin"][cell] for cell in cells],
            "planted_leak": [(leaks or {}).get(arm, {}).get("share", float("nan")) for arm in table["arm"]],
            "flagged": table["reject"].astype(bool) & (table["mean_diff"] > 0),
        }
    )[COLUMNS]


def _items(counts: pd.Series, present: list[str], benchmark: str, twin: bool) -> int:
    """Items of a benchmark (or of its twin), or of all ``present`` ones for the pooled row."""
    names = [benchmark] if benchmark in present else present
    return int(sum(counts.get(twin_name(name) if twin else name, 0) for name in names))


def flagged_lines(table: pd.DataFrame) -> list[str]:
    """One line per flagged row: the cell, both gains and their difference in points, Holm's p."""
    return [
        f"{r.family}: {r.arm} vs {r.reference} on {r.benchmark}: gain {100 * r.gain:+.2f} points on its items, "
        f"{100 * r.twin_gain:+.2f} on the twins (difference {100 * r.mean_diff:+.2f}, Holm p {r.p_holm:.3g})"
        for r in table[table["flagged"].astype(bool)].itertuples()
    ]
