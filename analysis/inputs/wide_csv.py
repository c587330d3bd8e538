"""``input.kind: wide_csv``: one row per run, one column per benchmark (a paper's released table)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs.reading import read_csv
from armlab.contract import PER_BENCHMARK_ITEM
from armlab.limits import DEFAULT_LIMITS

if TYPE_CHECKING:
    from armlab.analysis.config import Config


def wide_csv_to_tidy(
    path: Path | str,
    *,
    experiment: str,
    benchmarks: dict[str, str],
    arm: str,
    seed: str,
    scale: str,
    columns: dict[str, str] | None = None,
    filters: list[dict] | None = None,
    limits: Mapping[str, int] = DEFAULT_LIMITS,
) -> pd.DataFrame:
    """Convert a wide per-run CSV (one column per benchmark) into tidy rows with item ``"*"`` (one sample each).

    ``benchmarks`` maps benchmark -> domain; ``columns`` maps benchmark -> CSV
    column where they differ. ``scale="percent"`` divides by 100. The index of
    the result names the CSV line and benchmark of each row, so validation
    errors point into the CSV.
    """
    path = Path(path)
    if not path.exists():
        raise AnalysisInputError(f"{path}: wide CSV not found (set input.path, e.g. --set input.path=FILE)")
    if scale not in ("percent", "fraction"):
        raise AnalysisInputError(f"{path}: input.scale: expected 'percent' or 'fraction', got {scale!r}")
    table = read_csv(path, "wide CSV", limits=limits)
    table.index = [f"{path.name} line {i + 2}" for i in range(len(table))]  # line 1 is the header
    columns = {b: (columns or {}).get(b, b) for b in benchmarks}
    arm_fields = re.findall(r"{(\w+)}", arm) or [arm]
    needed = {*columns.values(), seed, *arm_fields, *(k for f in filters or [] for k in f)}
    absent = sorted(needed - set(table.columns))
    if absent:
        raise AnalysisInputError(f"{path}: column(s) {absent} not found; the file has {list(table.columns)}")
    if filters:
        keep = np.zeros(len(table), dtype=bool)
        for spec in filters:
            match = np.ones(len(table), dtype=bool)
            for column, wanted in spec.items():
                wanted = wanted if isinstance(wanted, list) else [wanted]
                match &= table[column].isin([str(w) for w in wanted]).to_numpy()
            keep |= match
        table = table[keep]
        if table.empty:
            raise AnalysisInputError(f"{path}: input.filters {filters} match no rows")
    arms = table.apply(lambda r: arm.format(**r), axis=1) if "{" in arm else table[arm]
    divisor = 100.0 if scale == "percent" else 1.0
    parts = []
    for benchmark, column in columns.items():
        cells = table[column].str.strip()
        text = cells[(cells != "") & pd.to_numeric(cells, errors="coerce").isna()]
        if len(text):
            shown = ", ".join(f"{where} ({value!r})" for where, value in text.head(5).items())
            raise AnalysisInputError(
                f"{path}: column {column!r}: expected plain numbers ({scale}, e.g. 52.5 for "
                f"52.5%), got {shown}{' ...' if len(text) > 5 else ''}"
            )
        score = pd.to_numeric(table[column], errors="coerce").to_numpy() / divisor  # empty cells: NaN, reported
        outside = pd.Series((score < 0) | (score > 1), index=table.index)
        if outside.any():
            shown = ", ".join(f"{where} ({cells[where]!r})" for where in outside[outside].index[:5])
            hint = "" if scale == "percent" else "; a table in percent needs input.scale: percent"
            raise AnalysisInputError(
                f"{path}: column {column!r}: {shown}{' ...' if outside.sum() > 5 else ''} outside 0 to "
                f"{100 if scale == 'percent' else 1} (input.scale: {scale}){hint}"
            )
        parts.append(
            pd.DataFrame(
                {
                    "experiment": experiment,
                    "arm": arms.to_numpy(),
                    "seed": table[seed].to_numpy(),
                    "benchmark": benchmark,
                    "domain": benchmarks[benchmark],
                    "item": PER_BENCHMARK_ITEM,
                    "score": score,
                    "n_samples": np.ones(len(table), dtype=np.int64),  # an accuracy counts as one sample
                    "n_correct": score,
                },
                index=[f"{i} [{column}]" for i in table.index],
            )
        )
    return pd.concat(parts)


KEYS = frozenset({"path", "arm", "seed", "scale", "columns", "filters"})
REQUIRED_KEYS = frozenset({"path", "arm", "seed", "scale"})


def load(config: Config, spec: Mapping[str, Any]) -> tuple[pd.DataFrame, str]:
    """``input.kind: wide_csv`` (see :mod:`armlab.analysis.inputs`)."""
    filters = spec.get("filters")
    if filters is not None and not (isinstance(filters, list) and all(isinstance(f, dict) for f in filters)):
        raise AnalysisInputError(f"{config.source}: input.filters: expected a list of {{column: value}}")
    assert config.benchmarks is not None  # load_scores checked
    frame = wide_csv_to_tidy(
        spec["path"],
        experiment=config.experiment,
        benchmarks=config.benchmarks,
        arm=spec["arm"],
        seed=spec["seed"],
        scale=spec["scale"],
        columns=spec.get("columns"),
        filters=filters,
        limits=config.limits,
    )
    return frame, f"wide CSV {spec['path']}" + (f" filtered by {filters}" if filters else "")
