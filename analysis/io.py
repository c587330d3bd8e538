"""Inputs: the tidy scores table, converters into it, and its validation.

Every input ends up as the tidy table of docs/contracts.md (armlab/contract.py), one row per scored item::

    experiment, arm, seed (int), benchmark, domain, item (str), score (float in [0, 1])

A per-benchmark source (a wide CSV) has ``item == "*"``. The ``input:``
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
    in the results JSON.

Relative paths are relative to the working directory, except manifest entries,
which are relative to the manifest.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterable, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import pandas as pd

from analysis.errors import AnalysisInputError, describe_rows
from armlab.contract import COLUMNS, PER_BENCHMARK_ITEM, RUN, duplicated_keys
from armlab.files import BadFile, json_number, read_json

if TYPE_CHECKING:
    from analysis.config import Comparison, Config

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
FLOAT_EXACT_INTEGERS = 2**53  # a float holds every integer below this, not all above


# ----------------------------------------------------------------------------- reading


def read_csv(path: Path | str, what: str, **options: Any) -> pd.DataFrame:
    """A CSV file as a frame: every cell text unless ``options`` say otherwise, and ``NA`` a name, not missing.

    :class:`AnalysisInputError` naming the file when it is missing, not UTF-8, not valid CSV, empty, or
    has a column twice in its header (pandas would rename the second copy and use the first silently).
    """
    path = Path(path)
    if not path.is_file():
        raise AnalysisInputError(f"{path}: {what} not found")
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


def _read_json(path: Path | str, what: str) -> object:
    try:
        return read_json(path, what)
    except BadFile as exc:
        raise AnalysisInputError(str(exc)) from None


def _read_text(path: Path | str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AnalysisInputError(f"{path}: not UTF-8 text; expected {what}") from None


def read_tidy(path: Path | str) -> pd.DataFrame:
    """Read a tidy scores table (``.parquet``, or ``.csv``); :func:`validate_scores` checks it."""
    path = Path(path)
    if not path.exists():
        raise AnalysisInputError(f"{path}: scores file not found")
    if path.suffix == ".csv":
        frame = read_csv(path, "scores file", na_values=[""])
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
        if not (math.isfinite(value) and float(value).is_integer() and abs(value) < FLOAT_EXACT_INTEGERS):
            return None
        value = int(value)
    if isinstance(value, (int, np.integer)) and INT64_MIN <= int(value) <= INT64_MAX:
        return int(value)
    return None


def coerce_tidy(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    """Check the tidy columns exist and give ``score`` and ``seed`` their contract types.

    ``seed`` must hold whole numbers within int64 and ``score`` numbers; anything else is an
    error naming the rows. Missing values stay missing (``seed`` as a nullable integer) for
    :func:`validate_scores` to report.
    """
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise AnalysisInputError(f"{source}: missing column(s) {missing}; the tidy scores table has exactly {COLUMNS}")
    frame = frame[COLUMNS].copy()
    score = pd.to_numeric(frame["score"], errors="coerce")
    bad = score.isna() & frame["score"].notna()
    if bad.any():
        raise AnalysisInputError(
            f"{source}: score: expected numbers; non-numeric in\n{describe_rows(frame[bad], COLUMNS)}"
        )
    codes, values = pd.factorize(frame["seed"])  # seeds repeat: parse each distinct value once
    seeds = [as_seed(v) for v in values]
    bad = (codes >= 0) & np.isin(codes, [i for i, seed in enumerate(seeds) if seed is None])
    if bad.any():
        raise AnalysisInputError(
            f"{source}: seed: expected integers within int64 (the pairing key); got\n"
            f"{describe_rows(frame[bad], COLUMNS)}"
        )
    lookup = np.array([0, *seeds], dtype=np.int64)  # code -1 (missing) reads the masked 0
    frame["score"] = score.astype(float)
    frame["seed"] = pd.arrays.IntegerArray(lookup[codes + 1], mask=codes < 0)
    return frame


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
) -> pd.DataFrame:
    """Convert a wide per-run CSV (one column per benchmark) into tidy rows with item ``"*"``.

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
    table = read_csv(path, "wide CSV")
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
        parts.append(
            pd.DataFrame(
                {
                    "experiment": experiment,
                    "arm": arms.to_numpy(),
                    "seed": table[seed].to_numpy(),
                    "benchmark": benchmark,
                    "domain": benchmarks[benchmark],
                    "item": PER_BENCHMARK_ITEM,
                    # empty cells become NaN and are reported by validation
                    "score": pd.to_numeric(table[column], errors="coerce").to_numpy() / divisor,
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
    """
    rows = []
    for arm, seed, directory in runs:
        directory = Path(directory)
        results = _single(directory.rglob("results_*.json"), directory, "results_*.json")
        report = _read_json(results, "lm-eval results JSON")
        aggregates = report.get("results") if isinstance(report, dict) else None
        if not isinstance(aggregates, dict):
            raise AnalysisInputError(
                f"{results}: expected a JSON object with a 'results' mapping (task -> metrics), as lm-eval writes"
            )
        for task, domain in benchmarks.items():
            key = metric[task] if isinstance(metric, dict) else metric
            name, _, filt = key.partition(",")
            pattern = re.compile(rf"samples_{re.escape(task)}_\d{{4}}-\d\d-\d\dT[\d.:-]+\.jsonl")
            samples = [p for p in directory.rglob("samples_*.jsonl") if pattern.fullmatch(p.name)]
            if not samples:
                continue  # a missing benchmark is reported by validation, for all runs at once
            samples = _single(samples, directory, f"samples_{task}_*.jsonl")
            scores, seen_filters = [], set()
            for line_no, line in enumerate(_read_text(samples, "lm-eval samples (JSON lines)").splitlines(), start=1):
                if not line.strip():
                    continue
                where = f"{samples} line {line_no}"
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise AnalysisInputError(
                        f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); truncated file?"
                    ) from None
                if not isinstance(record, dict):
                    raise AnalysisInputError(f"{where}: expected a JSON object (one lm-eval sample)")
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
    if not rows:
        raise AnalysisInputError(f"lm-eval input: no samples for benchmarks {list(benchmarks)} in {len(runs)} run(s)")
    index, *values = zip(*rows)
    return pd.DataFrame(dict(zip(COLUMNS, values)), index=list(index))


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


def lmeval_runs_from_manifest(path: Path | str) -> list[tuple[str, int, Path]]:
    """Read ``(arm, seed, directory)`` from a CSV manifest with columns arm, seed, path."""
    path = Path(path)
    table = read_csv(path, "manifest")
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
    return [(r.arm, seed, path.parent / r.path) for r, seed in zip(table.itertuples(), seeds)]


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
        return read_tidy(path), f"tidy scores {path}"
    kind = spec["kind"]
    allowed = {
        "tidy": {"path"},
        "wide_csv": {"path", "arm", "seed", "scale", "columns", "filters"},
        "lmeval": {"pattern", "manifest", "metric"},
    }
    if kind not in allowed:
        raise AnalysisInputError(f"{config.source}: input.kind: expected one of {sorted(allowed)}, got {kind!r}")
    unknown = sorted(set(spec) - allowed[kind] - {"kind"})
    if unknown:
        raise AnalysisInputError(f"{config.source}: input: unknown key(s) {unknown} for kind {kind}")
    if kind == "tidy":
        return read_tidy(spec["path"]), f"tidy scores {spec['path']}"
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
        )
        return frame, f"wide CSV {spec['path']}" + (f" filtered by {filters}" if filters else "")
    if ("pattern" in spec) == ("manifest" in spec) or "metric" not in spec:
        raise AnalysisInputError(f"{config.source}: input: kind lmeval needs 'metric' and one of 'pattern', 'manifest'")
    if "pattern" in spec:
        runs, where = lmeval_runs_from_pattern(spec["pattern"], config.experiment), spec["pattern"]
    else:
        runs, where = lmeval_runs_from_manifest(spec["manifest"]), spec["manifest"]
    frame = lmeval_to_tidy(runs, experiment=config.experiment, benchmarks=config.benchmarks, metric=spec["metric"])
    return frame, f"lm-eval output of {len(runs)} run(s) from {where}"


# -------------------------------------------------------------------------- validation


def validate_scores(
    frame: pd.DataFrame,
    *,
    experiment: str,
    comparisons: Iterable[Comparison],
    benchmarks: dict[str, str] | None = None,
    drop_incomplete: bool = False,
    source: str = "scores",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Check a tidy table before any computation; return ``(frame, dropped)``.

    Errors (each naming the rows): missing columns, non-numeric scores or
    seeds (:func:`coerce_tidy`); missing values; scores outside [0, 1];
    duplicate (experiment, arm, seed, benchmark, item); another experiment's
    rows; a benchmark with two domains, or benchmarks/domains that disagree
    with the config; compared arms without rows; an arm whose seeds differ
    from its reference's; runs (arm, seed) lacking benchmarks or items.

    Seed matching is checked only for arms in ``comparisons`` (references
    included); other arms, such as the untrained ``base``, are summarized but
    never paired. With ``drop_incomplete`` incomplete runs are removed instead
    of failing and listed in ``dropped`` (arm, seed, reason); each comparison
    then uses the seeds complete in both of its arms.
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
    duplicated = duplicated_keys(frame)
    if duplicated.any():
        fail("duplicate rows for the same (experiment, arm, seed, benchmark, item)", duplicated)
    foreign = frame["experiment"] != experiment
    if foreign.any():
        fail(f"rows of another experiment than {experiment!r}", foreign)
    frame = frame.astype({"seed": "int64"})

    domains = frame.groupby("benchmark", observed=True)["domain"].unique()
    mixed = domains[domains.map(len) > 1]
    if len(mixed):
        raise AnalysisInputError(f"{source}: benchmark(s) with more than one domain: {mixed.map(list).to_dict()}")
    if benchmarks is not None:
        found = domains.map(lambda d: d[0]).to_dict()
        absent, extra = sorted(set(benchmarks) - set(found)), sorted(set(found) - set(benchmarks))
        wrong = {b: (found[b], d) for b, d in benchmarks.items() if b in found and found[b] != d}
        if absent or extra or wrong:
            raise AnalysisInputError(
                f"{source}: benchmarks disagree with the config: missing {absent}, not in config {extra}, "
                f"domain (scores, config) {wrong}"
            )

    seeds = frame.groupby("arm", observed=True)["seed"].unique().map(lambda s: set(s.tolist())).to_dict()
    for comp in comparisons:
        absent = [a for a in (comp.reference, *comp.arms) if a not in seeds]
        if absent:
            raise AnalysisInputError(
                f"{source}: family {comp.family}: arm(s) {absent} have no scores; arms present: {sorted(seeds)}"
            )
        for arm in comp.arms:
            if seeds[arm] != seeds[comp.reference]:
                raise AnalysisInputError(
                    f"{source}: family {comp.family}: seeds of arm {arm!r} {sorted(seeds[arm])} do not match "
                    f"those of its reference {comp.reference!r} {sorted(seeds[comp.reference])}: "
                    f"only in {arm}: {sorted(seeds[arm] - seeds[comp.reference])}, "
                    f"only in {comp.reference}: {sorted(seeds[comp.reference] - seeds[arm])}"
                )

    incomplete = incomplete_runs(frame)
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
    return frame, incomplete


def incomplete_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """Runs (arm, seed) that lack a benchmark, or some of a benchmark's items.

    A benchmark's item set is the union over all runs; returns a frame with
    columns arm, seed, reason (empty when every run is complete).
    """
    items_per_benchmark = frame.groupby("benchmark", observed=True)["item"].nunique()
    counts = frame.groupby([*RUN, "benchmark"], observed=True).size().unstack("benchmark", fill_value=0)
    counts = counts.reindex(columns=items_per_benchmark.index, fill_value=0)
    short = counts.lt(items_per_benchmark, axis=1)
    records = []
    for (arm, seed), row in short[short.any(axis=1)].iterrows():
        lacking = row.index[row]
        absent = [b for b in lacking if counts.at[(arm, seed), b] == 0]
        partial = [
            f"{b} ({counts.at[(arm, seed), b]} of {items_per_benchmark[b]} items)" for b in lacking if b not in absent
        ]
        reason = "; ".join(
            filter(None, [absent and f"missing benchmark(s) {absent}", partial and f"incomplete {', '.join(partial)}"])
        )
        records.append((arm, int(seed), reason))
    return pd.DataFrame(records, columns=[*RUN, "reason"])
