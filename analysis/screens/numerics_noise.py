"""Numerics as a variance component, and the verdicts it could change (docs/statistics.md, "Numerics as a variance
component").

A numerics control (``arms.<arm>.numerics``, :func:`armlab.configfile.numerics_controls`) is its reference run again
at the same seeds with the same random streams, under other numerics only (kernels, threads, batch size, engine), so
its paired difference from the reference is what numerics alone do: an A/A control. From the controls:

- :func:`with_numerics`: the variance components table gains the numerics component, ``var_numerics``: on a
  control's row its own (:func:`armlab.analysis.stats.sampling.numerics_mean_square` at its seeds), on every other
  row the controls' mean at that row's seeds, the variance numerics add to a mean difference of two arms (part of
  its training component: a run's numerics are one of the things a seed's run draws), and ``share_numerics``;
- :func:`flag_verdicts`: every comparison row gains the numerics spread of its measure (the largest absolute mean
  difference of a control on it), the room its verdict has (how far its difference can move before the verdict
  changes) and ``not_robust_to_numerics``: a verdict whose room is within the spread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from armlab.analysis import tables
from armlab.analysis.stats import sampling

COMPONENT_COLUMNS = ["var_numerics", "share_numerics", "numerics_controls"]
FLAG_COLUMNS = ["numerics_control", "numerics_spread", "numerics_room", "not_robust_to_numerics"]


def with_numerics(components: pd.DataFrame, pairs: Sequence, controls: Mapping[str, str]) -> pd.DataFrame:
    """``components`` (:func:`armlab.analysis.samples.sampled.components_table`, one row per pair of ``pairs``) with the
    numerics component of each row (:data:`COMPONENT_COLUMNS`); NaN without controls among the pairs.

    ``var_numerics`` is a variance of the row's mean difference, like ``var_training``: a control's own estimate of
    E[Δ²] over its seeds (:func:`~armlab.analysis.stats.sampling.numerics_mean_square`) divided by its seed count;
    another row's is the mean of the controls' estimates divided by its seed count. ``share_numerics`` is its share
    of the row's variance (the same denominator as the other shares; a part of ``share_training``), and
    ``numerics_controls`` how many controls' estimates the row's value comes from.
    """
    table = components.copy()
    own = {}
    for row, pair in zip(table.itertuples(), pairs):
        if pair.arm in controls and pair.reference == controls[pair.arm]:
            diffs = pair.diffs[row.measure].to_numpy()[None, :]
            own[row.Index] = float(sampling.numerics_mean_square(diffs, row.var_sampling)[0])
    pooled = float(np.mean(list(own.values()))) if own else np.nan
    mean_square = pd.Series([own.get(i, pooled) for i in table.index], index=table.index, dtype=float)
    table["var_numerics"] = mean_square / table["n_seeds"].astype(float)
    kept = sum(table[f"var_{name}"].clip(lower=0).fillna(0.0) for name in ("training", "items", "sampling"))
    table["share_numerics"] = (table["var_numerics"].clip(lower=0) / kept).where(kept > 0)
    table["numerics_controls"] = [1 if i in own else len(own) for i in table.index]
    return table


def flag_verdicts(comparisons: pd.DataFrame, controls: Mapping[str, str]) -> pd.DataFrame:
    """``comparisons`` with :data:`FLAG_COLUMNS`: whether the row's arm is a numerics control; the numerics spread of
    its measure, the largest absolute mean difference of a control from its reference on it (NaN on a control's row
    and without controls); the room of its verdict, how far its difference can move before the verdict changes:

    - better or worse: the bound of the decision interval (the test's interval at Holm's level) nearest 0;
    - equivalent: the equivalence margin less the larger absolute bound of the equivalence interval;
    - inconclusive: NaN (no claim to lose);

    and ``not_robust_to_numerics``: room <= spread. A control's mean difference is the shift that numerics alone
    gave a difference between two runs at these seeds; a verdict whose room is within the largest such shift could
    have been reached, or lost, by a change of numerics.
    """
    table = comparisons.copy()
    control = table["arm"].isin(list(controls)).to_numpy()
    spread = table[control].groupby("measure")["mean_diff"].apply(lambda d: d.abs().max())
    verdict = tables.verdicts(table) if len(table) else np.array([], dtype=str)
    nearest = np.minimum(table["decision_low"].abs(), table["decision_high"].abs())
    inside = table["equivalence_margin"] - np.maximum(table["eq_low"].abs(), table["eq_high"].abs())
    room = np.select([np.isin(verdict, ["better", "worse"]), verdict == "equivalent"], [nearest, inside], np.nan)
    table["numerics_control"] = control
    table["numerics_spread"] = np.where(control, np.nan, table["measure"].map(spread).astype(float))
    table["numerics_room"] = np.where(control, np.nan, room)
    table["not_robust_to_numerics"] = (table["numerics_room"] <= table["numerics_spread"]).to_numpy()
    return table


def notes(comparisons: pd.DataFrame, components: pd.DataFrame, controls: Mapping[str, str]) -> list[str]:
    """The analysis's note on the numerics controls: what they measured and which verdicts lie within it."""
    if not controls or not len(comparisons):
        return []
    first = comparisons[comparisons["ci_method"] == comparisons["ci_method"].iloc[0]]
    primary = first[first["stage"] == "primary"]
    note = f"Numerics controls {', '.join(f'{arm} (of {ref})' for arm, ref in controls.items())} repeat their " + (
        "reference under other numerics only"
    )
    spread = primary["numerics_spread"].dropna()
    if len(spread):
        note += f"; their largest difference on {primary['measure'].iloc[0]} is {100 * spread.max():.2f} points"
    treated = components.loc[~components["arm"].isin(list(controls)), "var_numerics"].dropna()
    if len(treated):
        note += (
            f", and numerics alone put at most {100 * treated.clip(lower=0).max() ** 0.5:.2f} points of standard "
            f"error on a compared arm's mean difference"
        )
    flagged = first[tables.not_robust(first)]
    if len(flagged):
        note += f". Not robust to numerics ({len(flagged)} verdict(s) within that spread): " + "; ".join(
            f"{r.family}: {r.arm} on {r.measure}" for r in flagged.itertuples()
        )
    return [note + "."]
