import os
import shlex
import sys
from pathlib import Path

from training.config import BASE_ARM, backend_gpus, hf_base, stage_config
from training.utils import write_json

PYTHON = sys.executable
EXP = config["experiment"]
OUT = f"results/{EXP}"
RUNS = [(arm, seed) for arm in config["arms"] for seed in config["seeds"]]
BACKEND = config["backend"]
# the base policy is evaluated once, deterministically (greedy), as arm "base" with seed 0
# (the trl and command backends have one only when trl.model / command.base_checkpoint names it)
HAS_BASE = BACKEND == "builtin" or hf_base(config) is not None
EVALUATED = ([(BASE_ARM, 0)] if HAS_BASE else []) + RUNS
# the builtin trainer's per-step logs (other backends write none in that format)
STEP_LOGS = [f"{OUT}/runs/{arm}/seed-{seed}/steps.parquet" for arm, seed in RUNS] if BACKEND == "builtin" else []
# torch threads of one training/evaluation job; the scheduler reserves as many cores
JOB_THREADS = config["threads"]
# GPUs one training / evaluation job asks the scheduler for: 0 for the builtin (CPU) backend
TRAIN_GPUS = backend_gpus(config, "train")
EVAL_GPUS = backend_gpus(config, "eval")


def checkpoint_of(wildcards):
    """What the evaluation of (arm, seed) reads: the builtin policy file, or the run's manifest naming its checkpoint."""
    if BACKEND != "builtin":
        return [] if wildcards.arm == BASE_ARM else f"{OUT}/runs/{wildcards.arm}/seed-{wildcards.seed}/manifest.json"
    if wildcards.arm == BASE_ARM:
        return f"{OUT}/base/policy.pt"
    return f"{OUT}/runs/{wildcards.arm}/seed-{wildcards.seed}/policy.pt"


def checkpoint_args(wildcards, input):
    """The evaluation's command-line flags naming the checkpoint (see evals/run.py)."""
    if BACKEND == "builtin":
        return f"--checkpoint {input.checkpoint}"
    if wildcards.arm == BASE_ARM:
        return f"--hf-checkpoint {shlex.quote(hf_base(config))}"
    return f"--run-manifest {input.checkpoint}"


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
