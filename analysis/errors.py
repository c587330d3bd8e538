"""The one exception the analysis raises for bad input or bad configuration."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


class AnalysisInputError(ValueError):
    """Input or configuration the analysis cannot use.

    The message names the file, the field or rows, and what was expected; the
    CLI prints it without a traceback and exits with status 2.
    """


def describe_rows(frame: pd.DataFrame, columns: Sequence[str], limit: int = 10) -> str:
    """Render the first ``limit`` rows of ``frame`` as ``row i (col=value, ...)``.

    Used by every validation error so that a message names the offending rows
    by their key values and their place in the input: the row number of a
    tidy file, or the location a converter put in the index (``"runs.csv
    line 5 [gsm8k]"``).
    """
    lines = []
    for index, row in frame.head(limit).iterrows():
        keys = ", ".join(f"{c}={row[c]!r}" for c in columns if c in frame.columns)
        where = index if isinstance(index, str) else f"row {index}"
        lines.append(f"  {where} ({keys})")
    if len(frame) > limit:
        lines.append(f"  ... and {len(frame) - limit} more")
    return "\n".join(lines)
