"""Inputs: the tidy scores table, converters into it, and its validation.

Every input ends up as the tidy table of docs/contracts.md (armlab/contract.py), one row per scored item::

    experiment, arm, seed (int), benchmark, domain, item (str), score (float in [0, 1]),
    n_samples (int >= 1), n_correct (float in [0, n_samples])

``score`` is the mean correctness over the item's ``n_samples`` sampled answers and ``n_correct`` their
sum (``score == n_correct / n_samples``). A table without the two count columns reads as one sample per
item (``n_samples = 1``, ``n_correct = score``); one of them without the other is an error. A
per-benchmark source (a wide CSV) has ``item == "*"`` and one sample. Every frame a converter or
:func:`validate_scores` returns has exactly :data:`~armlab.contract.COLUMNS`, in order. The ``input:``
section of a config picks the source:

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
    number of answers the filter kept (:func:`lmeval_to_tidy`).
``kind: verl``
    verl's validation dumps (``trainer.validation_data_dir``: one
    ``<step>.jsonl`` per validation, a line per sampled answer) per (arm,
    seed), located by ``pattern`` or ``manifest`` as for lm-eval. Keys:
    ``step`` (an integer, or ``last``); ``sources`` (a line's data source ->
    benchmark) or ``benchmark`` (the one benchmark of a dump without data
    sources); optional ``source_field`` (default ``data_source``) and
    ``score_field`` (default ``score``, verl's reward; e.g. ``acc`` where the
    reward function returns the bare correctness beside a shaped reward). One
    row per prompt: its answers' scores are the correctness (:func:`verl_to_tidy`).

Relative paths are relative to the working directory, except manifest entries,
which are relative to the manifest.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn, cast

import numpy as np
import pandas as pd

from armlab.analysis.errors import AnalysisInputError, describe_rows
from armlab.contract import COLUMNS, PER_BENCHMARK_ITEM, REQUIRED, RUN, SAMPLE_COUNTS, duplicated_keys
from armlab.files import BadFile, json_number, read_json, regular_file
from armlab.limits import DEFAULT_LIMITS

if TYPE_CHECKING:
    from armlab.analysis.config import Comparison, Config

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
FLOAT_EXACT_INTEGERS = 2**53  # a float holds every integer below this, not all above
ITEM_ID_DIGITS = 16  # hex digits of the sha256 of a prompt: the item id of a verl dump
COUNT_TOLERANCE = 1e-9  # |score - n_correct / n_samples|, and a k-answer metric times k from a whole number


# ----------------------------------------------------------------------------- reading


def read_csv(
    path: Path | str, what: str, *, limits: Mapping[str, int] = DEFAULT_LIMITS, **options: Any
) -> pd.DataFrame:
    """A CSV file as a frame: every cell text unless ``options`` say otherwise, and ``NA`` a name, not missing.

    :class:`AnalysisInputError` naming the file when it is missing, larger than ``limits["input_file_bytes"]``,
    not UTF-8, not valid CSV, empty, or has a column twice in its header (pandas would rename the second copy and
    use the first silently).
    """
    path = _regular_file(path, what, limits)
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


def _read_json(path: Path | str, what: str, limits: Mapping[str, int]) -> object:
    try:
        return read_json(path, what, limits)
    except BadFile as exc:
        raise AnalysisInputError(str(exc)) from None


def _regular_file(path: Path | str, what: str, limits: Mapping[str, int]) -> Path:
    try:
        return regular_file(path, what, "input_file_bytes", limits)
    except BadFile as exc:
        raise AnalysisInputError(str(exc)) from None


LINE_CHUNK = 2**20  # bytes a line is read by


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


def _json_lines(path: Path, what: str, record: str, limits: Mapping[str, int]) -> Iterator[tuple[int, str, dict]]:
    """(line number, "<path> line <n>", object) of each non-blank line of a JSON-lines file of ``what``.

    Read a line at a time, none longer than ``limits["input_line_bytes"]``. A line that is too long, not UTF-8,
    not valid JSON (a truncated file) or not a JSON object (one ``record``) is an error naming it.
    """
    longest = limits["input_line_bytes"]
    with open(_regular_file(path, f"{what} (JSON lines)", limits), "rb") as lines:
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


def read_tidy(path: Path | str, limits: Mapping[str, int] = DEFAULT_LIMITS) -> pd.DataFrame:
    """Read a tidy scores table (``.parquet``, or ``.csv``) of at most ``limits["input_file_bytes"]``;
    :func:`validate_scores` checks it."""
    path = _regular_file(path, "scores file", limits)
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
        frame["n_samples"] = np.ones(len(frame), dtype=np.int64)
        frame["n_correct"] = frame["score"]
        return frame[COLUMNS]
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


def wide_csv_to_tidy(
    path: Path | str,
    *,
    experiment: str,
    benchmarks: dict[str, str],
    arm: str,
    seed: str,
    scale: str,
    columns: dict[str, str] | None = None,
    filters: list[dict] | None = None,
    limits: Mapping[str, int] = DEFAULT_LIMITS,
) -> pd.DataFrame:
    """Convert a wide per-run CSV (one column per benchmark) into tidy rows with item ``"*"`` (one sample each).

    ``benchmarks`` maps benchmark -> domain; ``columns`` maps benchmark -> CSV
    column where they differ. ``scale="percent"`` divides by 100. The index of
    the result names the CSV line and benchmark of each row, so validation
    errors point into the CSV.
    """
    path = Path(path)
    if not path.exists():
        raise AnalysisInputError(f"{path}: wide CSV not found (set input.path, e.g. --set input.path=FILE)")
    if scale not in ("percent", "fraction"):
        raise AnalysisInputError(f"{path}: input.scale: expected 'percent' or 'fraction', got {scale!r}")
    table = read_csv(path, "wide CSV", limits=limits)
    table.index = [f"{path.name} line {i + 2}" for i in range(len(table))]  # line 1 is the header
    columns = {b: (columns or {}).get(b, b) for b in benchmarks}
    arm_fields = re.findall(r"{(\w+)}", arm) or [arm]
    needed = {*columns.values(), seed, *arm_fields, *(k for f in filters or [] for k in f)}
    absent = sorted(needed - set(table.columns))
    if absent:
        raise AnalysisInputError(f"{path}: column(s) {absent} not found; the file has {list(table.columns)}")
    if filters:
        keep = np.zeros(len(table), dtype=bool)
        for spec in filters:
            match = np.ones(len(table), dtype=bool)
            for column, wanted in spec.items():
                wanted = wanted if isinstance(wanted, list) else [wanted]
                match &= table[column].isin([str(w) for w in wanted]).to_numpy()
            keep |= match
        table = table[keep]
        if table.empty:
            raise AnalysisInputError(f"{path}: input.filters {filters} match no rows")
    arms = table.apply(lambda r: arm.format(**r), axis=1) if "{" in arm else table[arm]
    divisor = 100.0 if scale == "percent" else 1.0
    parts = []
    for benchmark, column in columns.items():
        cells = table[column].str.strip()
        text = cells[(cells != "") & pd.to_numeric(cells, errors="coerce").isna()]
        if len(text):
            shown = ", ".join(f"{where} ({value!r})" for where, value in text.head(5).items())
            raise AnalysisInputError(
                f"{path}: column {column!r}: expected plain numbers ({scale}, e.g. 52.5 for "
                f"52.5%), got {shown}{' ...' if len(text) > 5 else ''}"
            )
        score = pd.to_numeric(table[column], errors="coerce").to_numpy() / divisor  # empty cells: NaN, reported
        parts.append(
            pd.DataFrame(
                {
                    "experiment": experiment,
                    "arm": arms.to_numpy(),
                    "seed": table[seed].to_numpy(),
                    "benchmark": benchmark,
                    "domain": benchmarks[benchmark],
                    "item": PER_BENCHMARK_ITEM,
                    "score": score,
                    "n_samples": np.ones(len(table), dtype=np.int64),  # an accuracy counts as one sample
                    "n_correct": score,
                },
                index=[f"{i} [{column}]" for i in table.index],
            )
        )
    return pd.concat(parts)


def lmeval_to_tidy(
    runs: Sequence[tuple[str, int, Path | str]],
    *,
    experiment: str,
    benchmarks: dict[str, str],
    metric: str | dict[str, str],
    limits: Mapping[str, int] = DEFAULT_LIMITS,
) -> pd.DataFrame:
    """Convert lm-eval output directories into tidy per-item rows.

    ``runs`` is a list of ``(arm, seed, directory)``; each directory holds
    (possibly below a model-named folder) one ``results_*.json`` and, per task,
    one ``samples_<task>_<timestamp>.jsonl``. ``metric`` is lm-eval's
    ``"metric,filter"`` key, or a mapping benchmark -> key. The item id is
    lm-eval's ``doc_id``. Each task's mean item score is checked against the
    aggregate in the results JSON, which catches a wrong metric or filter; a
    results JSON without that aggregate is an error, as is any sample that is
    not a JSON object with a ``doc_id`` and a numeric metric.

    Sample counts (a task with ``repeats: k`` logs the k answers of a doc in
    ``resps``, and per filter the answers the filter kept in
    ``filtered_resps``: all k, or the first k' for ``take_first_k``, one for
    ``take_first`` or ``majority_vote``):

    - a sample that logs numeric ``n_samples`` and ``n_correct`` (armlab's
      task configs log them as metrics) gives those, and ``n_correct /
      n_samples`` must equal the metric to within 1e-9; ``n_samples`` must be
      a whole number >= 1;
    - otherwise ``n_samples`` is the number of answers in ``filtered_resps``
      (1 for one answer: a string, or a list of one; 1 as well for the
      choices of a loglikelihood task, and for a sample that logs no
      ``filtered_resps``), the metric is taken as the mean over those answers
      and ``n_correct = metric * n_samples``. With more than one answer that
      must be a whole number to within 1e-9 (a 0/1 metric averaged over the
      answers); anything else is an error naming the file and line: the
      metric of a k-answer filter must be the mean over its answers (choose a
      filter that keeps one answer, or log ``n_samples`` and ``n_correct``).
    """
    rows = []
    for arm, seed, directory in runs:
        directory = Path(directory)
        results = _single(directory.rglob("results_*.json"), directory, "results_*.json")
        report = _read_json(results, "lm-eval results JSON", limits)
        if not (isinstance(report, dict) and isinstance(report.get("results"), dict)):
            raise AnalysisInputError(
                f"{results}: expected a JSON object with a 'results' mapping (task -> metrics), as lm-eval writes"
            )
        aggregates = report["results"]
        for task, domain in benchmarks.items():
            key = metric[task] if isinstance(metric, dict) else metric
            name, _, filt = key.partition(",")
            pattern = re.compile(rf"samples_{re.escape(task)}_\d{{4}}-\d\d-\d\dT[\d.:-]+\.jsonl")
            matches = [p for p in directory.rglob("samples_*.jsonl") if pattern.fullmatch(p.name)]
            if not matches:
                continue  # a missing benchmark is reported by validation, for all runs at once
            samples = _single(matches, directory, f"samples_{task}_*.jsonl")
            scores, seen_filters = [], set()
            for line_no, where, record in _json_lines(samples, "lm-eval samples", "one lm-eval sample", limits):
                seen_filters.add(str(record.get("filter", "none")))
                if record.get("filter", "none") != (filt or "none"):
                    continue
                if name not in record:
                    raise AnalysisInputError(f"{where}: metric {name!r} not in the sample; keys: {sorted(record)}")
                score = json_number(record[name])
                if score is None:
                    raise AnalysisInputError(f"{where}: metric {name!r} is {record[name]!r}; expected a finite number")
                if "doc_id" not in record:
                    raise AnalysisInputError(f"{where}: no 'doc_id', the item id lm-eval writes with --log_samples")
                n_samples, n_correct = _lmeval_counts(record, name, score, filt or "none", where)
                scores.append(score)
                rows.append(
                    (
                        f"{samples.name} line {line_no}",
                        experiment,
                        arm,
                        int(seed),
                        task,
                        domain,
                        str(record["doc_id"]),
                        score,
                        n_samples,
                        n_correct,
                    )
                )
            if not scores:
                raise AnalysisInputError(
                    f"{samples}: no sample with filter {filt or 'none'!r} for metric {key!r}; "
                    f"filters in the file: {sorted(seen_filters)}"
                )
            task_results = aggregates.get(task)
            if not isinstance(task_results, dict) or key not in task_results:
                keys = sorted(task_results) if isinstance(task_results, dict) else "no entry for the task"
                raise AnalysisInputError(
                    f"{results}: results.{task}: no {key!r} (found {keys}); expected the "
                    f"aggregate that the item scores of {samples.name} are checked against"
                )
            reported = json_number(task_results[key])
            if reported is None:
                raise AnalysisInputError(
                    f"{results}: results.{task}.{key!r} is {task_results[key]!r}; expected a finite number"
                )
            if abs(np.mean(scores) - reported) > 1e-9:
                raise AnalysisInputError(
                    f"{results}: results.{task}.{key!r} = {reported} but the mean item score in {samples.name} "
                    f"is {np.mean(scores)}; the metric must be the mean of per-item scores"
                )
            _check_doc_count(report, task, len(scores), results, samples)
    if not rows:
        raise AnalysisInputError(f"lm-eval input: no samples for benchmarks {list(benchmarks)} in {len(runs)} run(s)")
    return _frame(rows)


def _frame(rows: list[tuple]) -> pd.DataFrame:
    """The tidy frame of ``(where, *COLUMNS)`` tuples, indexed by where each row comes from."""
    index, *values = zip(*rows, strict=True)
    frame = pd.DataFrame(dict(zip(COLUMNS, values, strict=True)), index=list(index))
    return frame.astype({"seed": "int64", "score": float, "n_samples": "int64", "n_correct": float})


def _lmeval_counts(record: dict, name: str, score: float, filt: str, where: str) -> tuple[int, float]:
    """``(n_samples, n_correct)`` of one lm-eval sample whose metric ``name`` is ``score`` (see lmeval_to_tidy)."""
    if "n_samples" in record or "n_correct" in record:
        n_samples, n_correct = json_number(record.get("n_samples")), json_number(record.get("n_correct"))
        if n_samples is None or n_correct is None:
            raise AnalysisInputError(
                f"{where}: n_samples is {record.get('n_samples', 'missing')!r} and n_correct is "
                f"{record.get('n_correct', 'missing')!r}; expected both as numbers, or neither"
            )
        if not (n_samples.is_integer() and 1 <= n_samples < FLOAT_EXACT_INTEGERS):
            raise AnalysisInputError(f"{where}: n_samples is {n_samples:g}; expected a whole number >= 1")
        if abs(n_correct / n_samples - score) > COUNT_TOLERANCE:
            raise AnalysisInputError(
                f"{where}: n_correct / n_samples = {n_correct:g}/{n_samples:g} = {n_correct / n_samples} but "
                f"metric {name!r} is {score}; expected the metric to be the mean correctness over the answers"
            )
        generated = _generated_count(record)
        if generated is not None and generated != n_samples:
            raise AnalysisInputError(
                f"{where}: n_samples is {n_samples:g} but resps holds {generated} generated answer(s); expected the "
                f"logged counts to count the logged answers"
            )
        return int(n_samples), n_correct
    answers = _answer_count(record, where)
    n_correct = score * answers
    if answers > 1:
        if abs(n_correct - round(n_correct)) > COUNT_TOLERANCE:
            raise AnalysisInputError(
                f"{where}: metric {name!r} is {score} over the {answers} answers that filter {filt!r} kept, "
                f"which gives {n_correct:.6g} correct answers, not a whole number; the metric of a k-answer "
                f"filter must be the mean over its answers (of a 0/1 metric): choose a filter that keeps one "
                f"answer (take_first, majority_vote), or log n_samples and n_correct"
            )
        n_correct = float(round(n_correct))
    return answers, n_correct


def _generated_count(record: dict) -> int | None:
    """The answers one generation request of an lm-eval sample logged in ``resps`` (None: not countable so)."""
    resps = record.get("resps")
    if isinstance(resps, list) and len(resps) == 1 and isinstance(resps[0], list):
        if resps[0] and all(isinstance(answer, str) for answer in resps[0]):
            return len(resps[0])
    return None


def _check_doc_count(report: dict, task: str, docs: int, results: Path, samples: Path) -> None:
    """The docs of a samples file must be the ``n-samples`` (``effective``) its results JSON reports, when it does."""
    logged = report.get("n-samples", {}).get(task) if isinstance(report.get("n-samples"), dict) else None
    effective = json_number(logged.get("effective")) if isinstance(logged, dict) else None
    if effective is not None and effective != docs:
        raise AnalysisInputError(
            f"{results}: n-samples.{task}.effective is {effective:g} but {samples.name} holds {docs} doc(s) with "
            f"the metric's filter; expected the samples of every doc the results count (a truncated or mixed log?)"
        )


def _answer_count(record: dict, where: str) -> int:
    """The number of answers in an lm-eval sample's ``filtered_resps`` (one per request; see lmeval_to_tidy)."""
    kept = record.get("filtered_resps")
    if isinstance(kept, list) and len(kept) == 1:
        kept = kept[0]  # one request: a generation task, whose filter keeps one answer or a list of them
    if not isinstance(kept, list) or (kept and not all(isinstance(answer, str) for answer in kept)):
        return 1  # one answer, none logged, or several requests (the choices of a loglikelihood task)
    resps = record.get("resps")
    if isinstance(resps, list) and not (
        len(resps) == 1 and isinstance(resps[0], list) and all(isinstance(r, str) for r in resps[0])
    ):
        return 1  # not one request's generated answers: a loglikelihood pair written as text
    if not kept:
        raise AnalysisInputError(f"{where}: filtered_resps holds no answer; expected at least one per doc")
    return len(kept)


