"""Benchmark items and training prompt pools, generated once per experiment with fixed seeds.

Evaluation items are drawn first; training pools are drawn afterwards and reject
every prompt that is an evaluation item, so no evaluation item is ever trained on.
Both are written with the ``datasets`` library as parquet.

    python -m armlab.training.data --config results/<exp>/config/data.json --out results/<exp>/data
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from armlab.training.tasks import TASKS
from armlab.training.utils import atomic_path, derive_seed

MAX_TRIES_PER_ITEM = 50


def _unique_items(
    bench: str, spec: dict, n: int, rng: np.random.Generator, exclude: set[str], split: str
) -> list[dict]:
    """Draw ``n`` distinct prompts of one benchmark, skipping those in ``exclude``."""
    family = TASKS[spec["task"]]
    seen = set(exclude)
    items: list[dict] = []
    for _ in range(n * MAX_TRIES_PER_ITEM):
        if len(items) == n:
            break
        prompt, answer = family.generate(rng, **spec["params"])
        if prompt in seen:
            continue
        seen.add(prompt)
        items.append(
            {
                "id": f"{bench}-{split}-{len(items):05d}",
                "benchmark": bench,
                "domain": spec["domain"],
                "task": spec["task"],
                "prompt": prompt,
                "answer": answer,
            }
        )
    if len(items) < n and split == "eval":
        raise ValueError(
            f"benchmarks.{bench}.n_items: only {len(items)} distinct items exist for params "
            f"{spec['params']}, but n_items = {n}; lower n_items or raise the difficulty"
        )
    return items


def draw_eval_items(data_seed: int, bench: str, spec: dict) -> list[dict]:
    """The evaluation items of one benchmark: a fixed draw from (data seed, benchmark)."""
    return _unique_items(
        bench, spec, spec["n_items"], np.random.default_rng(derive_seed(data_seed, bench, "eval")), set(), "eval"
    )


def generate(config: dict) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    """Return (evaluation items per benchmark, training pool per domain)."""
    data_seed = config["data"]["seed"]
    eval_items = {bench: draw_eval_items(data_seed, bench, spec) for bench, spec in config["benchmarks"].items()}
    eval_prompts = {item["prompt"] for items in eval_items.values() for item in items}
    pools: dict[str, list[dict]] = {}
    for bench, spec in config["benchmarks"].items():
        rng = np.random.default_rng(derive_seed(data_seed, bench, "train"))
        pools.setdefault(spec["domain"], []).extend(
            _unique_items(bench, spec, config["data"]["pool_per_benchmark"], rng, eval_prompts, "train")
        )
    return eval_items, pools


def write(config: dict, out: Path) -> None:
    import datasets  # imported here: validating a config draws items without it

    datasets.disable_progress_bars()
    eval_items, pools = generate(config)
    with atomic_path(out) as tmp:
        (tmp / "eval").mkdir(parents=True)
        (tmp / "train").mkdir()
        for bench, items in eval_items.items():
            datasets.Dataset.from_list(items).to_parquet(str(tmp / "eval" / f"{bench}.parquet"))
        for domain, items in pools.items():
            datasets.Dataset.from_list(items).to_parquet(str(tmp / "train" / f"{domain}.parquet"))
        counts = {"eval": {b: len(v) for b, v in eval_items.items()}, "train": {d: len(v) for d, v in pools.items()}}
        (tmp / "counts.json").write_text(json.dumps(counts, indent=2) + "\n")
    print(
        f"wrote {sum(counts['eval'].values())} evaluation items and {sum(counts['train'].values())} "
        f"training prompts to {out}",
        flush=True,
    )


def load_pools(data_dir: str | Path) -> dict[str, list[dict]]:
    """Training prompt pools per domain, as written by :func:`write`."""
    import datasets

    return {
        path.stem: datasets.Dataset.from_parquet(str(path)).to_list()
        for path in sorted(Path(data_dir, "train").glob("*.parquet"))
    }


def load_eval_items(data_dir: str | Path) -> dict[str, list[dict]]:
    import datasets

    return {
        path.stem: datasets.Dataset.from_parquet(str(path)).to_list()
        for path in sorted(Path(data_dir, "eval").glob("*.parquet"))
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    write(json.loads(Path(args.config).read_text()), args.out)


if __name__ == "__main__":
    main()
