import json
import os
import shlex
import sys
from pathlib import Path

from armlab.analysis.config import parse_config as parse_analysis_config
from armlab.training.backends import BACKENDS, arm_backend, backends_used, job_resources
from armlab.training.config import BASE_ARM, stage_config

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
# the backend that trains each arm (its registry entry, training/backends/__init__.py: trainer, outputs, resources,
# lm-eval model): the arm's own `backend:` key, else the experiment's; one train rule per backend
ARM_BACKENDS = {arm: arm_backend(config, arm) for arm in config["arms"]}
USED_BACKENDS = backends_used(config)
# the base policy is evaluated once, with the eval settings (greedy or k samples), as arm "base" with seed 0: the builtin backend
# trains it; the others have one only when their section names a Hugging Face checkpoint (trl.model, ...). With arms of
# both builtin and trl (trl.model: builtin_base, training/config.py), it is the builtin base, scored by armlab-builtin:
# the TRL arms start from its export, whose greedy scores are the same (tests/test_hf_export.py)
BASE_BACKEND_NAME = "builtin" if "builtin" in USED_BACKENDS else USED_BACKENDS[0]
BASE_BACKEND = BACKENDS[BASE_BACKEND_NAME]
HF_BASE = BASE_BACKEND.base_checkpoint(config)
# trl.model: builtin_base: the builtin base policy is trained, exported to a Hugging Face checkpoint (rule export_base),
# every run starts from that export and (in an experiment of TRL arms only) arm base is the export, evaluated by the
# backend's lm-eval model
EXPORTS_BASE = BASE_BACKEND.exports_base(config)
HAS_BASE = BASE_BACKEND.trains_base or EXPORTS_BASE or HF_BASE is not None
# what a training job of each backend reads besides its config (its train rule's inputs, passed as --<name>)
READS = {name: BACKENDS[name].reads_for(config) for name in USED_BACKENDS}
READ_PATHS = {"data": f"{OUT}/data", "base": f"{OUT}/base/policy.pt", "hf_base": f"{OUT}/base_hf/model"}
BASE_RUNS = [(BASE_ARM, 0)] if HAS_BASE else []
# torch threads of one training/evaluation job; the scheduler reserves as many cores
JOB_THREADS = config["threads"]
TRAIN_RESOURCES = {name: job_resources(config, "train", name) for name in USED_BACKENDS}
EVAL_RESOURCES = {name: job_resources(config, "eval", name) for name in USED_BACKENDS}


def eval_resource(key):
    """An evaluation job's resource ``key``, from the backend of its arm (arm base: the base's backend); a constant
    when one backend trains every arm."""
    if len(USED_BACKENDS) == 1:
        return EVAL_RESOURCES[USED_BACKENDS[0]][key]
    return lambda wildcards: EVAL_RESOURCES[
        BASE_BACKEND_NAME if wildcards.arm == BASE_ARM else ARM_BACKENDS[wildcards.arm]
    ][key]


def runs():
    """Every training run of the experiment."""
    return final_runs() if SEQUENTIAL else FIXED_RUNS


def per_run(template, evaluated=False, backends=None):
    """An input function: ``template`` (with {arm} and {seed}) for every run (of the arms that ``backends`` train,
    when given), and the base policy if ``evaluated``."""
    return lambda wildcards: [
        template.format(arm=arm, seed=seed)
        for arm, seed in (BASE_RUNS if evaluated else []) + runs()
        if backends is None or ARM_BACKENDS[arm] in backends
    ]


def run_outputs(backend, run_dir):
    """A train rule's outputs: ``backend``'s files in ``run_dir`` (its ``directories`` as directory outputs)."""
    return {name: directory(f"{run_dir}/{path}") if name in backend.directories else f"{run_dir}/{path}"
            for name, path in backend.outputs.items()}


def checkpoint_of(wildcards):
    """What the evaluation of (arm, seed) reads: the checkpoint file, or the run's manifest naming its checkpoint."""
    if wildcards.arm == BASE_ARM:
        if EXPORTS_BASE:
            return f"{OUT}/base_hf/manifest.json"
        return f"{OUT}/base/policy.pt" if BASE_BACKEND.trains_base else []
    backend = BACKENDS[ARM_BACKENDS[wildcards.arm]]
    run_dir = f"{OUT}/runs/{wildcards.arm}/seed-{wildcards.seed}"
    return f"{run_dir}/{backend.checkpoint}" if backend.checkpoint else f"{run_dir}/manifest.json"


def checkpoint_args(wildcards, input):
    """The evaluation's command-line flags naming the lm-eval model and the checkpoint (see evals/run.py): those of
    the backend that trained the arm (arm base: of the base's backend)."""
    backend = BASE_BACKEND if wildcards.arm == BASE_ARM else BACKENDS[ARM_BACKENDS[wildcards.arm]]
    model = f"--model {backend.lm_eval_model}"
    if EXPORTS_BASE and wildcards.arm == BASE_ARM:
        return f"{model} --run-manifest {input.checkpoint}"
    if wildcards.arm == BASE_ARM and not backend.trains_base:
        return f"{model} --hf-checkpoint {shlex.quote(HF_BASE)}"
    return f"{model} --{'checkpoint' if backend.checkpoint else 'run-manifest'} {input.checkpoint}"


def arms_pattern(backend_name):
    """A wildcard constraint matching exactly the arms that ``backend_name`` trains (anchored, names escaped)."""
    import re

    return "(?:" + "|".join(re.escape(arm) for arm, name in ARM_BACKENDS.items() if name == backend_name) + ")"


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
        stale += [Path(OUT) / stage / arm / f"seed-{seed}" / name
                  for stage in ("evals", "curves") for name in ("scores.parquet", "manifest.json")]
    for path in stale:
        if path.is_file():
            print(f"armlab: removing {path}, made from the removed outputs of {job_dir}")
            path.unlink()


# accuracy over training (workflows/rules/curves.smk)
def kept_models(arm):
    """How many models a run of ``arm`` keeps: its checkpoints before the last step, and the final model."""
    from armlab.training.recipe import kept_checkpoint_steps, resolve_arm

    return len(kept_checkpoint_steps(resolve_arm(config, arm))) + 1


def curve_inputs(wildcards):
    """Every run's checkpoint evaluation; an arm whose backend keeps no checkpoints is refused by name."""
    for arm, name in ARM_BACKENDS.items():
        if not BACKENDS[name].keeps_checkpoints:
            raise WorkflowError(f"arms.{arm}: backend {name} keeps no intermediate checkpoints, so it has no curve")
    return [f"{OUT}/curves/{arm}/seed-{seed}/manifest.json" for arm, seed in runs()]