def lmeval_runs_from_pattern(pattern: str, experiment: str) -> list[tuple[str, int, Path]]:
    """Find ``(arm, seed, directory)`` for every directory matching a template with ``{arm}`` and ``{seed}``."""
    pattern = pattern.replace("{experiment}", experiment)
    if "{arm}" not in pattern or "{seed}" not in pattern:
        raise AnalysisInputError(f"input.pattern {pattern!r}: expected the placeholders {{arm}} and {{seed}}")
    regex = re.compile(
        re.escape(pattern).replace(r"\{arm\}", r"(?P<arm>[^/]+)").replace(r"\{seed\}", r"(?P<seed>-?\d+)")
    )
    glob = pattern.replace("{arm}", "*").replace("{seed}", "*")
    root = Path("/") if glob.startswith("/") else Path(".")
    runs = []
    for path in sorted(root.glob(glob.lstrip("/"))):
        match = regex.fullmatch(str(path if glob.startswith("/") else path.as_posix()))
        if match and path.is_dir():
            seed = as_seed(match["seed"])
            if seed is None:
                raise AnalysisInputError(f"{path}: seed {match['seed']} (from input.pattern) is outside int64")
            runs.append((match["arm"], seed, path))
    if not runs:
        raise AnalysisInputError(f"input.pattern {pattern!r}: no directory matches")
    return runs


