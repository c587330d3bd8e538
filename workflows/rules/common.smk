import json
import os
import sys
from pathlib import Path

from snakemake.io import directory

from armlab import numerics
from armlab.configfile import ConfigError
from armlab.experiment.plan import RunPlan
from armlab.training.backends import BACKENDS
from armlab.experiment.stages import stage_config

# Jobs run `python` from PATH: the driver's own interpreter (its folder goes first on PATH here), or, under
# `--sdm conda`, the interpreter of the rule's conda environment (environment.yml), which Snakemake puts first.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
# the kernels that decide the jobs' floating-point bits, for every process a job starts too (a command backend's
# trainer, the vLLM worker); each armlab job also pins them itself (armlab/numerics.py)
os.environ.update(numerics.environment(config["numerics"]))
# the runs, backends, base policy and paths of the experiment (armlab/experiment/plan.py, unit-tested there);
# below, only what needs Snakemake: wildcards, checkpoints and directory outputs
PLAN = RunPlan(config)
OUT = PLAN.out
ANALYSIS_CONFIG = PLAN.analysis
SEQUENTIAL = PLAN.sequential
ARM_BACKENDS = PLAN.arm_backends
USED_BACKENDS = PLAN.used_backends
JOB_THREADS = PLAN.job_threads


def runs():
    """Every training run of the experiment: every arm at every seed, or, under a sequential design
    (workflows/rules/sequential.smk), those its looks asked for, known once the last look is written."""
    return final_runs() if SEQUENTIAL else PLAN.fixed_runs


def per_run(stage, name, evaluated=False, backends=None):
    """An input function: file ``name`` of ``stage`` for every run (see RunPlan.per_run)."""
    return lambda wildcards: PLAN.per_run(stage, name, runs(), evaluated, backends)


def run_outputs(backend, *run):
    """A train rule's outputs, its ``directories`` as directory outputs (of ``run``, (arm, seed), when given)."""
    outputs = PLAN.run_outputs(backend, *run)
    return {name: directory(path) if is_dir else path for name, (path, is_dir) in outputs.items()}


def eval_resource(key):
    resource = PLAN.eval_resource(key)
    return (lambda wildcards: resource(wildcards.arm)) if callable(resource) else resource


def eval_config(wildcards):
    return PLAN.eval_config(wildcards.arm)


def arm_threads(wildcards):
    return PLAN.threads_of(wildcards.arm)


def checkpoint_of(wildcards):
    """What the evaluation reads (RunPlan.checkpoint_of); a record of checkpoints made elsewhere as an ancient input,
    so that rewriting it for a new description reruns no evaluation (a change of its checkpoints removes the
    evaluation at the workflow's start: RunPlan.changed_records)."""
    return recorded_input(wildcards.arm, PLAN.checkpoint_of(wildcards.arm, wildcards.seed))


def run_manifest(wildcards):
    """The run's manifest, which names its kept models (evals/curves.py); a record as an ancient input."""
    return recorded_input(wildcards.arm, f"{PLAN.job_dir('runs', wildcards.arm, wildcards.seed)}/manifest.json")


def recorded_input(arm, path):
    return ancient(path) if PLAN.recorded(arm) else path


def checkpoint_args(wildcards, input):
    return PLAN.checkpoint_args(wildcards.arm, input.checkpoint)


def curve_inputs(wildcards):
    try:
        return PLAN.curve_manifests(runs())
    except ConfigError as err:
        raise WorkflowError(str(err)) from None


def remove_results_built_on(job_dir, dry_run=False):
    """Remove the results made from a job's removed outputs, so that Snakemake rebuilds them (``dry_run``: say so)."""
    for path in PLAN.results_built_on(job_dir):
        if path.is_file():
            if dry_run:
                print(f"armlab: a run would remove {path}, made from the outputs of {job_dir}")
                continue
            print(f"armlab: removing {path}, made from the removed outputs of {job_dir}")
            try:
                path.unlink()
            except OSError as err:
                raise WorkflowError(f"{path}: cannot be removed ({err.strerror}); make its folder writable") from None


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
