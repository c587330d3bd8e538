"""Evaluation throughput of sampled evaluation: answers per second through lm-eval, builtin adapter vs ``hf``.

One evaluation job's lm-eval part (``armlab.evals.run.evaluate``: task loading, k answers per item through the task's
``repeats``, scoring, logging every answer) on the tiny experiment's benchmarks with more items, for the builtin
character-level policy (the ``armlab-builtin`` adapter) and for a Qwen2 of comparable size served by lm-eval's own
``hf`` model, at k = 1 (greedy), 8 and 32 (temperature 1). Figures are whole-evaluation seconds (median of
``--repeats``, the two models alternating) and answers per second; the start-up of a job (importing torch and
lm-eval) is not included.

    .venv/bin/python benchmarks/eval_throughput.py --items 100 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from armlab.evals.lm_eval_tasks import write_task_configs
from armlab.evals.run import evaluate
from armlab.experiment.stages import stage_config
from armlab.experiment.validate import load_config
from armlab.training import base, data
from armlab.training.backends.hf_export import char_tokenizer, tiny_model

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "fixtures" / "tiny.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100, help="items per benchmark (4 benchmarks)")
    parser.add_argument("--samples", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = load_config([TINY], {"threads": args.threads})
    for spec in config["benchmarks"].values():
        spec["n_items"] = args.items
    n_items = args.items * len(config["benchmarks"])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data.write(config, work / "data")
        base.train_base(config, work / "data", work / "base")
        hf_dir = work / "hf"
        tiny_model(config["model"], 0).save_pretrained(hf_dir)
        char_tokenizer().save_pretrained(hf_dir)
        models = {"armlab-builtin": work / "base" / "policy.pt", "hf": hf_dir}
        print(f"{n_items} items, {args.threads} thread(s); median of {args.repeats} evaluations")
        print(f"{'k':>3} {'model':>15} {'seconds':>8} {'answers/s':>10}")
        for k in args.samples:
            sampling = {"samples": k, "temperature": 0.0 if k == 1 else 1.0}
            view = stage_config({**config, "eval": {**config["eval"], **sampling}}, "eval")
            tasks = work / f"tasks-{k}"
            write_task_configs(view, work / "data", tasks)
            seconds = {name: [] for name in models}
            for repeat in range(args.repeats):
                for name, checkpoint in models.items():
                    start = time.perf_counter()
                    evaluate(view, tasks, checkpoint, "bench", 1, work / f"out-{name}-{k}-{repeat}", model=name)
                    seconds[name].append(time.perf_counter() - start)
            medians = {name: statistics.median(times) for name, times in seconds.items()}
            for name, median in medians.items():
                print(f"{k:>3} {name:>15} {median:>8.2f} {n_items * k / median:>10.0f}")
            print(f"{k:>3} {'hf / builtin':>15} {medians['hf'] / medians['armlab-builtin']:>8.1f}x time")


if __name__ == "__main__":
    main()