def lmeval_runs_from_manifest(
    path: Path | str, limits: Mapping[str, int] = DEFAULT_LIMITS
) -> list[tuple[str, int, Path]]:
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


def verl_to_tidy(
    runs: Sequence[tuple[str, int, Path | str]],
    *,
    experiment: str,
    benchmarks: dict[str, str],
    step: int | str,
    sources: dict[str, str] | None = None,
    benchmark: str | None = None,
    source_field: str = "data_source",
    score_field: str = "score",
    limits: Mapping[str, int] = DEFAULT_LIMITS,
) -> pd.DataFrame:
    """Convert verl validation dumps into tidy per-prompt rows.

    ``runs`` is a list of ``(arm, seed, directory)``, each directory a run's
    ``trainer.validation_data_dir``. There verl's ``_dump_generations``
    (verl/trainer/ppo/ray_trainer.py; the format since verl PR #916, April
    2025) writes one ``<step>.jsonl`` per validation, named by the trainer's
    global step: a JSON object a line with ``input`` (the decoded prompt),
    ``output`` (one sampled answer), ``gts``, ``score`` (that answer's
    reward), ``step`` and the reward function's extra fields, so
    ``actor_rollout_ref.rollout.val_kwargs.n`` lines per prompt. ``step``
    picks the file: an integer, or ``"last"`` for the largest step in each
    directory.

    ``sources`` maps a line's data source (its field ``source_field``) to a
    benchmark of ``benchmarks`` (benchmark -> domain); or ``benchmark`` names
    the one benchmark of every line (verl dumps carry no data source unless the
    reward function returns one as an extra field; a ``benchmark`` dump whose
    lines name more than one source is an error). The item id is the first 16
    hex digits of the sha256 of the UTF-8 prompt text, the same in every run
    that validated on the same prompts. One row per (run, benchmark, prompt):
    ``n_samples`` is the number of lines with that prompt (a prompt that
    appears twice in the data set counts twice), ``n_correct`` the sum of their
    scores and ``score`` the mean. Each score must be a finite number in
    [0, 1], the answer's correctness: a reward with format bonuses or
    penalties is not one. Missing files, lines that are not complete JSON
    objects with ``input``, ``output`` and ``score``, a ``step`` field other
    than the file's, and data sources outside ``sources`` are errors naming
    the file and line.
    """
    wanted = verl_options(benchmarks, step, sources, benchmark, source_field, score_field)
    rows = []
    for arm, seed, directory in runs:
        path = _verl_dump(Path(directory), wanted)
        file_step = int(path.stem)
        cells: dict[tuple[str, str], list] = {}  # (benchmark, item) -> [where, n_samples, n_correct]
        prompts: dict[str, str] = {}  # item id -> prompt, to catch a collision of ids
        seen_sources: set[str] = set()
        lines = _json_lines(path, "a verl validation dump", "one answer of verl's validation dump", limits)
        for _, where, record in lines:
            absent = [k for k in ("input", "output", score_field) if k not in record]
            if absent:
                raise AnalysisInputError(
                    f"{where}: no {absent}; expected verl's validation fields input, output, {score_field} (and step)"
                )
            if not isinstance(record["input"], str):
                raise AnalysisInputError(f"{where}: input is {record['input']!r}; expected the prompt text")
            score = json_number(record[score_field])
            if score is None or not 0.0 <= score <= 1.0:
                problem = "not a finite number" if score is None else "outside [0, 1]"
                raise AnalysisInputError(
                    f"{where}: {score_field} {record[score_field]!r} is {problem}; the scores must be per-answer "
                    f"correctness in [0, 1] for this table (no format bonus or penalty; input.score_field names "
                    f"another field, such as a reward function's acc)"
                )
            if "step" in record and as_seed(record["step"]) != file_step:
                raise AnalysisInputError(
                    f"{where}: step {record['step']!r}, but the file is the dump of step {file_step}; "
                    f"expected every line of {path.name} to be of step {file_step}"
                )
            source = record.get(source_field)
            if sources is not None:
                if source_field not in record:
                    raise AnalysisInputError(
                        f"{where}: no {source_field!r}; input.sources maps a line's data source to a benchmark "
                        f"(set input.source_field, or use input.benchmark for a dump of one benchmark)"
                    )
                if not isinstance(source, str) or source not in sources:
                    raise AnalysisInputError(
                        f"{where}: data source {source!r} is not in input.sources {sorted(sources)}; "
                        f"expected one of them"
                    )
                name = sources[source]
            else:
                if source_field in record:
                    seen_sources.add(str(source))
                    if len(seen_sources) > 1:
                        raise AnalysisInputError(
                            f"{where}: data sources {sorted(seen_sources)} in one dump, but input.benchmark names "
                            f"the one benchmark of a dump; map the sources to benchmarks with input.sources"
                        )
                name = cast(str, benchmark)  # verl_options: set where sources is not
            item = hashlib.sha256(record["input"].encode("utf-8")).hexdigest()[:ITEM_ID_DIGITS]
            if prompts.setdefault(item, record["input"]) != record["input"]:
                raise AnalysisInputError(f"{where}: two prompts share the item id {item}; cannot tell them apart")
            cell = cells.setdefault((name, item), [where, 0, 0.0])  # a row names its prompt's first line
            cell[1] += 1
            cell[2] += score
        if not cells:
            raise AnalysisInputError(f"{path}: no validation lines; expected one JSON object per sampled answer")
        for (name, item), (where, n_samples, n_correct) in sorted(cells.items()):
            score = n_correct / n_samples
            rows.append((where, experiment, arm, int(seed), name, benchmarks[name], item, score, n_samples, n_correct))
    if not rows:
        raise AnalysisInputError(f"verl input: no validation dumps in {len(runs)} run(s)")
    return _frame(rows)


