"""Step logs from elsewhere (``armlab steps``): a training run's per-step log as armlab's ``steps.parquet``.

Four sources, one registry (:data:`STEP_LOGS`): TRL's ``trainer_state.json`` (its ``log_history``), a Weights &
Biases run history exported with its API (``run.history()`` or ``scan_history()`` saved as CSV, or as JSON lines), a
generic ``metrics.jsonl`` (one JSON object per step), and armlab's own ``steps.parquet``. Each gives one row per
step: ``step`` (a whole number >= 0, each once), then every quantity that is a number (or missing) in every row,
named as the builtin trainer names it where it records the same (TRL's names through
:data:`armlab.contract.TRL_STEP_NAMES`), the others under their own names; a quantity that holds text or lists
somewhere is left out and said. ``fields`` renames: armlab's name -> the source's (``{"step": "global_step",
"reward": "train/reward"}``); a field named there must be in the log, and a number in every row. The report's
training curves (``armlab report --runs``) read the result.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs.reading import json_file, json_lines, read_csv, regular_input
from armlab.contract import TRL_STEP_NAMES
from armlab.files import file_sha256, json_number, output_directory, write_manifest
from armlab.layout import SEED_PREFIX
from armlab.limits import DEFAULT_LIMITS
from armlab.registry import Registry

STEP = "step"
MAX_STEP = 2**53  # the largest step a float (JSON's and CSV's numbers) holds exactly
WANDB_PREFIX = "train/"  # the section TRL (and most trainers) log training quantities under in W&B
STEPS_FILE = "steps.parquet"
IDENTITY = ("experiment", "arm", "seed")  # the run a steps.parquet belongs to: its first columns

# one record of a step log: where it is (file and line or index, for errors) and its fields
Record = tuple[str, Mapping[str, Any]]


def trl_state(path: Path, limits: Mapping[str, int]) -> tuple[list[Record], dict[str, str]]:
    """TRL's ``trainer_state.json``: the ``log_history`` entries that carry a reward (TRL's training steps; the
    others are evaluations and the run's summary), under TRL's ``step``."""
    state = json_file(path, "TRL trainer state", limits)
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise AnalysisInputError(f"{path}: expected a JSON object with a 'log_history' list, as TRL's Trainer writes")
    records: list[Record] = []
    for index, entry in enumerate(history):
        if not isinstance(entry, dict):
            raise AnalysisInputError(f"{path}: log_history[{index}] is {entry!r}; expected a JSON object")
        if "reward" in entry:
            records.append((f"{path} log_history[{index}]", entry))
    return records, dict(TRL_STEP_NAMES)


def wandb_history(path: Path, limits: Mapping[str, int]) -> tuple[list[Record], dict[str, str]]:
    """A W&B run history: ``run.history().to_csv(...)`` (a ``.csv``) or JSON lines, one row per logged step, its
    step in ``_step``; names lose the ``train/`` section TRL logs under, then TRL's become armlab's."""
    if path.suffix == ".csv":
        frame = read_csv(path, "W&B run history", limits=limits)
        # the row numbers pandas writes first unless told index=False (run.history().to_csv(path)): not a quantity
        frame = frame.drop(columns=[c for c in frame.columns if c == "" or c.startswith("Unnamed: ")])
        rows = frame.to_dict("records")
        records: list[Record] = [(f"{path} line {i + 2}", _csv_cells(row)) for i, row in enumerate(rows)]
    else:
        records = [(where, row) for _, where, row in json_lines(path, "W&B run history", "one logged step", limits)]
    names = {key: key.removeprefix(WANDB_PREFIX) for _, row in records for key in row if key.startswith(WANDB_PREFIX)}
    names = {key: TRL_STEP_NAMES.get(name, name) for key, name in names.items()}
    return records, {"_step": STEP, **names}


def metrics_jsonl(path: Path, limits: Mapping[str, int]) -> tuple[list[Record], dict[str, str]]:
    """A ``metrics.jsonl``: one JSON object per step, names as written (map them with ``fields``)."""
    return [(where, row) for _, where, row in json_lines(path, "metrics log", "one step's metrics", limits)], {}


def armlab_steps(path: Path, limits: Mapping[str, int]) -> tuple[list[Record], dict[str, str]]:
    """armlab's own ``steps.parquet`` (a run of another armlab experiment, docs/contracts.md): its rows under its
    names, without the run's experiment, arm and seed; a missing value (NaN) is missing."""
    path = regular_input(path, "armlab step log", limits)
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as exc:  # pyarrow's errors for a file that is not parquet
        raise AnalysisInputError(f"{path}: not a parquet step log ({str(exc).splitlines()[0]})") from None
    rows = frame.drop(columns=[c for c in IDENTITY if c in frame.columns]).to_dict("records")
    return [
        (f"{path} row {i}", {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()})
        for i, row in enumerate(rows)
    ], {}


@dataclass(frozen=True)
class StepLog:
    """A source of step logs: how to read one file into records and the source's own renames."""

    read: Callable[[Path, Mapping[str, int]], tuple[list[Record], dict[str, str]]]
    file: str  # what the file is, for `armlab steps --help`


STEP_LOGS: Registry[StepLog] = Registry(
    "step log",
    {
        "trl": StepLog(trl_state, "TRL's trainer_state.json"),
        "wandb": StepLog(wandb_history, "a W&B run history (API export, CSV or JSON lines)"),
        "jsonl": StepLog(metrics_jsonl, "a metrics.jsonl, one JSON object per step"),
        "armlab": StepLog(armlab_steps, "armlab's own steps.parquet (a run of another armlab experiment)"),
    },
)


