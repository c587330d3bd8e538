"""Merge per-run tidy scores into ``results/<experiment>/scores.parquet``.

    python -m evals.merge --out results/<exp>/scores.parquet results/<exp>/evals/*/seed-*/scores.parquet
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from evals.run import SCORE_COLUMNS
from training.utils import atomic_path


def merge(paths: list[Path]) -> pd.DataFrame:
    """Concatenate per-run score tables, checking the contract's columns and that no row repeats."""
    frames = []
    for path in paths:
        frame = pd.read_parquet(path)
        if list(frame.columns) != SCORE_COLUMNS:
            raise ValueError(f"{path}: columns {list(frame.columns)}; expected {SCORE_COLUMNS}")
        frames.append(frame)
    scores = pd.concat(frames, ignore_index=True)
    key = ["experiment", "arm", "seed", "benchmark", "item"]
    duplicated = scores[scores.duplicated(key, keep=False)]
    if len(duplicated):
        raise ValueError(f"duplicate (arm, seed, benchmark, item) rows, e.g. {duplicated.head(3).to_dict('records')}")
    return scores.sort_values(key, ignore_index=True)


def accuracy_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy (%) per arm and domain, with the domain-balanced average and the spread over seeds."""
    per_run = scores.groupby(["arm", "seed", "domain"]).score.mean().unstack()
    per_run["balanced"] = per_run.mean(axis=1)
    table = per_run.groupby("arm").mean()
    table["balanced_sd"] = per_run.groupby("arm").balanced.std()
    return (100 * table).round(1)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("inputs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    scores = merge(args.inputs)
    with atomic_path(args.out) as tmp:
        scores.to_parquet(tmp, index=False)
    print(f"wrote {len(scores)} rows from {len(args.inputs)} runs to {args.out}\n{accuracy_table(scores)}", flush=True)


if __name__ == "__main__":
    main()