def verl_options(
    benchmarks: dict[str, str],
    step: object,
    sources: object,
    benchmark: object,
    source_field: object,
    score_field: object = "score",
    where: str = "input",
) -> int | None:
    """Check the options of :func:`verl_to_tidy` (``where`` starts the messages); return the step, None for last."""
    if (sources is None) == (benchmark is None):
        raise AnalysisInputError(f"{where}: kind verl needs one of 'sources' (data source -> benchmark), 'benchmark'")
    if sources is not None:
        if not (
            isinstance(sources, dict) and sources and all(isinstance(x, str) for x in (*sources, *sources.values()))
        ):
            raise AnalysisInputError(f"{where}.sources: expected a mapping data source -> benchmark, got {sources!r}")
        unknown = sorted({b for b in sources.values() if b not in benchmarks})
        if unknown:
            raise AnalysisInputError(
                f"{where}.sources: benchmark(s) {unknown} not in the config's benchmarks {sorted(benchmarks)}"
            )
    elif not isinstance(benchmark, str) or benchmark not in benchmarks:
        raise AnalysisInputError(
            f"{where}.benchmark: {benchmark!r} is not in the config's benchmarks {sorted(benchmarks)}"
        )
    for key, field_name in (("source_field", source_field), ("score_field", score_field)):
        if not isinstance(field_name, str) or not field_name:
            raise AnalysisInputError(f"{where}.{key}: expected a field name, got {field_name!r}")
    wanted = None if step == "last" else as_seed(step)
    if (wanted is None and step != "last") or (wanted is not None and wanted < 0):
        raise AnalysisInputError(f"{where}.step: expected a training step (an integer >= 0) or 'last', got {step!r}")
    return wanted


