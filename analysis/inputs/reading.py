"""Reading input files within the limits: CSV files, JSON files, JSON lines, the one file of a pattern."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from armlab.analysis.errors import AnalysisInputError
from armlab.files import BadFile, csv_fields_within, read_json, regular_file, text_lines
from armlab.limits import DEFAULT_LIMITS


def read_csv(
    path: Path | str, what: str, *, limits: Mapping[str, int] = DEFAULT_LIMITS, **options: Any
) -> pd.DataFrame:
    """A CSV file as a frame: every cell text unless ``options`` say otherwise, and ``NA`` a name, not missing.

    :class:`AnalysisInputError` naming the file when it is missing, larger than ``limits["input_file_bytes"]``,
    not UTF-8, not valid CSV, empty, or has a column twice in its header (pandas would rename the second copy and
    use the first silently).
    """
    path = regular_input(path, what, limits)
    try:
        # utf-8-sig: a byte-order mark is not part of the first column's name
        with open(path, newline="", encoding="utf-8-sig") as f, csv_fields_within(limits):
            header = next(csv.reader(f), None)
        if header:
            frame = pd.read_csv(path, encoding="utf-8-sig", **{"dtype": str, "keep_default_na": False, **options})
    except UnicodeDecodeError:
        raise AnalysisInputError(f"{path}: not UTF-8 text; expected a CSV {what}") from None
    except (csv.Error, pd.errors.ParserError, ValueError) as exc:
        reason = str(exc).splitlines()[0]
        raise AnalysisInputError(f"{path}: not valid CSV ({reason}); expected a CSV {what}") from None
    if not header:
        raise AnalysisInputError(f"{path}: empty; expected a CSV {what} with a header line")
    repeated = sorted({column for column in header if header.count(column) > 1})
    if repeated:
        raise AnalysisInputError(
            f"{path} line 1: column(s) {repeated} appear more than once in the header; expected each column once"
        )
    return frame


def json_file(path: Path | str, what: str, limits: Mapping[str, int]) -> object:
    try:
        return read_json(path, what, limits)
    except BadFile as exc:
        raise AnalysisInputError(str(exc)) from None


def regular_input(path: Path | str, what: str, limits: Mapping[str, int]) -> Path:
    try:
        return regular_file(path, what, "input_file_bytes", limits)
    except BadFile as exc:
        raise AnalysisInputError(str(exc)) from None


def json_lines(path: Path, what: str, record: str, limits: Mapping[str, int]) -> Iterator[tuple[int, str, dict]]:
    """(line number, "<path> line <n>", object) of each non-blank line of a JSON-lines file of ``what``.

    Read a line at a time (:func:`armlab.files.text_lines`), none longer than ``limits["input_line_bytes"]``. A
    line that is too long, not UTF-8, not valid JSON (a truncated file) or not a JSON object (one ``record``) is an
    error naming it.
    """
    try:
        for line_no, line in text_lines(path, f"{what} (JSON lines)", limits):
            where = f"{path} line {line_no}"
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                reason = f"not valid JSON ({exc.msg} at column {exc.colno}); truncated file?"
                raise AnalysisInputError(f"{where}: {reason}") from None
            except RecursionError:
                raise AnalysisInputError(f"{where}: nested deeper than Python's JSON parser goes") from None
            if not isinstance(value, dict):
                raise AnalysisInputError(f"{where}: expected a JSON object ({record})")
            yield line_no, where, value
    except BadFile as exc:
        raise AnalysisInputError(str(exc)) from None


def single_path(paths: Iterable[Path], directory: Path, what: str) -> Path:
    paths = sorted(paths)
    if len(paths) != 1:
        raise AnalysisInputError(
            f"{directory}: expected exactly one {what}, found {len(paths)} {[p.name for p in paths]}"
        )
    return paths[0]
