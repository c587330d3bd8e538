"""Fingerprints of builtin training runs, to show that a refactor of training/train.py changes no result.

Trains the tiny fixture's experiment for arms that between them take every path of ``train()`` (refill, running out
of tries, pre-rollout choice, μ > 1 update passes, the KL term, token weights, adaptive mixtures, verifier noise,
sequence-level ratios) and prints, per (arm, seed), the sha256 of policy.pt, of each checkpoint, and of the step log
and the manifest without their timings. Run it before and after a change and diff the two outputs:

    .venv/bin/python benchmarks/train_fingerprint.py > before.json   # … edit …
    .venv/bin/python benchmarks/train_fingerprint.py > after.json && diff before.json after.json
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import pandas as pd

from armlab.experiment.stages import stage_config
from armlab.experiment.validate import load_config
from armlab.files import file_sha256
from armlab.training import base, data
from armlab.training.train import train

TINY = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tiny.yaml"
TIMING_COLUMNS = ["seconds", "tokens_per_s"]  # wall-clock, never reproducible
# timings (files: the timed log's sha256) and the checkout's state
VOLATILE_MANIFEST_KEYS = ["seconds", "ms_per_step", "files", "git_commit", "git_dirty"]
ARMS = {
    "grpo": {},
    "difffilter": {"data_policy": "difffilter"},
    "mu2": {"updates_per_batch": 2},
    "dapo": {"data_policy": "dapo"},
    "dapo_capped": {"data_policy": {"name": "dapo", "max_tries": 2}},  # out of tries: topped up at weight 0
    "kl": {"kl_coef": 0.05},
    "ar": {"data_policy": "ar"},
    "greso": {"data_policy": "greso"},
    "thompson": {"data_policy": "thompson"},
    "reward_gap": {"data_policy": "reward_gap"},
    "noisy_gspo": {"reward_noise": 0.2, "ratio_level": "sequence", "loss_agg": "seq-mean-token-sum-norm"},
}


def steps_sha256(path: Path) -> str:
    """sha256 of the step log without its timing columns (values, dtypes and column order)."""
    steps = pd.read_parquet(path).drop(columns=TIMING_COLUMNS)
    blob = json.dumps(
        {
            "columns": list(steps.columns),
            "dtypes": steps.dtypes.astype(str).tolist(),
            "values": steps.to_numpy().tolist(),
        },
        default=repr,
    ).encode()
    return hashlib.sha256(blob).hexdigest()


def manifest_sha256(path: Path) -> str:
    """sha256 of the manifest without its timings (the recipe, config, seed record and environment stay)."""
    manifest = json.loads(path.read_text())
    stable = {key: value for key, value in manifest.items() if key not in VOLATILE_MANIFEST_KEYS}
    return hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()


def fingerprint(run: Path) -> dict:
    """The hashes of one run's outputs."""
    checkpoints = sorted((run / "checkpoints").glob("*.pt")) if (run / "checkpoints").exists() else []
    return {
        "policy.pt": file_sha256(run / "policy.pt"),
        "steps.parquet": steps_sha256(run / "steps.parquet"),
        "manifest.json": manifest_sha256(run / "manifest.json"),
        **{f"checkpoints/{p.name}": file_sha256(p) for p in checkpoints},
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    args = parser.parse_args(argv)
    config = load_config([TINY], {"arms": {arm: ARMS[arm] for arm in args.arms}, "comparisons": []})
    result = {}
    # the runs' progress lines go to stderr: stdout is the fingerprint alone, ready to diff
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(sys.stderr):
        work = Path(tmp)
        data.write(config, work / "data")
        base.train_base(config, work / "data", work / "base")
        for arm in args.arms:
            for seed in args.seeds:
                run = work / "runs" / arm / f"seed-{seed}"
                train(stage_config(config, "train", arm), arm, seed, work / "data", work / "base" / "policy.pt", run)
                result[f"{arm}/seed-{seed}"] = fingerprint(run)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
