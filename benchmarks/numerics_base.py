"""Does the base policy depend on the CPU's kernels? The experiment's base policy trained again under each forced
capability, and evaluated as the experiment evaluates it.

Numerics controls (docs/statistics.md §16) repeat an arm's runs from the experiment's one base policy, so they
measure the numerics of the arms' own jobs; a run on another machine trains its base policy there too. This script
takes a finished experiment (default: results/numerics, from config/experiments/numerics.yaml), trains its base
policy again from its base view with the kernels of each capability forced (``capability`` in the view:
armlab.numerics.start_job), evaluates each with the experiment's evaluation view, and compares every item's score
with the experiment's own base evaluation:

    .venv/bin/python benchmarks/numerics_base.py --out results/numerics_base     # about 2 min per capability, idle

Writes ``OUT/base.csv`` (capability, the policy's sha256, its final training loss, per-domain and domain-balanced
accuracy, item scores that differ from the experiment's base, of how many) and keeps each variant's base policy and
evaluation under ``OUT/<capability>/``; docs/results.md quotes it (``ci/quoted_results.py write numerics_base``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]


def accuracy(scores: pd.DataFrame) -> dict[str, float]:
    """Per-domain accuracy and their mean (the domain-balanced summary), in points."""
    domains = scores.groupby("domain").score.mean()
    return {**(100 * domains).to_dict(), "domain_balanced": 100 * domains.mean()}


def row(name: str, base: Path, evaluation: Path, reference: pd.DataFrame) -> dict:
    manifest = json.loads((base / "manifest.json").read_text())
    scores = pd.read_parquet(evaluation / "scores.parquet")
    both = scores.merge(reference, on=["benchmark", "item"], suffixes=("", "_reference"))
    return {
        "capability": name,
        "policy_sha256": manifest["files"]["policy.pt"][:16],
        "final_loss": manifest["final_loss"],
        **accuracy(scores),
        "items_differing": int((both["n_correct"] != both["n_correct_reference"]).sum()),
        "items": len(both),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=REPO / "results" / "numerics")
    parser.add_argument("--capabilities", nargs="+", default=["default", "avx2", "avx512"])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    from armlab import numerics
    from armlab.files import write_csv

    results, out = args.results.resolve(), args.out.resolve()
    reference = pd.read_parquet(results / "evals" / "base" / "seed-0" / "scores.parquet")
    view = json.loads((results / "config" / "base.json").read_text())
    env = {k: v for k, v in os.environ.items() if k not in numerics.RECORDED_VARIABLES}
    env |= {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    rows = [row(f"the experiment's ({view['numerics']})", results / "base", results / "evals" / "base" / "seed-0",
                reference)]  # fmt: skip
    for name in args.capabilities:
        problem = numerics.capability_problem(name)
        if problem:
            print(f"{name}: skipped, {problem}", flush=True)
            continue
        work = out / name
        work.mkdir(parents=True, exist_ok=True)
        (work / "base.json").write_text(json.dumps({**view, "capability": name}))
        for command in (
            ["-m", "armlab.training.base", "--config", str(work / "base.json"), "--data", str(results / "data"),
             "--out", str(work / "base")],
            ["-m", "armlab.evals.run", "--config", str(results / "config" / "eval.json"), "--tasks",
             str(results / "lm_eval_tasks"), "--checkpoint", str(work / "base" / "policy.pt"), "--arm", "base",
             "--seed", "0", "--out", str(work / "eval")],
        ):  # fmt: skip
            subprocess.run([sys.executable, *command], env=env, cwd=REPO, check=True, capture_output=True)
        rows.append(row(name, work / "base", work / "eval", reference))
        print(f"{name}: {rows[-1]}", flush=True)
    table = pd.DataFrame(rows)
    write_csv(table, out / "base.csv")
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