def _verl_dump(directory: Path, step: int | None) -> Path:
    """The ``<step>.jsonl`` of a verl validation directory; the largest step for ``None``."""
    if not directory.is_dir():
        raise AnalysisInputError(f"{directory}: not found; expected verl's trainer.validation_data_dir of the run")
    dumps: dict[int, Path] = {}
    for path in sorted(p for p in directory.glob("*.jsonl") if re.fullmatch(r"\d+", p.stem)):
        if int(path.stem) in dumps:  # 0010.jsonl and 10.jsonl: which one verl wrote last cannot be known
            raise AnalysisInputError(
                f"{directory}: two validation dumps of step {int(path.stem)} ({dumps[int(path.stem)].name} and "
                f"{path.name}); expected one <step>.jsonl per step: remove the other"
            )
        dumps[int(path.stem)] = path
    if step is None:
        if not dumps:
            raise AnalysisInputError(
                f"{directory}: no <step>.jsonl (input.step: last); expected verl's validation dumps"
            )
        step = max(dumps)
    if step not in dumps:
        raise AnalysisInputError(
            f"{directory / f'{step}.jsonl'}: not found; expected the validation dump of step {step} "
            f"(steps found: {sorted(dumps)})"
        )
    return dumps[step]


def _single(paths: Iterable[Path], directory: Path, what: str) -> Path:
    paths = sorted(paths)
    if len(paths) != 1:
        raise AnalysisInputError(
            f"{directory}: expected exactly one {what}, found {len(paths)} {[p.name for p in paths]}"
        )
    return paths[0]


