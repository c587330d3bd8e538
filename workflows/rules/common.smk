import os
import sys

from training.config import BASE_ARM, stage_config
from training.utils import write_json

PYTHON = sys.executable
EXP = config["experiment"]
OUT = f"results/{EXP}"
RUNS = [(arm, seed) for arm in config["arms"] for seed in config["seeds"]]
# the base policy is evaluated once, deterministically (greedy), as arm "base" with seed 0
EVALUATED = [(BASE_ARM, 0)] + RUNS


def checkpoint_of(wildcards):
    if wildcards.arm == BASE_ARM:
        return f"{OUT}/base/policy.pt"
    return f"{OUT}/runs/{wildcards.arm}/seed-{wildcards.seed}/policy.pt"


wildcard_constraints:
    arm=r"[A-Za-z0-9_.-]+",
    seed=r"\d+",
