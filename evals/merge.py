"""Merge per-run tidy scores into ``results/<experiment>/scores.parquet``.

python -m armlab.evals.merge --out results/<exp>/scores.parquet results/<exp>/evals/*/seed-*/scores.parquet
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from armlab.contract import COLUMNS, KEY, REQUIRED, duplicated_keys, one_sample_per_item
from armlab.files import BadFile, atomic_path, one_line_errors, verify_file


def read_run_scores(path: Path) -> pd.DataFrame:
    """One evaluation's ``scores.parquet``, checked against its manifest's sha256 and the contract's columns.

    A table of an evaluation from before sample counts (the required columns only) reads as one sample per item.
    """
    verify_file(path)
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as exc:  # pyarrow's errors for a file that is not parquet
        raise BadFile(f"{path}: not a parquet file ({str(exc).splitlines()[0]})") from None
    if list(frame.columns) == REQUIRED:  # written before sample counts: one answer per item
        return one_sample_per_item(frame)
    if list(frame.columns) != COLUMNS:
        raise BadFile(f"{path}: columns {list(frame.columns)}; expected {COLUMNS}")
    return frame


def merge(paths: list[Path]) -> pd.DataFrame:
    """Concatenate per-run score tables, checking each (:func:`read_run_scores`) and that no row repeats."""
    scores = pd.concat([read_run_scores(path) for path in paths], ignore_index=True)
    duplicated = scores[duplicated_keys(scores)]
    if len(duplicated):
        raise BadFile(
            f"duplicate (arm, seed, benchmark, item) rows across the inputs (a run given twice?), "
            f"e.g. {duplicated.head(3).to_dict('records')}"
        )
    return scores.sort_values(KEY, ignore_index=True)


@one_line_errors
def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("inputs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    scores = merge(args.inputs)
    with atomic_path(args.out) as tmp:
        scores.to_parquet(tmp, index=False)
    print(f"wrote {len(scores)} rows from {len(args.inputs)} runs to {args.out}", flush=True)


if __name__ == "__main__":
    main()
