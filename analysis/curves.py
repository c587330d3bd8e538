"""Accuracy over training, from the checkpoint evaluations of evals/curves.py: per (arm, seed, step) each domain's
accuracy and the primary summary (the analysis's own summaries,
:func:`armlab.analysis.summaries.domain_summaries`), with the base policy at step 0, and their figure.

    armlab curves --curves results/<exp>/curves --scores results/<exp>/scores.parquet --out results/<exp>/curves_summary
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from armlab import layout
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.summaries import domain_summaries
from armlab.contract import BASE_ARM
from armlab.files import MANIFEST, verify_manifest

CURVE_COLUMNS = ["arm", "seed", "step", "summary", "value"]


def read_curves(paths: list[Path | str]) -> pd.DataFrame:
    """The checkpoint scores of the runs ``paths`` name: each a checkpoint evaluation's manifest.json, or a
    directory holding <arm>/seed-<seed>/manifest.json ones; every manifest is checked first."""
    manifests = []
    for path in map(Path, paths):
        manifests += layout.files_of_runs(path, MANIFEST) if path.is_dir() else [path]
    if not manifests:
        raise AnalysisInputError(
            f"{', '.join(map(str, paths))}: no checkpoint evaluation (<arm>/seed-<seed>/{MANIFEST})"
        )
    for manifest in manifests:
        verify_manifest(manifest)
    return pd.concat([pd.read_parquet(m.parent / "scores.parquet") for m in manifests], ignore_index=True)


def curve_summaries(curves: pd.DataFrame, base_scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """Long (arm, seed, step, summary, value): each domain's accuracy and the primary summary per run and step;
    ``base_scores`` (the base policy's evaluation) is every run's step 0."""
    per_step = [domain_summaries(group).assign(step=step) for step, group in curves.groupby("step", sort=True)]
    if base_scores is not None and len(base_scores):
        base = domain_summaries(base_scores).iloc[0]
        runs = curves[["arm", "seed"]].drop_duplicates().sort_values(["arm", "seed"])
        index = pd.MultiIndex.from_frame(runs)
        per_step.insert(0, pd.DataFrame([base.to_dict()] * len(index), index=index).assign(step=0))
    wide = pd.concat(per_step).reset_index()
    long = wide.melt(id_vars=["arm", "seed", "step"], var_name="summary", value_name="value")
    return long[CURVE_COLUMNS].sort_values(["summary", "arm", "seed", "step"], kind="stable", ignore_index=True)


def base_rows(scores_path: Path | str | None) -> pd.DataFrame | None:
    """The base policy's rows of a scores table (arm ``base``), or None without one."""
    if scores_path is None:
        return None
    scores = pd.read_parquet(scores_path)
    return scores[scores["arm"] == BASE_ARM]
