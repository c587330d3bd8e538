import json
import os
import shlex
import sys
from pathlib import Path

from analysis.config import parse_config as parse_analysis_config
from training.backends import backend_of, job_resources
from training.config import BASE_ARM, stage_config

# Jobs run `python` from PATH: the driver's own interpreter (its folder goes first on PATH here), or, under
# `--sdm conda`, the interpreter of the rule's conda environment (environment.yml), which Snakemake puts first.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
EXP = config["experiment"]
OUT = f"results/{EXP}"
# the runs (arm, seed): every arm at every seed, or, under a sequential design (workflows/rules/sequential.smk),
# those its looks asked for, known once the last look is written
ANALYSIS_CONFIG = parse_analysis_config(config)
SEQUENTIAL = ANALYSIS_CONFIG.design is not None
FIXED_RUNS = [] if SEQUENTIAL else [(arm, seed) for arm in config["arms"] for seed in config["seeds"]]
# the backend's registry entry (training/backends/__init__.py): its trainer, outputs, resources, lm-eval model
BACKEND = backend_of(config)
# the base policy is evaluated once, with the eval settings (greedy or k samples), as arm "base" with seed 0: the builtin backend
# trains it; the others have one only when their section names a Hugging Face checkpoint (trl.model, ...)
HF_BASE = BACKEND.base_checkpoint(config)
# trl.model: builtin_base: the builtin base policy is trained, exported to a Hugging Face checkpoint (rule export_base),
# every run starts from that export and arm base is the export, evaluated by the backend's lm-eval model
EXPORTS_BASE = BACKEND.exports_base(config)
HAS_BASE = BACKEND.trains_base or EXPORTS_BASE or HF_BASE is not None
# what a training job reads besides its config (the train rule's inputs, passed as --<name>)
READS = BACKEND.reads_for(config)
READ_PATHS = {"data": f"{OUT}/data", "base": f"{OUT}/base/policy.pt", "hf_base": f"{OUT}/base_hf/model"}
BASE_RUNS = [(BASE_ARM, 0)] if HAS_BASE else []
# torch threads of one training/evaluation job; the scheduler reserves as many cores
JOB_THREADS = config["threads"]
TRAIN_RESOURCES = job_resources(config, "train")
EVAL_RESOURCES = job_resources(config, "eval")


def runs():
    """Every training run of the experiment."""
    return final_runs() if SEQUENTIAL else FIXED_RUNS


def per_run(template, evaluated=False):
    """An input function: ``template`` (with {arm} and {seed}) for every run, and the base policy if ``evaluated``."""
    return lambda wildcards: [template.format(arm=arm, seed=seed) for arm, seed in (BASE_RUNS if evaluated else []) + runs()]


def run_outputs(run_dir):
    """The train rule's outputs: the backend's files in ``run_dir`` (its ``directories`` as directory outputs)."""
    return {name: directory(f"{run_dir}/{path}") if name in BACKEND.directories else f"{run_dir}/{path}"
            for name, path in BACKEND.outputs.items()}


def checkpoint_of(wildcards):
    """What the evaluation of (arm, seed) reads: the checkpoint file, or the run's manifest naming its checkpoint."""
    if wildcards.arm == BASE_ARM:
        if EXPORTS_BASE:
            return f"{OUT}/base_hf/manifest.json"
        return f"{OUT}/base/policy.pt" if BACKEND.trains_base else []
    run_dir = f"{OUT}/runs/{wildcards.arm}/seed-{wildcards.seed}"
    return f"{run_dir}/{BACKEND.checkpoint}" if BACKEND.checkpoint else f"{run_dir}/manifest.json"


def checkpoint_args(wildcards, input):
    """The evaluation's command-line flags naming the lm-eval model and the checkpoint (see evals/run.py)."""
    model = f"--model {BACKEND.lm_eval_model}"
    if EXPORTS_BASE and wildcards.arm == BASE_ARM:
        return f"{model} --run-manifest {input.checkpoint}"
    if wildcards.arm == BASE_ARM and not BACKEND.trains_base:
        return f"{model} --hf-checkpoint {shlex.quote(HF_BASE)}"
    return f"{model} --{'checkpoint' if BACKEND.checkpoint else 'run-manifest'} {input.checkpoint}"


wildcard_constraints:
    arm=r"[A-Za-z0-9_.-]+",
    seed=r"\d+",


# bookkeeping jobs that take a second: never worth a cluster submission
localrules:
    all,
    stage_config,
    arm_config,
    lm_eval_tasks,
    merge_scores,


def remove_results_built_on(job_dir):
    """Remove the results made from a job's removed outputs, up to scores.parquet, so that Snakemake rebuilds them.

    A missing intermediate file alone reruns nothing while the results made from it are in place; with the run's
    evaluation and the merged table gone, the targets lead Snakemake back through the evaluation to the job.
    """
    job = Path(job_dir).relative_to(OUT).parts
    if job[0] not in ("base", "base_hf", "runs", "evals"):
        return
    stale = [Path(OUT) / "scores.parquet"]
    if job[0] != "evals":
        arm, seed = (BASE_ARM, 0) if job[0] in ("base", "base_hf") else (job[1], job[2].removeprefix("seed-"))
        stale += [Path(OUT) / "evals" / arm / f"seed-{seed}" / name for name in ("scores.parquet", "manifest.json")]
    for path in stale:
        if path.is_file():
            print(f"armlab: removing {path}, made from the removed outputs of {job_dir}")
            path.unlink()
