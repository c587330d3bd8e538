"""The tidy scores table: reading it, and giving its columns their contract types (docs/contracts.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from armlab.analysis.errors import AnalysisInputError, describe_rows
from armlab.analysis.inputs.reading import read_csv, regular_input
from armlab.contract import COLUMNS, REQUIRED, SAMPLE_COUNTS, one_sample_per_item
from armlab.limits import DEFAULT_LIMITS

if TYPE_CHECKING:
    from armlab.analysis.config import Config

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
FLOAT_EXACT_INTEGERS = 2**53  # a float holds every integer below this, not all above
COUNT_TOLERANCE = 1e-9  # |score - n_correct / n_samples|, and a k-answer metric times k from a whole number


def read_tidy(path: Path | str, limits: Mapping[str, int] = DEFAULT_LIMITS) -> pd.DataFrame:
    """Read a tidy scores table (``.parquet``, or ``.csv``) of at most ``limits["input_file_bytes"]``;
    :func:`validate_scores` checks it."""
    path = regular_input(path, "scores file", limits)
    if path.suffix == ".csv":
        frame = read_csv(path, "scores file", limits=limits, na_values=[""])
        frame.index = [f"{path.name} line {i + 2}" for i in range(len(frame))]  # errors point into the file
        return frame
    if path.suffix != ".parquet":
        raise AnalysisInputError(f"{path}: unknown suffix {path.suffix!r}; a tidy scores file is .parquet or .csv")
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as exc:  # pyarrow's errors for a file that is not parquet
        raise AnalysisInputError(f"{path}: not a parquet file ({str(exc).splitlines()[0]})") from None


def as_seed(value: object) -> int | None:
    """``value`` as an int64 seed, or None: whole numbers only, text read exactly ("7", "7.0", "1e3"), and a
    float only below 2**53, where it still holds every integer."""
    if isinstance(value, str):
        try:
            value = Decimal(value.strip())
        except InvalidOperation:
            return None
        # at most 19 digits before anything else: int() of "1e999999999" would build a billion of them
        if not (value.is_finite() and value.adjusted() < 19 and value == value.to_integral_value()):
            return None
        value = int(value)
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (float, np.floating)):
        if not (math.isfinite(value) and float(value).is_integer() and np.abs(value) < FLOAT_EXACT_INTEGERS):
            return None
        value = int(value)
    if isinstance(value, (int, np.integer)) and INT64_MIN <= int(value) <= INT64_MAX:
        return int(value)
    return None


def coerce_tidy(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    """Check the tidy columns exist and give them their contract types; return exactly :data:`COLUMNS`.

    ``seed`` must hold whole numbers within int64, ``score`` and ``n_correct`` numbers, and
    ``n_samples`` whole numbers; anything else is an error naming the rows. The count columns
    come as a pair: without both the table reads as one sample per item (``n_samples = 1``,
    ``n_correct = score``), and one without the other is an error naming the missing one.
    Missing values stay missing (``seed`` and ``n_samples`` as nullable integers) for
    :func:`validate_scores` to report.
    """
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise AnalysisInputError(
            f"{source}: missing column(s) {missing}; the tidy scores table has {REQUIRED}, "
            f"then optionally both of {SAMPLE_COUNTS}"
        )
    counts = [c for c in SAMPLE_COUNTS if c in frame.columns]
    if len(counts) == 1:
        absent = next(c for c in SAMPLE_COUNTS if c not in counts)
        raise AnalysisInputError(
            f"{source}: column {counts[0]!r} without {absent!r}; the sample counts {SAMPLE_COUNTS} come "
            f"together (without both, each item is one sample with n_correct = score)"
        )
    frame = frame[REQUIRED + counts].copy()
    for column in ("score", *counts):
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = values.isna() & frame[column].notna()
        if bad.any():
            raise AnalysisInputError(
                f"{source}: {column}: expected numbers; non-numeric in\n{describe_rows(frame[bad], COLUMNS)}"
            )
        frame[column] = values.astype(float)
    codes, values = pd.factorize(frame["seed"])  # seeds repeat: parse each distinct value once
    seeds = [as_seed(v) for v in values]
    bad = (codes >= 0) & np.isin(codes, [i for i, seed in enumerate(seeds) if seed is None])
    if bad.any():
        raise AnalysisInputError(
            f"{source}: seed: expected integers within int64 (the pairing key); got\n"
            f"{describe_rows(frame[bad], COLUMNS)}"
        )
    lookup = np.array([0, *seeds], dtype=np.int64)  # code -1 (missing) reads the masked 0
    frame["seed"] = pd.arrays.IntegerArray(lookup[codes + 1], mask=codes < 0)
    if not counts:
        return one_sample_per_item(frame)
    n_samples = frame["n_samples"].to_numpy()
    unset = np.isnan(n_samples)
    whole = unset | ((np.abs(n_samples) < FLOAT_EXACT_INTEGERS) & (np.mod(n_samples, 1) == 0))
    if not whole.all():
        raise AnalysisInputError(
            f"{source}: n_samples: expected whole numbers >= 1 (the answers sampled per item); got\n"
            f"{describe_rows(frame[~whole], COLUMNS)}"
        )
    frame["n_samples"] = pd.arrays.IntegerArray(np.where(unset, 0, n_samples).astype(np.int64), mask=unset)
    return frame[COLUMNS]


def rows_frame(rows: list[tuple]) -> pd.DataFrame:
    """The tidy frame of ``(where, *COLUMNS)`` tuples, indexed by where each row comes from."""
    index, *values = zip(*rows, strict=True)
    frame = pd.DataFrame(dict(zip(COLUMNS, values, strict=True)), index=list(index))
    return frame.astype({"seed": "int64", "score": float, "n_samples": "int64", "n_correct": float})


def load(config: Config, spec: Mapping[str, Any]) -> tuple[pd.DataFrame, str]:
    """``input.kind: tidy``: the table at ``path``."""
    return read_tidy(spec["path"], config.limits), f"tidy scores {spec['path']}"