def _csv_cells(row: Mapping[str, str]) -> dict[str, Any]:
    """A CSV row's cells as values: empty is missing, a number is a number, other text stays text."""
    values: dict[str, Any] = {}
    for key, cell in row.items():
        try:
            values[key] = float(cell) if cell != "" else None
        except ValueError:
            values[key] = cell
    return values


def _value(value: Any) -> float | None:
    """A step log's cell as a float (missing: NaN), or None when it is not a number."""
    if value is None:
        return math.nan
    if isinstance(value, bool):
        return float(value)
    return json_number(value) if isinstance(value, (int, float)) else None


def step_frame(
    records: list[Record], renames: Mapping[str, str], fields: Mapping[str, str], path: Path
) -> tuple[pd.DataFrame, list[str]]:
    """``(steps, names left out)``: one row per record, ``step`` first and sorted (see the module docstring)."""
    renames = {**renames, **{source: name for name, source in fields.items()}}
    present = {key for _, row in records for key in row}
    for name, source in fields.items():
        if source not in present:
            raise AnalysisInputError(f"{path}: no field {source!r} (given for {name}); fields: {sorted(present)[:20]}")
    if STEP not in {renames.get(key, key) for key in present}:
        raise AnalysisInputError(f"{path}: no {STEP!r} field; name the field that counts steps: --field step=<field>")
    columns: dict[str, dict[int, float]] = {}
    left_out: set[str] = set()
    seen: dict[int, str] = {}
    for where, row in records:
        named = {renames.get(key, key): value for key, value in row.items()}
        # true/false count as 1/0 for a quantity, never for the step; a step is exact in a float and in the parquet
        step = None if isinstance(named.get(STEP), bool) else _value(named.get(STEP))
        if step is None or not (math.isfinite(step) and step.is_integer() and 0 <= step <= MAX_STEP):
            raise AnalysisInputError(f"{where}: {STEP} is {named.get(STEP)!r}; expected a whole number from 0 to 2**53")
        if int(step) in seen:
            raise AnalysisInputError(f"{where}: {STEP} {int(step)} again (first at {seen[int(step)]}); one row a step")
        seen[int(step)] = where
        for name, raw in named.items():
            value = _value(raw)
            if value is None:
                if name in fields or name == STEP:
                    raise AnalysisInputError(f"{where}: {name} is {raw!r}; expected a number")
                left_out.add(name)
            elif name != STEP:
                columns.setdefault(name, {})[int(step)] = value
    steps = sorted(seen)
    frame = pd.DataFrame(
        {STEP: steps, **{n: [c.get(s, math.nan) for s in steps] for n, c in columns.items() if n not in left_out}}
    )
    return frame, sorted(left_out)


def with_identity(frame: pd.DataFrame, experiment: str, arm: str, seed: int) -> pd.DataFrame:
    """A step log's steps as a run's ``steps.parquet``: the run's experiment, arm and seed first."""
    identity = pd.DataFrame(dict(zip(IDENTITY, (experiment, arm, seed))), index=frame.index)
    return pd.concat([identity, frame], axis=1)


def read_step_log(
    kind: str, path: Path | str, fields: Mapping[str, str], limits: Mapping[str, int] = DEFAULT_LIMITS
) -> tuple[pd.DataFrame, list[str]]:
    """One run's step log of ``kind`` (:data:`STEP_LOGS`): its steps (:func:`step_frame`) and the names left out."""
    source = STEP_LOGS.entry(kind, "armlab steps: kind", AnalysisInputError)
    records, renames = source.read(Path(path), limits)
    if not records:
        raise AnalysisInputError(f"{path}: no step in the log; expected one row per training step")
    return step_frame(records, renames, fields, Path(path))


def import_steps(
    kind: str,
    runs: list[tuple[str, int, Path]],
    experiment: str,
    fields: Mapping[str, str],
    out: Path | str,
    limits: Mapping[str, int] = DEFAULT_LIMITS,
) -> list[str]:
    """Write ``out/<arm>/seed-<seed>/steps.parquet`` and its manifest for every run's step log, ``out`` replaced as
    a whole (armlab.files.output_directory) once every log has been read; returns a line per run."""
    STEP_LOGS.entry(kind, "armlab steps: kind", AnalysisInputError)  # an unknown kind before any file is read
    read = []
    for arm, seed, path in runs:
        frame, left_out = read_step_log(kind, path, fields, limits)
        read.append((arm, seed, Path(path), with_identity(frame, experiment, arm, seed), left_out))
    lines = []
    with output_directory(out, "steps") as tmp:
        for arm, seed, path, frame, left_out in read:
            folder = tmp / arm / f"{SEED_PREFIX}{seed}"
            folder.mkdir(parents=True)
            frame.to_parquet(folder / STEPS_FILE, index=False)
            record = {
                "experiment": experiment,
                "arm": arm,
                "seed": seed,
                "imported_from": {"kind": kind, "path": str(path), "sha256": file_sha256(path), "fields": dict(fields)},
            }
            write_manifest(folder, record, STEPS_FILE)
            skipped = f"; left out (not numbers): {left_out}" if left_out else ""
            quantities = frame.shape[1] - 4  # after experiment, arm, seed, step
            lines.append(
                f"{arm} seed {seed}: {len(frame)} steps, {quantities} quantit{'y' if quantities == 1 else 'ies'} "
                f"from {path}{skipped}"
            )
    return lines
