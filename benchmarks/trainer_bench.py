"""GRPO steps per second: the builtin trainer (training/train.py) against TRL's GRPOTrainer, same shape.

Both train models of (nearly) the same parameter count on the same synthetic prompts with the same prompts per
step, group size, completion length and torch thread count, on the CPU, from random-ish weights (so nearly every
completion runs to the full length). Per-step times are medians over the steps after the first (warm-up); the two
trainers run alternately ``--repeats`` times and the best median of each counts, because other jobs share the CPU.

    .venv/bin/python benchmarks/trainer_bench.py --steps 6 --threads 2
Reference (issue): TRL, 64 prompts × 8 completions × 8 tokens, 85k parameters, 2 threads: 0.14–0.165 s/step.
"""

from __future__ import annotations

import argparse
import copy
import json
import tempfile
from pathlib import Path

import pandas as pd

from armlab import numerics
from armlab.experiment.stages import stage_config
from armlab.experiment.validate import load_config
from armlab.training import base, data

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "fixtures" / "tiny.yaml"


def bench_config(args) -> dict:
    """The tiny experiment reshaped to the benchmark's step; one arm, plain GRPO."""
    shape = {
        "steps": args.steps,
        "prompts_per_step": args.prompts,
        "group_size": args.group,
        "max_new_tokens": args.tokens,
        "checkpoint_every": 10**6,
        "log_every": args.steps,
    }
    return load_config(
        [TINY],
        {
            "threads": args.threads,
            "numerics": args.numerics,
            "arms": {"grpo": {}},
            "comparisons": [],
            "model": {"d_model": args.d_model, "n_layer": args.n_layer, "n_head": 4, "max_len": 32},
            "base": {"steps": 1, "batch_size": 8, "lr": 0.001},
            "recipe": {**load_config([TINY])["recipe"], **shape},
        },
    )


def builtin_seconds_per_step(config: dict, work: Path) -> tuple[float, int]:
    import shutil

    from armlab.training.policy import load_model
    from armlab.training.train import train

    shutil.rmtree(work / "run", ignore_errors=True)
    train(stage_config(config, "train", "grpo"), "grpo", 1, work / "data", work / "base" / "policy.pt", work / "run")
    steps = pd.read_parquet(work / "run" / "steps.parquet")
    n_params = sum(p.numel() for p in load_model(work / "base" / "policy.pt").parameters())
    return float(steps.seconds.iloc[1:].median()), n_params


def matching_intermediate_size(config: dict, n_params: int) -> int:
    """The Qwen2 MLP width whose parameter count is closest to ``n_params``."""
    from armlab.training.backends.hf_export import tiny_model

    def count(width):
        return sum(p.numel() for p in tiny_model(config["model"], 0, width).parameters())

    d = config["model"]["d_model"]
    return min(range(8, 8 * d + 1, 8), key=lambda width: abs(count(width) - n_params))


def trl_seconds_per_step(config: dict, work: Path, intermediate_size: int) -> tuple[float, int, float]:
    import datasets
    from trl import GRPOConfig, GRPOTrainer

    from armlab.training.backends.hf_export import char_tokenizer, tiny_model
    from armlab.training.backends.trl_backend import grpo_config_kwargs, make_reward
    from armlab.training.data import load_pools
    from armlab.training.recipe import resolve_arm

    recipe = resolve_arm(config, "grpo")
    items = [item for pool in load_pools(work / "data").values() for item in pool]
    dataset = datasets.Dataset.from_list(
        [{k: item[k] for k in ("prompt", "answer", "task", "domain", "id")} for item in items]
    )
    model = tiny_model(config["model"], 0, intermediate_size)
    kwargs = grpo_config_kwargs(recipe, config["experiment"], 1, str(work / "trl"), config["threads"])
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[make_reward(recipe, 1)],
        processing_class=char_tokenizer(),
        args=GRPOConfig(**{**kwargs, "logging_steps": 1}),
        train_dataset=dataset,
    )
    trainer.train()
    logs = pd.DataFrame([row for row in trainer.state.log_history if "step_time" in row])
    return (
        float(logs.step_time.iloc[1:].median()),
        sum(p.numel() for p in model.parameters()),
        float(logs["completions/mean_length"].mean()),
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--d-model", type=int, default=48)
    parser.add_argument("--n-layer", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--numerics", choices=numerics.MODES, default=numerics.DEFAULT_MODE)
    args = parser.parse_args(argv)
    config = bench_config(args)
    numerics.start(args.numerics, args.threads)  # before any torch operation: the kernels the runs use
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data.write(config, work / "data")
        base.train_base(config, work / "data", work / "base")
        builtin, trl = [], []
        for _ in range(args.repeats):
            builtin.append(builtin_seconds_per_step(config, work))
            width = matching_intermediate_size(config, builtin[-1][1])
            trl.append(trl_seconds_per_step(copy.deepcopy(config), work, width))
        (builtin_s, builtin_params), (trl_s, trl_params, trl_len) = min(builtin), min(trl)
    result = {
        "shape": f"{args.prompts} prompts x {args.group} completions x {args.tokens} tokens, {args.threads} threads",
        "builtin_params": builtin_params,
        "trl_params": trl_params,
        "builtin_s_per_step": round(builtin_s, 4),
        "trl_s_per_step": round(trl_s, 4),
        "trl_mean_completion_tokens": round(trl_len, 2),
        "builtin_steps_per_s": round(1 / builtin_s, 2),
        "trl_steps_per_s": round(1 / trl_s, 2),
        "ratio_builtin_over_trl": round(trl_s / builtin_s, 2),
        "numerics": numerics.record(args.numerics)["class"],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
