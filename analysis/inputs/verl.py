"""``input.kind: verl``: verl's validation dumps (``<step>.jsonl``, a line per sampled answer)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs.reading import json_lines
from armlab.analysis.inputs.runs import locate
from armlab.analysis.inputs.tidy import as_seed, rows_frame
from armlab.files import json_number
from armlab.limits import DEFAULT_LIMITS

if TYPE_CHECKING:
    from armlab.analysis.config import Config

ITEM_ID_DIGITS = 16  # hex digits of the sha256 of a prompt: the item id of a verl dump


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
        lines = json_lines(path, "a verl validation dump", "one answer of verl's validation dump", limits)
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
    return rows_frame(rows)


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


KEYS = frozenset({"pattern", "manifest", "step", "sources", "benchmark", "source_field", "score_field"})


def load(config: Config, spec: Mapping[str, Any]) -> tuple[pd.DataFrame, str]:
    """``input.kind: verl`` (see :mod:`armlab.analysis.inputs`)."""
    if ("pattern" in spec) == ("manifest" in spec) or "step" not in spec:
        raise AnalysisInputError(
            f"{config.source}: input: kind verl needs 'step', one of 'pattern', 'manifest', and one of "
            f"'sources' (data source -> benchmark), 'benchmark'"
        )
    assert config.benchmarks is not None  # load_scores checked
    options = {
        "step": spec["step"],
        "sources": spec.get("sources"),
        "benchmark": spec.get("benchmark"),
        "source_field": spec.get("source_field", "data_source"),
        "score_field": spec.get("score_field", "score"),
    }
    verl_options(config.benchmarks, **options, where=f"{config.source}: input")  # before any file is read
    runs, where = locate(config, spec)
    frame = verl_to_tidy(
        runs, experiment=config.experiment, benchmarks=config.benchmarks, **options, limits=config.limits
    )
    return frame, f"verl validation dumps (step {spec['step']}) of {len(runs)} run(s) from {where}"
