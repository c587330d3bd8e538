"""Evaluate one checkpoint on the experiment's benchmarks through lm-evaluation-harness.

Writes the lm-eval results JSON, the per-item samples (``samples_<task>.jsonl``)
and the run's rows of the tidy scores table (``scores.parquet``). A builtin checkpoint
(``--checkpoint policy.pt``) is served by our adapter; a Hugging Face checkpoint of the
trl/command backends (``--hf-checkpoint DIR``, or ``--run-manifest`` of the run that wrote
it) by lm-eval's own ``hf`` model, on the same task configs.

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


def samples_to_scores(samples: dict[str, list[dict]], experiment: str, arm: str, seed: int,
                      lm_eval_tasks: dict | None = None) -> pd.DataFrame:
    """Tidy per-item rows (the scores contract) from lm-eval's logged samples.

    Our benchmarks' samples carry their domain and item id in the doc; a task of ``lm_eval_tasks`` (config
    ``eval.lm_eval_tasks``: name -> domain, metric, filter) is scored by its metric under its filter, with
    lm-eval's ``doc_id`` as the item.
    """
    lm_eval_tasks = lm_eval_tasks or {}
    run = {"experiment": experiment, "arm": arm, "seed": int(seed)}
    rows = []
    for task, task_samples in samples.items():
        spec = lm_eval_tasks.get(task)
        for sample in task_samples:
            if spec is None:
                rows.append({**run, "benchmark": task[len(TASK_PREFIX):], "domain": sample["doc"]["domain"],
                             "item": str(sample["doc"]["id"]), "score": float(sample["acc"])})
            elif sample.get("filter", "none") == spec["filter"]:
                rows.append({**run, "benchmark": task, "domain": spec["domain"], "item": str(sample["doc_id"]),
                             "score": float(sample[spec["metric"]])})
    return pd.DataFrame(rows, columns=SCORE_COLUMNS).sort_values(["benchmark", "item"], ignore_index=True)


def load_model(config: dict, checkpoint: Path, hf: bool):
    """The lm-eval model for a checkpoint: our adapter for builtin ``policy.pt``, lm-eval's ``hf`` otherwise."""
    if not hf:
        from evals.lm_eval_adapter import BuiltinPolicyLM

        return BuiltinPolicyLM(str(checkpoint), batch_size=config["eval"]["batch_size"],
                               max_gen_toks=config["eval"]["max_gen_toks"], threads=config["threads"])
    import torch
    from lm_eval.models.huggingface import HFLM

    torch.set_num_threads(config["threads"])
    # the task configs carry max_gen_toks and the stop strings
    return HFLM(pretrained=str(checkpoint), batch_size=config["eval"]["batch_size"],
                device="cuda" if torch.cuda.is_available() else "cpu")


def evaluate(config: dict, tasks_dir: Path, checkpoint: Path, arm: str, seed: int, out_dir: Path,
             hf: bool = False) -> pd.DataFrame:
    import lm_eval
    from lm_eval.tasks import TaskManager

    start = time.perf_counter()
    model = load_model(config, checkpoint, hf)
    extra = config["eval"].get("lm_eval_tasks", {})
    # lm-eval's own task configs are indexed only when the config lists some of them
    task_manager = TaskManager(include_path=str(tasks_dir), include_defaults=bool(extra))
    results = lm_eval.simple_evaluate(model=model, tasks=[task_name(b) for b in config["benchmarks"]] + list(extra),
                                      task_manager=task_manager, log_samples=True, bootstrap_iters=0)
    samples = results.pop("samples")
    scores = samples_to_scores(samples, config["experiment"], arm, seed, extra)
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
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--checkpoint", type=Path, help="a builtin policy.pt")
    which.add_argument("--hf-checkpoint", type=Path, help="a Hugging Face checkpoint directory")
    which.add_argument("--run-manifest", type=Path, help="manifest.json of a trl/command run (names its checkpoint)")
    parser.add_argument("--arm", required=True)
    parser.add_argument("--seed", required=True, type=int)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    checkpoint = args.checkpoint or args.hf_checkpoint
    if args.run_manifest:
        checkpoint = Path(json.loads(args.run_manifest.read_text())["checkpoint"])
    evaluate(json.loads(Path(args.config).read_text()), args.tasks, checkpoint, args.arm, args.seed, args.out,
             hf=args.checkpoint is None)


if __name__ == "__main__":
    main()