def load_scores(config: Config, scores_path: Path | str | None = None) -> tuple[pd.DataFrame, str]:
    """Load the scores a config points at; return ``(tidy_frame, description)``.

    ``scores_path`` (the CLI's ``--scores``) replaces any ``input`` section by
    a tidy file; with neither, the input is ``results/<experiment>/scores.parquet``.
    """
    spec = config.input
    if scores_path is not None or spec is None:
        path = scores_path or Path("results") / config.experiment / "scores.parquet"
        return read_tidy(path, config.limits), f"tidy scores {path}"
    kind = spec["kind"]
    allowed = {
        "tidy": {"path"},
        "wide_csv": {"path", "arm", "seed", "scale", "columns", "filters"},
        "lmeval": {"pattern", "manifest", "metric"},
        "verl": {"pattern", "manifest", "step", "sources", "benchmark", "source_field", "score_field"},
    }
    if kind not in allowed:
        raise AnalysisInputError(f"{config.source}: input.kind: expected one of {sorted(allowed)}, got {kind!r}")
    unknown = sorted(set(spec) - allowed[kind] - {"kind"})
    if unknown:
        raise AnalysisInputError(f"{config.source}: input: unknown key(s) {unknown} for kind {kind}")
    if kind == "tidy":
        return read_tidy(spec["path"], config.limits), f"tidy scores {spec['path']}"
    if config.benchmarks is None:
        raise AnalysisInputError(f"{config.source}: benchmarks: input kind {kind} needs benchmark -> domain")
    if kind == "wide_csv":
        missing = sorted({"path", "arm", "seed", "scale"} - set(spec))
        if missing:
            raise AnalysisInputError(f"{config.source}: input: kind wide_csv needs {missing}")
        filters = spec.get("filters")
        if filters is not None and not (isinstance(filters, list) and all(isinstance(f, dict) for f in filters)):
            raise AnalysisInputError(f"{config.source}: input.filters: expected a list of {{column: value}}")
        frame = wide_csv_to_tidy(
            spec["path"],
            experiment=config.experiment,
            benchmarks=config.benchmarks,
            arm=spec["arm"],
            seed=spec["seed"],
            scale=spec["scale"],
            columns=spec.get("columns"),
            filters=filters,
            limits=config.limits,
        )
        return frame, f"wide CSV {spec['path']}" + (f" filtered by {filters}" if filters else "")
    if kind == "lmeval" and (("pattern" in spec) == ("manifest" in spec) or "metric" not in spec):
        raise AnalysisInputError(f"{config.source}: input: kind lmeval needs 'metric' and one of 'pattern', 'manifest'")
    if kind == "verl":
        if ("pattern" in spec) == ("manifest" in spec) or "step" not in spec:
            raise AnalysisInputError(
                f"{config.source}: input: kind verl needs 'step', one of 'pattern', 'manifest', and one of "
                f"'sources' (data source -> benchmark), 'benchmark'"
            )
        options = {
            "step": spec["step"],
            "sources": spec.get("sources"),
            "benchmark": spec.get("benchmark"),
            "source_field": spec.get("source_field", "data_source"),
            "score_field": spec.get("score_field", "score"),
        }
        verl_options(config.benchmarks, **options, where=f"{config.source}: input")  # before any file is read
    if "pattern" in spec:
        runs, where = lmeval_runs_from_pattern(spec["pattern"], config.experiment), spec["pattern"]
    else:
        runs, where = lmeval_runs_from_manifest(spec["manifest"], config.limits), spec["manifest"]
    if kind == "verl":
        frame = verl_to_tidy(
            runs, experiment=config.experiment, benchmarks=config.benchmarks, **options, limits=config.limits
        )
        return frame, f"verl validation dumps (step {spec['step']}) of {len(runs)} run(s) from {where}"
    frame = lmeval_to_tidy(
        runs, experiment=config.experiment, benchmarks=config.benchmarks, metric=spec["metric"], limits=config.limits
    )
    return frame, f"lm-eval output of {len(runs)} run(s) from {where}"


