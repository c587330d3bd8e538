"""The checkpoints backend's run job: a run trained elsewhere, recorded instead of trained.

Finds the run's checkpoints as the workflow's start found them (training/backends/checkpoints.py ``locate``), reads
its step log with ``armlab steps``' readers (analysis/inputs/steps.py) into ``steps.parquet`` and, where the log
holds running totals under the compute ledger's names (:data:`armlab.contract.LEDGER`), into ``ledger.parquet``;
hashes every file of every checkpoint, streamed, into ``checkpoints.json``; and writes the run manifest the
evaluation reads. Nothing is written inside the checkpoints' folders. The job lives a layer above training because
the step-log readers are the analysis's inputs (tests/test_import_graph.py); with ``--path`` it records that one
folder as the run's checkpoint (arm base: ``checkpoints.base``, which rule record_base gives it).

    python -m armlab.experiment.record_checkpoints --config results/<exp>/config/train/<arm>.json --arm grpo \
        --seed 1 --out results/<exp>/runs/grpo/seed-1
    python -m armlab.experiment.record_checkpoints --config results/<exp>/config/eval.json --arm base --seed 0 \
        --path models/base --out results/<exp>/runs/base/seed-0
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from armlab import registration
from armlab.analysis.inputs.steps import STEPS_FILE, read_step_log, with_identity
from armlab.contract import BASE_ARM, LEDGER, LEDGER_FILE
from armlab.files import BadFile, atomic_path, environment_record, one_line_errors, write_manifest
from armlab.limits import DEFAULT_LIMITS
from armlab.training.backends import checkpoints
from armlab.training.utils import config_hash, run_arguments

NO_LEDGER = (
    "unavailable: the step log holds no running total under a ledger name ({names}; checkpoints.step_log.fields "
    "maps a log's own), so equal-compute comparisons leave this run out"
)


def ledger_of(steps: pd.DataFrame, path: Path) -> pd.DataFrame | None:
    """The compute ledger in a run's imported ``steps``: ``step`` and its columns named as the ledger's, each a
    running total (numbers >= 0 that never fall from one logged step to the next); None without any."""
    columns = [c for c in LEDGER if c in steps.columns]
    if not columns:
        return None
    ledger = steps[["step", *columns]]
    for column in columns:
        values = ledger[["step", column]].dropna()
        falls = np.flatnonzero(np.diff(values[column].to_numpy()) < 0)
        if (values[column] < 0).any() or len(falls):
            where = f" from step {values.step.iloc[falls[0]]} to {values.step.iloc[falls[0] + 1]}" if len(falls) else ""
            raise BadFile(
                f"{path}: {column} falls{where} or is negative; the ledger's columns are running totals (map a "
                f"running total to it with checkpoints.step_log.fields, or leave the name out)"
            )
    return ledger


def record(config: dict, arm: str, seed: int, out_dir: Path, path: Path | None = None) -> dict:
    """Record run (arm, seed)'s checkpoints (or the one folder ``path``) and step log in ``out_dir``; return the
    manifest written."""
    start = time.perf_counter()
    section = config["checkpoints"]
    limits = {**DEFAULT_LIMITS, **section.get("limits", {})}
    try:
        if path is not None:
            models = [checkpoints.base_model({"checkpoints": {"base": str(path)}}, limits)]
        else:
            models = checkpoints.locate(section, arm, seed, limits)
        log = None if path is not None else checkpoints.step_log_path(section, arm, seed)
        steps = ledger = log_record = None
        if log is not None:
            spec = section["step_log"]
            steps = read_step_log(spec["kind"], log, spec.get("fields", {}), limits)[0]
            ledger = ledger_of(steps, log)
            log_record = checkpoints.step_log_record(log, spec["kind"], spec.get("fields", {}))
        hashed = [checkpoints.hashed(model) for model in models]
    except ValueError as exc:  # the checks' ValueError, the step-log readers' AnalysisInputError: one line each
        raise BadFile(str(exc)) from None
    spec = {} if arm == BASE_ARM else config["arms"][arm]
    final = hashed[-1]
    manifest = {
        "experiment": config["experiment"],
        "arm": arm,
        "seed": seed,
        "backend": "checkpoints",
        "trained_elsewhere": True,  # its seconds are the recording's, not a training's (analysis/samples/sampled.py)
        "description": spec.get("description"),
        "recipe": spec.get("claims", {}),  # what the runs claim, for the report's recipe table
        "checkpoint": final["path"],
        "checkpoint_sha256": final["sha256"],
        "checkpoints": [{key: model[key] for key in ("step", "path", "sha256", "bytes")} for model in hashed],
        "step_log": log_record and {key: log_record[key] for key in ("kind", "path", "sha256")},
        "ledger": "the step log" if ledger is not None else NO_LEDGER.format(names=", ".join(LEDGER)),
        "config_hash": config_hash(config),
        "config": config,
    }
    with atomic_path(out_dir) as tmp:
        tmp.mkdir(parents=True)
        written = [checkpoints.write_record(tmp, hashed, log_record)]
        if steps is not None:
            with_identity(steps, config["experiment"], arm, seed).to_parquet(tmp / STEPS_FILE, index=False)
            written.append(STEPS_FILE)
        if ledger is not None:
            ledger.to_parquet(tmp / LEDGER_FILE, index=False)
            written.append(LEDGER_FILE)
        manifest |= {
            "seconds": time.perf_counter() - start,
            **environment_record(config["threads"]),
            **registration.record(out_dir),
        }
        write_manifest(tmp, manifest, *written)
    size = sum(model["bytes"] for model in hashed)
    print(f"[{arm} seed {seed}] recorded {len(hashed)} checkpoint(s), {size} bytes; final {final['path']}", flush=True)
    return manifest


@one_line_errors
def main(argv=None) -> None:
    config, args = run_arguments(__doc__.splitlines()[0], argv=argv, optional=("path",))
    record(config, args.arm, args.seed, args.out, args.path)


if __name__ == "__main__":
    main()
