"""What grader sensitivity costs next to the evaluation jobs, side by side: every evaluation job of a finished
experiment run again, each followed by one ``armlab rescore`` of its results, in one run on one machine.

Each evaluation job is the workflow's own command (``python -m armlab.evals.run``, the rule's arguments, into a
scratch folder); the rescore is ``python -m armlab rescore`` on a scratch copy of the results (its evaluations,
scores, config views and analysis), with the verifiers of the config's ``analysis.verifiers`` (else all). Both are
whole processes, start-up and imports included. Prints each time, the evaluation jobs' total, the rescores' median
and their ratio (issue 55's budget: at most 10% of the evaluation jobs' time).

    .venv/bin/python benchmarks/rescore_cost.py --config config/experiments/real_architecture.yaml
"""

from __future__ import annotations

import argparse
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from armlab.experiment.plan import RunPlan
from armlab.experiment.validate import load_config


def timed(command: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one process: the CPU time (user and system) is the fairer figure on a shared machine."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - start, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="the experiment's config, run to the end beforehand")
    args = parser.parse_args()
    plan = RunPlan(load_config([Path(args.config)]))
    results = Path(plan.out)
    runs = [*plan.base_runs, *plan.fixed_runs]
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "results" / plan.config["experiment"]
        for part in ("evals", "config", "analysis", "runs"):
            shutil.copytree(results / part, copy / part, ignore=shutil.ignore_patterns("*.pt", "model", "checkpoints"))
        shutil.copy2(results / "scores.parquet", copy / "scores.parquet")
        rescore = [sys.executable, "-m", "armlab", "rescore", str(copy)]
        evaluations, rescores = [], []
        for arm, seed in runs:
            checkpoint = plan.checkpoint_args(arm, plan.checkpoint_of(arm, seed))
            command = [sys.executable, "-m", "armlab.evals.run", "--config", f"{results}/config/eval.json"]
            command += ["--tasks", f"{results}/lm_eval_tasks", *shlex.split(checkpoint), "--arm", arm]
            command += ["--seed", str(seed), "--out", str(Path(scratch) / "evals" / arm / f"seed-{seed}")]
            evaluations.append(timed(command))
            rescores.append(timed(rescore))
            print(
                f"evaluation {arm} seed {seed}: {evaluations[-1][0]:.1f} s wall, {evaluations[-1][1]:.1f} s CPU; "
                f"rescore: {rescores[-1][0]:.1f} s wall, {rescores[-1][1]:.1f} s CPU",
                flush=True,
            )
    for kind, i in (("wall", 0), ("CPU", 1)):
        total, median = sum(e[i] for e in evaluations), statistics.median(r[i] for r in rescores)
        print(
            f"{kind}: {len(runs)} evaluation jobs {total:.1f} s; rescore, whole process (median of {len(rescores)}) "
            f"{median:.1f} s = {100 * median / total:.1f}% of the evaluation jobs' time"
        )


if __name__ == "__main__":
    main()
