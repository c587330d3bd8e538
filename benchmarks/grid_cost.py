"""Estimate the wall time of an experiment grid on this machine before running it.

Builds the experiment's data and base policy in a scratch directory, times a few
training steps of every arm (seed 1) and one evaluation, and extrapolates to
all (arm, seed) runs with ``--jobs`` single-thread jobs side by side (a lower bound:
jobs that share the machine run somewhat slower than alone; compare with a real run's manifests).

    .venv/bin/python benchmarks/grid_cost.py config/experiments/dataflex_rl.yaml --probe-steps 10
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from training import base, data
from training.config import load_config, resolve_arm, stage_config
from training.train import train


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--probe-steps", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2, help="single-thread jobs run side by side")
    args = parser.parse_args(argv)
    config = load_config([args.config])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        data.write(stage_config(config, "data"), root / "data")
        base.train_base(stage_config(config, "base"), root / "data", root / "base")
        setup = time.perf_counter() - t0

        from evals.lm_eval_tasks import write_task_configs
        from evals.run import evaluate

        eval_config = stage_config(config, "eval")
        write_task_configs(eval_config, root / "data", root / "tasks")
        t0 = time.perf_counter()
        evaluate(eval_config, root / "tasks", root / "base" / "policy.pt", "base", 0, root / "eval")
        eval_seconds = time.perf_counter() - t0

        per_arm = {}
        for arm in config["arms"]:
            probe = json.loads(json.dumps(stage_config(config, "train", arm)))
            probe["arms"][arm] = {
                **probe["arms"][arm],
                "steps": args.probe_steps,
                "checkpoint_every": args.probe_steps,
                "log_every": args.probe_steps,
            }
            t0 = time.perf_counter()
            train(probe, arm, 1, root / "data", root / "base" / "policy.pt", root / "runs" / arm)
            per_step = (time.perf_counter() - t0) / args.probe_steps
            per_arm[arm] = per_step * resolve_arm(config, arm)["steps"] + eval_seconds

    n_seeds = len(config["seeds"])
    job_seconds = n_seeds * sum(per_arm.values()) + eval_seconds  # + the base policy's evaluation
    # timed one job at a time: side-by-side jobs share the memory bus, so read this as a lower bound
    wall = setup + job_seconds / args.jobs
    print(
        f"\n{args.config}: {len(per_arm)} arms × {n_seeds} seeds, setup {setup:.0f}s, "
        f"one evaluation {eval_seconds:.1f}s"
    )
    for arm, seconds in per_arm.items():
        print(f"  {arm:24s} {seconds:7.1f} s per run (training + evaluation)")
    print(f"estimated wall time with {args.jobs} jobs: {wall / 60:.0f} min ({wall / 3600:.2f} h)")


if __name__ == "__main__":
    main()
