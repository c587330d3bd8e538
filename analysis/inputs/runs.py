"""Locating the runs of results from elsewhere: a directory per (arm, seed), by a template or a manifest."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from armlab.analysis.errors import AnalysisInputError, describe_rows
from armlab.analysis.inputs.reading import read_csv, regular_input
from armlab.analysis.inputs.tidy import as_seed
from armlab.limits import DEFAULT_LIMITS

if TYPE_CHECKING:
    from armlab.analysis.config import Config


def runs_from_pattern(
    pattern: str,
    experiment: str,
    *,
    files: bool = False,
    key: str = "input.pattern",
    limits: Mapping[str, int] = DEFAULT_LIMITS,
) -> list[tuple[str, int, Path]]:
    """Find ``(arm, seed, directory)`` for every directory (every file, with ``files``) matching a template with
    ``{arm}`` and ``{seed}``; errors name the setting ``key``. With ``files`` every match must be a regular file of
    at most ``limits["input_file_bytes"]``: a FIFO, a device or a folder that matches is an error, not left out."""
    pattern = pattern.replace("{experiment}", experiment)
    if "{arm}" not in pattern or "{seed}" not in pattern:
        raise AnalysisInputError(f"{key} {pattern!r}: expected the placeholders {{arm}} and {{seed}}")
    regex = re.compile(
        re.escape(pattern).replace(r"\{arm\}", r"(?P<arm>[^/]+)").replace(r"\{seed\}", r"(?P<seed>-?\d+)")
    )
    glob = pattern.replace("{arm}", "*").replace("{seed}", "*")
    root = Path("/") if glob.startswith("/") else Path(".")
    runs = []
    for path in sorted(root.glob(glob.lstrip("/"))):
        match = regex.fullmatch(str(path if glob.startswith("/") else path.as_posix()))
        if match and files:
            regular_input(path, f"file matching {key}", limits)  # a FIFO, a device or a folder is named, not skipped
        if match and (files or path.is_dir()):
            seed = as_seed(match["seed"])
            if seed is None:
                raise AnalysisInputError(f"{path}: seed {match['seed']} (from {key}) is outside int64")
            runs.append((match["arm"], seed, path))
    if not runs:
        raise AnalysisInputError(f"{key} {pattern!r}: no {'file' if files else 'directory'} matches")
    return runs


def runs_from_manifest(path: Path | str, limits: Mapping[str, int] = DEFAULT_LIMITS) -> list[tuple[str, int, Path]]:
    """Read ``(arm, seed, directory)`` from a CSV manifest with columns arm, seed, path."""
    path = Path(path)
    table = read_csv(path, "manifest", limits=limits)
    if set(table.columns) != {"arm", "seed", "path"}:
        raise AnalysisInputError(f"{path}: expected the columns arm, seed, path; got {list(table.columns)}")
    table.index = [f"{path.name} line {i + 2}" for i in range(len(table))]  # line 1 is the header
    empty = (table == "").any(axis=1)
    if empty.any():
        raise AnalysisInputError(f"{path}: empty cells in\n{describe_rows(table[empty], ['arm', 'seed', 'path'])}")
    seeds = [as_seed(s) if re.fullmatch(r"-?\d+", s) else None for s in table["seed"]]
    bad = np.array([seed is None for seed in seeds])
    if bad.any():
        raise AnalysisInputError(
            f"{path}: seed: expected integers within int64 in\n{describe_rows(table[bad], ['arm', 'seed'])}"
        )
    checked = cast(list[int], seeds)  # no None past the check above
    return [(r.arm, seed, path.parent / r.path) for r, seed in zip(table.itertuples(), checked)]


def locate(config: Config, spec: Mapping[str, Any]) -> tuple[list[tuple[str, int, Path]], str]:
    """The runs an ``input:`` section names by ``pattern`` or ``manifest``, and which of the two it was."""
    if "pattern" in spec:
        return runs_from_pattern(spec["pattern"], config.experiment), spec["pattern"]
    return runs_from_manifest(spec["manifest"], config.limits), spec["manifest"]
