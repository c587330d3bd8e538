"""Inputs: the tidy scores table, one module per format converting into it, and its validation.

Every input ends up as the tidy table of docs/contracts.md (armlab/contract.py), one row per scored item::

    experiment, arm, seed (int), benchmark, domain, item (str), score (float in [0, 1]),
    n_samples (int >= 1), n_correct (float in [0, n_samples])

``score`` is the mean correctness over the item's ``n_samples`` sampled answers and ``n_correct`` their
sum (``score == n_correct / n_samples``). A table without the two count columns reads as one sample per
item (``n_samples = 1``, ``n_correct = score``); one of them without the other is an error. A
per-benchmark source (a wide CSV) has ``item == "*"`` and one sample. Every frame a converter or
:func:`~armlab.analysis.inputs.validation.validate_scores` returns has exactly :data:`~armlab.contract.COLUMNS`,
in order. The ``input:`` section of a config picks the source (:data:`FORMATS`):

``kind: tidy``
    ``path`` to a parquet or CSV file in the tidy layout.
``kind: wide_csv``
    one row per run, one column per benchmark. Keys: ``path``; ``arm`` (a
    column, or a template over columns such as ``"{model}/{method}"``);
    ``seed`` (a column); ``scale`` (``percent`` or ``fraction``); optional
    ``columns`` (benchmark -> CSV column where the names differ) and
    ``filters`` (a list of ``{column: value or [values]}``; a row is kept when
    it matches every column of at least one filter, so several campaigns can
    be taken from one file). Domains come from the config's ``benchmarks``.
``kind: lmeval``
    lm-eval output (``results_*.json`` and ``samples_<task>_*.jsonl``, written
    with ``--log_samples``) per (arm, seed), located either by ``pattern``, a
    directory template with ``{arm}`` and ``{seed}`` (and optionally
    ``{experiment}``), or by ``manifest``, a CSV with columns arm, seed, path.
    ``metric`` names lm-eval's ``"metric,filter"`` key, for all benchmarks
    (``"exact_match,none"``) or per benchmark (a mapping). Tasks are the
    config's ``benchmarks``; each task's mean item score must equal the value
    in the results JSON. Sample counts: a sample's own numeric ``n_samples``
    and ``n_correct`` (armlab's task configs log them as metrics), else the
    number of answers the filter kept (:func:`~armlab.analysis.inputs.lmeval.lmeval_to_tidy`).
``kind: verl``
    verl's validation dumps (``trainer.validation_data_dir``: one
    ``<step>.jsonl`` per validation, a line per sampled answer) per (arm,
    seed), located by ``pattern`` or ``manifest`` as for lm-eval. Keys:
    ``step`` (an integer, or ``last``); ``sources`` (a line's data source ->
    benchmark) or ``benchmark`` (the one benchmark of a dump without data
    sources); optional ``source_field`` (default ``data_source``) and
    ``score_field`` (default ``score``, verl's reward; e.g. ``acc`` where the
    reward function returns the bare correctness beside a shaped reward). One
    row per prompt: its answers' scores are the correctness (:func:`~armlab.analysis.inputs.verl.verl_to_tidy`).

Relative paths are relative to the working directory, except manifest entries,
which are relative to the manifest.

Adding a format: one module here with its ``KEYS`` and a ``load(config, spec)`` returning the tidy frame and a
description, one :data:`FORMATS` entry, one test; :mod:`~armlab.analysis.inputs.validation` then applies unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs import lmeval, tidy, verl, wide_csv
from armlab.analysis.inputs.tidy import read_tidy
from armlab.registry import Registry

if TYPE_CHECKING:
    from armlab.analysis.config import Config


@dataclass(frozen=True)
class InputFormat:
    """One ``input.kind``: the keys its ``input:`` section takes, those it needs, and its reader
    ``load(config, spec) -> (tidy frame, description)``."""

    keys: frozenset[str]
    required: frozenset[str]  # checked here; a format with alternatives (pattern or manifest) checks its own
    load: Callable[[Config, Mapping[str, Any]], tuple[pd.DataFrame, str]]
    needs_benchmarks: bool = True  # the config's benchmark -> domain (every format but the tidy table's)


FORMATS: Registry[InputFormat] = Registry(
    "input kind",
    {
        "tidy": InputFormat(frozenset({"path"}), frozenset({"path"}), tidy.load, needs_benchmarks=False),
        "wide_csv": InputFormat(wide_csv.KEYS, wide_csv.REQUIRED_KEYS, wide_csv.load),
        "lmeval": InputFormat(lmeval.KEYS, frozenset(), lmeval.load),
        "verl": InputFormat(verl.KEYS, frozenset(), verl.load),
    },
)


def load_scores(config: Config, scores_path: Path | str | None = None) -> tuple[pd.DataFrame, str]:
    """Load the scores a config points at; return ``(tidy_frame, description)``.

    ``scores_path`` (the CLI's ``--scores``) replaces any ``input`` section by
    a tidy file; with neither, the input is ``results/<experiment>/scores.parquet``.
    """
    if scores_path is not None or config.input is None:
        path = scores_path or Path("results") / config.experiment / "scores.parquet"
        return read_tidy(path, config.limits), f"tidy scores {path}"
    return input_format(config).load(config, config.input)


def input_format(config: Config) -> InputFormat:
    """The format of the config's ``input:`` section, its keys checked before any file is read (an unknown kind or
    key, a missing key, benchmarks without domains: one line naming the config)."""
    spec = config.input
    if spec is None:
        raise AnalysisInputError(f"{config.source}: no input: section")
    kind = spec["kind"]
    found = FORMATS.entry(kind, f"{config.source}: input.kind", AnalysisInputError)
    unknown = sorted(set(spec) - found.keys - {"kind"})
    if unknown:
        raise AnalysisInputError(f"{config.source}: input: unknown key(s) {unknown} for kind {kind}")
    missing = sorted(found.required - set(spec))
    if missing:
        raise AnalysisInputError(f"{config.source}: input: kind {kind} needs {missing}")
    if found.needs_benchmarks and config.benchmarks is None:
        raise AnalysisInputError(f"{config.source}: benchmarks: input kind {kind} needs benchmark -> domain")
    return found
