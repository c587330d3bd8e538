"""Evaluate one checkpoint on the experiment's benchmarks through lm-evaluation-harness.

Writes the lm-eval results JSON, the per-item samples (``samples_<task>.jsonl``)
and the run's rows of the tidy scores table (``scores.parquet``).

    python -m evals.run --config results/<exp>/config/eval.json --tasks results/<exp>/lm_eval_tasks \
        --checkpoint results/<exp>/runs/grpo/seed-1/policy.pt --arm grpo --seed 1 --out results/<exp>/evals/grpo/seed-1
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pandas as pd  # noqa: E402

from evals.tasks import TASK_PREFIX, task_name  # noqa: E402
from training.utils import atomic_path, environment_record, write_json  # noqa: E402

SCORE_COLUMNS = ["experiment", "arm", "seed", "benchmark", "domain", "item", "score"]


def samples_to_scores(samples: dict[str, list[dict]], experiment: str, arm: str, seed: int) -> pd.DataFrame:
    """Tidy per-item rows (the scores contract) from lm-eval's logged samples."""
    rows = [{"experiment": experiment, "arm": arm, "seed": int(seed), "benchmark": task[len(TASK_PREFIX):],
             "domain": sample["doc"]["domain"], "item": str(sample["doc"]["id"]), "score": float(sample["acc"])}
            for task, task_samples in samples.items() for sample in task_samples]
    return pd.DataFrame(rows, columns=SCORE_COLUMNS).sort_values(["benchmark", "item"], ignore_index=True)


def evaluate(config: dict, tasks_dir: Path, checkpoint: Path, arm: str, seed: int, out_dir: Path) -> pd.DataFrame:
    import lm_eval
    from lm_eval.tasks import TaskManager

    from evals.lm_eval_adapter import BuiltinPolicyLM

    start = time.perf_counter()
    model = BuiltinPolicyLM(str(checkpoint), batch_size=config["eval"]["batch_size"],
                            max_gen_toks=config["eval"]["max_gen_toks"], threads=config["threads"])
    task_manager = TaskManager(include_path=str(tasks_dir), include_defaults=False)
    results = lm_eval.simple_evaluate(model=model, tasks=[task_name(b) for b in config["benchmarks"]],
                                      task_manager=task_manager, log_samples=True, bootstrap_iters=0)
    samples = results.pop("samples")
    scores = samples_to_scores(samples, config["experiment"], arm, seed)
    with atomic_path(out_dir) as tmp:
        tmp.mkdir(parents=True)
        (tmp / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
        for task, task_samples in samples.items():
            with open(tmp / f"samples_{task}.jsonl", "w") as f:
                for sample in task_samples:
                    f.write(json.dumps(sample, default=str) + "\n")
        scores.to_parquet(tmp / "scores.parquet", index=False)
        write_json(tmp / "manifest.json", {"experiment": config["experiment"], "arm": arm, "seed": seed,
                                           "checkpoint": str(checkpoint), "seconds": time.perf_counter() - start,
                                           **environment_record(config["threads"])})
    accuracy = scores.groupby("benchmark").score.mean()
    print(f"[eval {arm} seed {seed}] " + " ".join(f"{b} {a:.2f}" for b, a in accuracy.items()), flush=True)
    return scores


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--tasks", required=True, type=Path)
    parser.add_argument("--checkpoint", required=True, type=Path)
    parser.add_argument("--arm", required=True)
    parser.add_argument("--seed", required=True, type=int)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    evaluate(json.loads(Path(args.config).read_text()), args.tasks, args.checkpoint, args.arm, args.seed, args.out)


if __name__ == "__main__":
    main()
