"""Reading input files within the limits: CSV files, JSON files, JSON lines, the one file of a pattern."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import pandas as pd

from armlab.analysis.errors import AnalysisInputError
from armlab.files import BadFile, read_json, regular_file
from armlab.limits import DEFAULT_LIMITS

if TYPE_CHECKING:
    pass

LINE_CHUNK = 2**20  # bytes a line is read by


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
        with open(path, newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), None)
        if header:
            frame = pd.read_csv(path, encoding="utf-8", **{"dtype": str, "keep_default_na": False, **options})
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


def _line(lines: BinaryIO, longest: int) -> bytearray:
    """The next line of ``lines``, no more than ``longest`` + 1 bytes of it read (empty at the end).

    Grown in place chunk by chunk: ``readline(longest + 1)`` joins its chunks at the end, twice the limit at once.
    """
    line = bytearray()
    while len(line) <= longest:
        chunk = lines.readline(min(LINE_CHUNK, longest + 1 - len(line)))
        line += chunk
        if not chunk or chunk.endswith(b"\n"):
            break
    return line


def json_lines(path: Path, what: str, record: str, limits: Mapping[str, int]) -> Iterator[tuple[int, str, dict]]:
    """(line number, "<path> line <n>", object) of each non-blank line of a JSON-lines file of ``what``.

    Read a line at a time, none longer than ``limits["input_line_bytes"]``. A line that is too long, not UTF-8,
    not valid JSON (a truncated file) or not a JSON object (one ``record``) is an error naming it.
    """
    longest = limits["input_line_bytes"]
    with open(regular_input(path, f"{what} (JSON lines)", limits), "rb") as lines:
        for line_no, raw in enumerate(iter(lambda: _line(lines, longest), b""), start=1):
            where = f"{path} line {line_no}"
            if len(raw) > longest and not raw.endswith(b"\n"):  # read no further than the limit
                raise AnalysisInputError(
                    f"{where}: longer than the limit of {longest} bytes; set limits.input_line_bytes in the config "
                    f"to read it"
                )
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise AnalysisInputError(f"{path}: not UTF-8 text (line {line_no}); expected {what}") from None
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                reason = f"not valid JSON ({exc.msg} at column {exc.colno}); truncated file?"
                raise AnalysisInputError(f"{where}: {reason}") from None
            if not isinstance(value, dict):
                raise AnalysisInputError(f"{where}: expected a JSON object ({record})")
            yield line_no, where, value


def single_path(paths: Iterable[Path], directory: Path, what: str) -> Path:
    paths = sorted(paths)
    if len(paths) != 1:
        raise AnalysisInputError(
            f"{directory}: expected exactly one {what}, found {len(paths)} {[p.name for p in paths]}"
        )
    return paths[0]
