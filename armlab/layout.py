"""An experiment's results folder, spelled once: every stage that writes or reads a path of it takes it from here.

``results/<experiment>/`` holds::

    config/<stage>.json, config/train/<arm>.json   the stage views of the config (armlab.views)
    data/, lm_eval_tasks/                          the tasks, and their lm-eval task folders
    base/, base_hf/                                the base policy (and its Hugging Face export)
    runs/<arm>/seed-<seed>/                        a training job: steps.parquet, manifest.json, its checkpoint(s);
                                                   or the record of a run made elsewhere (checkpoints.json)
    evals/<arm>/seed-<seed>/                       its evaluation: scores.parquet, results.json, manifest.json
    curves/<arm>/seed-<seed>/                      the evaluations of the models it kept (learning_curves)
    scores.parquet, analysis/, report/, figures/   the merged scores, and what is made of them
    verifiers/<verifier>/                          the evaluations' answers re-graded under other verifiers (rescore),
    analysis/verifier_sensitivity.csv              and each verdict beside the configured one
    predictions/lock.json                          the preregistered predictions, locked before the first job
    sequential/design.json, sequential/looks.jsonl a sequential design's lock and its record of looks
    logs/<log stage>/<arm>/seed-<seed>.log         each job's log (log stages train, eval, curves)
"""

from __future__ import annotations

from pathlib import Path

RESULTS = "results"
# the stages with one folder per run (arm, seed), and the log folder of each
JOB_STAGES = ("runs", "evals", "curves")
LOG_STAGE = {"runs": "train", "evals": "eval", "curves": "curves"}
SEED_PREFIX = "seed-"
RESCORED = "verifiers"  # armlab rescore's output folder
GRADER_SENSITIVITY = "analysis/verifier_sensitivity.csv"  # and its table, beside the analysis's
PREDICTIONS_LOCK = "predictions/lock.json"
DESIGN_LOCK = "sequential/design.json"
LOOKS_LEDGER = "sequential/looks.jsonl"
# the record of a run made elsewhere (backend checkpoints): its checkpoints' folders, files and sha256, beside the run
# manifest that summarizes it (training/backends/checkpoints.py writes it, the evaluation and the report read it)
CHECKPOINT_RECORD = "checkpoints.json"


def experiment_dir(experiment: str) -> str:
    """``results/<experiment>``, relative to the folder the workflow runs in."""
    return f"{RESULTS}/{experiment}"


def job_dir(out: str | Path, stage: str, arm: object, seed: object) -> str:
    """The folder of run (arm, seed) in ``stage`` of the experiment folder ``out``; with ``"{arm}"`` and
    ``"{seed}"`` it is a Snakemake output pattern."""
    return f"{out}/{stage}/{arm}/{SEED_PREFIX}{seed}"


def job_log(out: str | Path, stage: str, arm: object, seed: object) -> str:
    """The log file of run (arm, seed)'s job in ``stage`` (runs, evals or curves)."""
    return f"{out}/logs/{LOG_STAGE[stage]}/{arm}/{SEED_PREFIX}{seed}.log"


def job_dirs(out: str | Path, stage: str) -> list[Path]:
    """Every run folder of ``stage`` under ``out`` (``<stage>/<arm>/seed-*``), sorted; folders only."""
    return sorted(p for p in Path(out).glob(f"{stage}/*/{SEED_PREFIX}*") if p.is_dir())


def job_files(out: str | Path, stage: str, name: str) -> list[Path]:
    """File ``name`` of every run folder of ``stage`` under ``out`` (``<stage>/<arm>/seed-*/<name>``), sorted."""
    return files_of_runs(Path(out) / stage, name)


def files_of_runs(folder: str | Path, name: str) -> list[Path]:
    """File ``name`` of every run folder in ``folder`` (a stage's folder: ``<arm>/seed-*/<name>``), sorted."""
    return sorted(Path(folder).glob(f"*/{SEED_PREFIX}*/{name}"))


def run_of(folder: str | Path) -> tuple[str, str]:
    """``(arm, seed as written)`` of a run folder ``<arm>/seed-<seed>``; the seed is the caller's to parse."""
    folder = Path(folder)
    return folder.parent.name, folder.name.removeprefix(SEED_PREFIX)


def is_run_folder(folder: str | Path) -> bool:
    """Whether ``folder`` is named like a run folder (``seed-...``)."""
    return Path(folder).name.startswith(SEED_PREFIX)