# -------------------------------------------------------------------------- validation


def validate_scores(
    frame: pd.DataFrame,
    *,
    experiment: str,
    comparisons: Iterable[Comparison],
    benchmarks: dict[str, str] | None = None,
    drop_incomplete: bool = False,
    nested_seeds: bool = False,
    source: str = "scores",
    unpaired: bool = False,
    common_seeds_only: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Check a tidy table before any computation; return ``(frame, dropped)``.

    Errors (each naming the rows): missing columns, one sample count without
    the other, non-numeric scores, seeds or counts, or an ``n_samples`` that
    is not a whole number (:func:`coerce_tidy`); missing values; scores
    outside [0, 1]; ``n_samples`` below 1; ``n_correct`` outside
    [0, n_samples]; ``score`` differing from ``n_correct / n_samples`` by more
    than 1e-9;
    duplicate (experiment, arm, seed, benchmark, item); another experiment's
    rows; a benchmark with two domains, or benchmarks/domains that disagree
    with the config; compared arms without rows; an arm whose seeds differ
    from its reference's; runs (arm, seed) lacking benchmarks or items.

    Seed matching is checked only for arms in ``comparisons`` (references
    included); other arms, such as the untrained ``base``, are summarized but
    never paired. With ``drop_incomplete`` incomplete runs are removed instead
    of failing and listed in ``dropped`` (arm, seed, reason); each comparison
    then uses the seeds complete in both of its arms. The returned frame has
    exactly :data:`COLUMNS`, with ``seed`` and ``n_samples`` int64. With
    ``nested_seeds`` (a sequential design, which stops an arm before its
    reference, or after it when the arm is still open in another family) one
    of the two seed sets may hold the other. With ``unpaired`` (independent
    runs, ``analysis.pairing: unpaired``) seeds are not matched at all. With
    ``common_seeds_only`` the runs of compared arms whose seed some compared
    arm lacks are removed and listed in ``dropped``.
    """

    def fail(problem: str, bad: pd.Series) -> NoReturn:
        raise AnalysisInputError(f"{source}: {problem} in\n{describe_rows(frame[bad], COLUMNS)}")

    frame = coerce_tidy(frame, source)
    if frame.empty:
        raise AnalysisInputError(f"{source}: no score rows")
    missing = frame.isna().any(axis=1)
    if missing.any():
        fail("missing values (NaN or empty cells)", missing)
    out_of_range = ~frame["score"].between(0.0, 1.0)
    if out_of_range.any():
        fail("scores outside [0, 1] (a percent table needs scale: percent)", out_of_range)
    frame = frame.astype({"n_samples": "int64"})
    no_samples = frame["n_samples"] < 1
    if no_samples.any():
        fail("n_samples below 1 (expected a whole number >= 1: the answers sampled per item)", no_samples)
    correct_out_of_range = ~frame["n_correct"].between(0.0, frame["n_samples"])
    if correct_out_of_range.any():
        fail("n_correct outside [0, n_samples] (the number of correct answers)", correct_out_of_range)
    inconsistent = (frame["score"] - frame["n_correct"] / frame["n_samples"]).abs() > COUNT_TOLERANCE
    if inconsistent.any():
        fail(
            f"score differs from n_correct / n_samples by more than {COUNT_TOLERANCE} (score is the mean "
            "correctness over the item's answers)",
            inconsistent,
        )
    # every later check groups by these columns: factorize each once (grouping by strings was most of the time)
    factorized = {column: pd.factorize(frame[column], sort=True) for column in ("arm", "seed", "benchmark", "item")}
    duplicated = duplicated_keys(frame, {column: codes for column, (codes, _) in factorized.items()})
    if duplicated.any():
        fail("duplicate rows for the same (experiment, arm, seed, benchmark, item)", duplicated)
    foreign = frame["experiment"] != experiment
    if foreign.any():
        fail(f"rows of another experiment than {experiment!r}", foreign)
    frame = frame.astype({"seed": "int64"})

    domains = dict(sorted(_values_by_key(factorized["benchmark"], pd.factorize(frame["domain"])).items()))
    mixed = {benchmark: names for benchmark, names in domains.items() if len(names) > 1}
    if mixed:
        raise AnalysisInputError(f"{source}: benchmark(s) with more than one domain: {mixed}")
    if benchmarks is not None:
        found = {benchmark: names[0] for benchmark, names in domains.items()}
        absent, extra = sorted(set(benchmarks) - set(found)), sorted(set(found) - set(benchmarks))
        wrong = {b: (found[b], d) for b, d in benchmarks.items() if b in found and found[b] != d}
        if absent or extra or wrong:
            raise AnalysisInputError(
                f"{source}: benchmarks disagree with the config: missing {absent}, not in config {extra}, "
                f"domain (scores, config) {wrong}"
            )

    seeds = {
        arm: {int(s) for s in found} for arm, found in _values_by_key(factorized["arm"], factorized["seed"]).items()
    }
    unmatched = pd.DataFrame(columns=[*RUN, "reason"])
    if common_seeds_only:
        compared = [a for comp in comparisons for a in (comp.reference, *comp.arms) if a in seeds]
        common = set.intersection(*(seeds[a] for a in compared)) if compared else set()
        unmatched = pd.DataFrame(
            [
                (arm, seed, f"seed {seed} was not run by every compared arm (analysis.common_seeds_only)")
                for arm in dict.fromkeys(compared)
                for seed in sorted(seeds[arm] - common)
            ],
            columns=[*RUN, "reason"],
        ).astype({"seed": "int64"})
        seeds |= {arm: seeds[arm] & common for arm in compared}
        kept = ~(frame["arm"].isin(compared) & ~frame["seed"].isin(common)).to_numpy()
        frame, factorized = (
            frame[kept],
            {column: (codes[kept], labels) for column, (codes, labels) in factorized.items()},
        )
    for comp in comparisons:
        absent = [a for a in (comp.reference, *comp.arms) if a not in seeds]
        if absent:
            raise AnalysisInputError(
                f"{source}: family {comp.family}: arm(s) {absent} have no scores; arms present: {sorted(seeds)}"
            )
        for arm in () if unpaired else comp.arms:
            if nested_seeds and (seeds[arm] <= seeds[comp.reference] or seeds[comp.reference] <= seeds[arm]):
                continue  # a sequential design stops an arm before its reference, or (open elsewhere) after it
            if seeds[arm] != seeds[comp.reference]:
                raise AnalysisInputError(
                    f"{source}: family {comp.family}: seeds of arm {arm!r} {sorted(seeds[arm])} do not match "
                    f"those of its reference {comp.reference!r} {sorted(seeds[comp.reference])}: "
                    f"only in {arm}: {sorted(seeds[arm] - seeds[comp.reference])}, "
                    f"only in {comp.reference}: {sorted(seeds[comp.reference] - seeds[arm])}"
                )

    incomplete = incomplete_runs(frame, factorized)
    if len(incomplete) and not drop_incomplete:
        lines = "\n".join(f"  arm={r.arm!r} seed={r.seed}: {r.reason}" for r in incomplete.head(10).itertuples())
        more = f"\n  ... and {len(incomplete) - 10} more" if len(incomplete) > 10 else ""
        raise AnalysisInputError(
            f"{source}: {len(incomplete)} run(s) lack benchmarks or items (analysis.drop_incomplete: true "
            f"drops them and lists them):\n{lines}{more}"
        )
    if len(incomplete):
        bad = pd.MultiIndex.from_frame(frame[RUN]).isin(pd.MultiIndex.from_frame(incomplete[RUN]))
        frame = frame[~bad]
    return frame, pd.concat([unmatched, incomplete], ignore_index=True) if len(unmatched) else incomplete


def _values_by_key(key: tuple[np.ndarray, pd.Index], value: tuple[np.ndarray, pd.Index]) -> dict:
    """Each distinct key's distinct values, in order of first appearance (``key``, ``value``: ``pd.factorize``).

    On integer codes: grouping by the string columns was most of the validation's time on large tables.
    """
    (key_codes, keys), (value_codes, values) = key, value
    pairs = pd.unique(key_codes.astype(np.int64) * len(values) + value_codes)
    found: dict[Any, list[Any]] = {}
    for k, v in zip(pairs // len(values), pairs % len(values)):
        found.setdefault(keys[k], []).append(values[v])
    return found


def incomplete_runs(frame: pd.DataFrame, factorized: dict | None = None) -> pd.DataFrame:
    """Runs (arm, seed) that lack a benchmark, or some of a benchmark's items.

    A benchmark's item set is the union over all runs; returns a frame with
    columns arm, seed, reason (empty when every run is complete), runs in
    (arm, seed) order. Counted on integer codes, as :func:`_values_by_key` (``factorized``: column ->
    ``pd.factorize(..., sort=True)`` of arm, seed, benchmark and item, when already computed).
    """
    factorized = factorized or {c: pd.factorize(frame[c], sort=True) for c in ("arm", "seed", "benchmark", "item")}
    (arm_codes, arms), (seed_codes, seeds) = factorized["arm"], factorized["seed"]
    (bench_codes, benchmarks), (item_codes, items) = factorized["benchmark"], factorized["item"]
    n_bench = len(benchmarks)
    cells = pd.unique(bench_codes.astype(np.int64) * len(items) + item_codes)
    items_per_benchmark = np.bincount(cells // len(items), minlength=n_bench)
    run_codes = arm_codes.astype(np.int64) * len(seeds) + seed_codes
    runs = np.unique(run_codes)
    counts = np.bincount(run_codes * n_bench + bench_codes, minlength=(runs.max() + 1) * n_bench)
    counts = counts.reshape(-1, n_bench)[runs]
    short = counts < items_per_benchmark
    records = []
    for r in np.flatnonzero(short.any(axis=1)):
        arm, seed = arms[runs[r] // len(seeds)], int(seeds[runs[r] % len(seeds)])
        lacking = np.flatnonzero(short[r])
        absent = [benchmarks[b] for b in lacking if counts[r, b] == 0]
        partial = [
            f"{benchmarks[b]} ({counts[r, b]} of {items_per_benchmark[b]} items)" for b in lacking if counts[r, b] > 0
        ]
        reasons = [
            f"missing benchmark(s) {absent}" if absent else None,
            f"incomplete {', '.join(partial)}" if partial else None,
        ]
        reason = "; ".join(filter(None, reasons))
        records.append((arm, seed, reason))
    return pd.DataFrame(sorted(records, key=lambda row: row[:2]), columns=[*RUN, "reason"])
