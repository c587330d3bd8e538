"""Estimate the wall time of an experiment grid on this machine before running it.

Times a few training steps of every arm (seed 1) and one evaluation (:func:`armlab.experiment.probe.probe`, what
``armlab probe`` writes for ``armlab plan``) and extrapolates to all (arm, seed) runs with ``--jobs``
single-thread jobs side by side (a lower bound: jobs that share the machine run somewhat slower than alone;
compare with a real run's manifests).

    .venv/bin/python benchmarks/grid_cost.py config/experiments/dataflex_rl.yaml --probe-steps 10
"""

from __future__ import annotations

import argparse
from pathlib import Path

from armlab.experiment.probe import probe
from armlab.experiment.validate import load_config


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--probe-steps", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2, help="single-thread jobs run side by side")
    args = parser.parse_args(argv)
    config = load_config([args.config])
    times = probe(config, args.probe_steps)
    eval_seconds = times["eval_seconds"]
    per_arm = {arm: t["seconds_per_step"] * t["steps"] + eval_seconds for arm, t in times["arms"].items()}
    n_seeds = len(config["seeds"])
    job_seconds = n_seeds * sum(per_arm.values()) + eval_seconds  # + the base policy's evaluation
    # timed one job at a time: side-by-side jobs share the memory bus, so read this as a lower bound
    wall = times["setup_seconds"] + job_seconds / args.jobs
    print(
        f"\n{args.config}: {len(per_arm)} arms × {n_seeds} seeds, setup {times['setup_seconds']:.0f}s, "
        f"one evaluation {eval_seconds:.1f}s"
    )
    for arm, seconds in per_arm.items():
        print(f"  {arm:24s} {seconds:7.1f} s per run (training + evaluation)")
    print(f"estimated wall time with {args.jobs} jobs: {wall / 60:.0f} min ({wall / 3600:.2f} h)")


if __name__ == "__main__":
    main()
