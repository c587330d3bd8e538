"""Benchmark items and training prompt pools, generated once per experiment with fixed seeds.

Evaluation items are drawn first, then the procedural twin of every benchmark that asks for one
(``benchmarks.<b>.twin``: as many fresh items of the same generator and parameters, another seed; benchmark
``<b>__twin``, read by the contamination screen only); training pools are drawn afterwards and reject every prompt
that is an evaluation or twin item, so none is ever trained on. All are written with the ``datasets`` library as
parquet. The one exception is a planted control's: an arm with ``leak`` (:func:`leaked_items`) trains on a share of
the evaluation items, which the contamination screen must find.

    python -m armlab.training.data --config results/<exp>/config/data.json --out results/<exp>/data
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from armlab.contract import is_twin, twin_name
from armlab.files import atomic_path
from armlab.training.tasks import TASKS
from armlab.training.utils import derive_seed

MAX_TRIES_PER_ITEM = 50


def _unique_items(
    bench: str, spec: dict, n: int, rng: np.random.Generator, exclude: set[str], split: str
) -> list[dict]:
    """Draw ``n`` distinct prompts of one benchmark, skipping those in ``exclude``; ``split`` is eval, twin or train."""
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
                "benchmark": twin_name(bench) if split == "twin" else bench,
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
    if len(items) < n and split == "twin":
        raise ValueError(
            f"benchmarks.{bench}.twin: only {len(items)} distinct items besides its {n} evaluation items exist for "
            f"params {spec['params']}, and its twin needs {n} more; lower n_items, raise the difficulty or drop twin"
        )
    return items


def draw_eval_items(data_seed: int, bench: str, spec: dict) -> list[dict]:
    """The evaluation items of one benchmark: a fixed draw from (data seed, benchmark)."""
    return _unique_items(
        bench, spec, spec["n_items"], np.random.default_rng(derive_seed(data_seed, bench, "eval")), set(), "eval"
    )


def draw_twin_items(data_seed: int, bench: str, spec: dict, exclude: set[str]) -> list[dict]:
    """The procedural twin of one benchmark: ``n_items`` fresh items of its generator and parameters, a fixed draw
    from (data seed, benchmark, "twin"), none of them a prompt of ``exclude`` (every evaluation item)."""
    rng = np.random.default_rng(derive_seed(data_seed, bench, "twin"))
    return _unique_items(bench, spec, spec["n_items"], rng, exclude, "twin")


def evaluation_items(config: dict) -> dict[str, list[dict]]:
    """The evaluation items of every benchmark, and of every twin (``<b>__twin``) the benchmarks ask for."""
    data_seed = config["data"]["seed"]
    eval_items = {bench: draw_eval_items(data_seed, bench, spec) for bench, spec in config["benchmarks"].items()}
    published = {item["prompt"] for items in eval_items.values() for item in items}
    for bench, spec in config["benchmarks"].items():
        if spec.get("twin"):
            eval_items[twin_name(bench)] = draw_twin_items(data_seed, bench, spec, published)
    return eval_items


def generate(config: dict) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    """Return (evaluation items per benchmark, and per twin ``<b>__twin``; training pool per domain)."""
    data_seed = config["data"]["seed"]
    eval_items = evaluation_items(config)
    held_out = {item["prompt"] for items in eval_items.values() for item in items}
    pools: dict[str, list[dict]] = {}
    for bench, spec in config["benchmarks"].items():
        rng = np.random.default_rng(derive_seed(data_seed, bench, "train"))
        pools.setdefault(spec["domain"], []).extend(
            _unique_items(bench, spec, config["data"]["pool_per_benchmark"], rng, held_out, "train")
        )
    return eval_items, pools


def leaked_items(data_seed: int, eval_items: dict[str, list[dict]], share: float) -> list[dict]:
    """A planted leak (an arm's ``leak.share``): of each benchmark's evaluation items (not its twin's), the
    ``round(share * n)`` of a fixed draw from (data seed, benchmark, "leak"), the same for every arm and seed."""
    leaked = []
    for bench, items in eval_items.items():
        if is_twin(bench):
            continue
        rng = np.random.default_rng(derive_seed(data_seed, bench, "leak"))
        chosen = sorted(rng.choice(len(items), size=round(share * len(items)), replace=False))
        leaked += [items[i] for i in chosen]
    return leaked


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


def arm_pools(config: dict, arm: str, data_dir: str | Path) -> tuple[dict[str, list[dict]], dict | None]:
    """The training pools of ``arm``: the experiment's, and for a planted control with ``leak`` (``{share, copies}``,
    validated at the workflow's start) ``copies`` copies of each of its leaked evaluation items (:func:`leaked_items`)
    in its domain's pool; and the leak as the run's manifest records it (None without one)."""
    pools = load_pools(data_dir)
    leak = (config["arms"][arm] or {}).get("leak")
    if not leak:
        return pools, None
    items = leaked_items(config["data"]["seed"], load_eval_items(data_dir), leak["share"])
    for item in items:
        pools[item["domain"]] += [item] * leak["copies"]
    return pools, {**leak, "items": [item["id"] for item in items]}


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
