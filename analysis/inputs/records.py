"""The experiment's record of looks as the analysis reads it: ``sequential/looks.jsonl``, one look record
(:class:`armlab.spec.Look`) a line, appended by the workflow's looks (:mod:`armlab.experiment.sequential`) and never
rewritten. Reading only: the analysis checks its decisions against the runs' scores
(:func:`armlab.analysis.waves.final_tables`) but never writes a look or a lock."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from armlab import files
from armlab.analysis.errors import AnalysisInputError


@dataclass(frozen=True)
class RecordedLooks:
    """The record of looks as read: its file (named in errors) and its look records, in order."""

    path: Path
    looks: list[dict]


def read_ledger(path: str | Path) -> list[dict]:
    """The recorded looks, in order; an unreadable line is an error naming it."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return []
    records = []
    for number, line in enumerate(files.regular_file(path, "record of looks").read_bytes().splitlines(), 1):
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("look"), int):
            raise AnalysisInputError(f"{path}: line {number} is not a look record; the record of looks is damaged")
        records.append(record)
    return records


def recorded_looks(path: str | Path) -> RecordedLooks | None:
    """The record of looks at ``path`` when its folder exists (the workflow's own results, whose record must be
    complete: a missing file records no look); None where there is no folder (results from elsewhere)."""
    path = Path(path)
    return RecordedLooks(path, read_ledger(path)) if path.parent.is_dir() else None
