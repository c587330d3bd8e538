"""Accuracy over training: every model one (arm, seed) run kept, scored as its evaluation scores its final model.

The models are the run's intermediate checkpoints (``checkpoints/step-NNNNNN.pt`` of the builtin trainer,
``checkpoints/step-NNNNNN/`` of the TRL backend, every ``recipe.checkpoint_every`` steps) and its final model, at
the recipe's last step; each is checked against the run's manifest first. Each is scored by lm-eval with the
experiment's eval settings and task configs (:func:`armlab.evals.run.score_checkpoint`), so the last step's rows
equal the run's evaluation. Writes ``scores.parquet`` (the tidy columns plus ``step``) and ``manifest.json`` to
``--out``.

    python -m armlab.evals.curves --config results/<exp>/config/eval.json --tasks results/<exp>/lm_eval_tasks \
        --run-manifest results/<exp>/runs/grpo/seed-1/manifest.json --arm grpo --seed 1 \
        --out results/<exp>/curves/grpo/seed-1
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import pandas as pd

from armlab import numerics, registration
from armlab.contract import LEDGER, LEDGER_FILE
from armlab.evals.run import MODELS, engine_model, named_checkpoint, score_checkpoint
from armlab.files import (
    BadFile,
    atomic_path,
    job_environment,
    one_line_errors,
    read_json,
    verify_manifest,
    write_manifest,
)
from armlab.training.backends.checkpoints import is_record, recorded_models

CHECKPOINT = re.compile(r"checkpoints/(step-(\d+)(?:\.pt)?)(?:/|$)")  # a kept model in a run manifest's files


def run_models(run_manifest: Path) -> list[tuple[int, Path]]:
    """(step, path) of every model a run kept, in step order: its intermediate checkpoints, then the final model
    (``policy.pt``, or the manifest's ``checkpoint``) at the recipe's last step; of a record of checkpoints made
    elsewhere, those it names at their steps. Every recorded sha256 is checked."""
    manifest = verify_manifest(run_manifest)
    if is_record(manifest):
        models = recorded_models(run_manifest)
        if any(model.step is None for model in models):
            raise BadFile(f"{run_manifest}: the final checkpoint's step is unknown; give checkpoints.final_step")
        return [(int(model.step), model.path) for model in models]  # type: ignore[arg-type]
    run_dir = run_manifest.parent.resolve()
    kept = {}
    for name in manifest["files"]:
        match = CHECKPOINT.match(name)
        if match:
            kept[int(match[2])] = run_dir / "checkpoints" / match[1]
    if not isinstance(manifest.get("recipe"), dict):
        raise BadFile(f"{run_manifest}: expected a training run's manifest, with its recipe")
    final = run_dir / "policy.pt" if "policy.pt" in manifest["files"] else named_checkpoint(run_manifest, manifest)
    return [*sorted(kept.items()), (manifest["recipe"]["steps"], final)]


def run_ledger(run_manifest: Path) -> pd.DataFrame:
    """The run's compute ledger (:data:`armlab.contract.LEDGER`) indexed by step; no columns for a run without
    one (the command backend's, a multi-process TRL run's, a run trained before armlab kept ledgers)."""
    recorded = LEDGER_FILE in read_json(run_manifest, "run manifest").get("files", {})  # its sha256 checked with it
    ledger = pd.read_parquet(run_manifest.parent / LEDGER_FILE) if recorded else pd.DataFrame({"step": []})
    return ledger.set_index("step")[[c for c in LEDGER if c in ledger]]


def learning_curve(config: dict, tasks_dir: Path, run_manifest: Path, arm: str, seed: int, model: str) -> pd.DataFrame:
    """The scores of every model of the run (:func:`run_models`), with the step it was kept at and the run's compute
    ledger at that step."""
    models, parts, ledger = run_models(run_manifest), [], run_ledger(run_manifest)
    for number, (step, checkpoint) in enumerate(models, 1):
        scores = score_checkpoint(config, tasks_dir, checkpoint, arm, seed, model, twins=False)[2]
        parts.append(scores.assign(step=step, **(ledger.loc[step].to_dict() if step in ledger.index else {})))
        print(f"[curve {arm} seed {seed}] {number}/{len(models)} step {step}: accuracy {scores.score.mean():.3f}")
    return pd.concat(parts, ignore_index=True)


@one_line_errors
def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--tasks", required=True, type=Path)
    parser.add_argument("--model", default="armlab-builtin", choices=sorted(MODELS))
    parser.add_argument("--run-manifest", required=True, type=Path)
    parser.add_argument("--arm", required=True)
    parser.add_argument("--seed", required=True, type=int)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    config, start = read_json(args.config, "config"), time.perf_counter()
    numerics.start_job(config)
    model = engine_model(config, args.model)
    curve = learning_curve(config, args.tasks, args.run_manifest, args.arm, args.seed, model)
    with atomic_path(args.out) as tmp:
        tmp.mkdir(parents=True)
        curve.to_parquet(tmp / "scores.parquet", index=False)
        record = {"experiment": config["experiment"], "arm": args.arm, "seed": args.seed, "lm_eval_model": model}
        record |= {"run_manifest": str(args.run_manifest), "steps": sorted(curve.step.unique().tolist())}
        run = read_json(args.run_manifest, "run manifest")
        if is_record(run):  # the checkpoints' sha256, compared with the record's at the workflow's next start
            record["checkpoints"] = [{"step": m["step"], "sha256": m["sha256"]} for m in run["checkpoints"]]
        write_manifest(
            tmp,
            record
            | {
                "seconds": time.perf_counter() - start,
                **job_environment(config),
                **registration.record(args.out),
            },
            "scores.parquet",
        )


if __name__ == "__main__":
    main()
