"""``input.kind: lmeval``: lm-evaluation-harness output (``results_*.json`` and ``samples_<task>_*.jsonl``), and
armlab's own evaluation folders (``results.json`` and ``samples_armlab_<benchmark>.jsonl``, evals/run.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs.reading import json_file, json_lines, single_path
from armlab.analysis.inputs.runs import locate
from armlab.analysis.inputs.tidy import COUNT_TOLERANCE, FLOAT_EXACT_INTEGERS, rows_frame
from armlab.contract import TASK_PREFIX
from armlab.files import json_number
from armlab.limits import DEFAULT_LIMITS

if TYPE_CHECKING:
    from armlab.analysis.config import Config


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
    one ``samples_<task>_<timestamp>.jsonl``, as lm-eval writes them, or one
    ``results.json`` and per task one ``samples_<task>.jsonl``, as armlab's
    evaluation job does. ``metric`` is lm-eval's ``"metric,filter"`` key, or a
    mapping benchmark -> key. The item id is lm-eval's ``doc_id``. A benchmark
    ``b`` with no task of its own name is read from armlab's task
    ``armlab_<b>`` when there is one, with armlab's item ids (the doc's
    ``id``): so an evaluation folder of the workflow gives the workflow's table.
    Each task's mean item score is checked against the aggregate in the
    results JSON, which catches a wrong metric or filter; a
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
        found = [
            p for p in directory.rglob("results*.json") if p.name == "results.json" or p.name.startswith("results_")
        ]
        results = single_path(found, directory, "results_*.json (or an armlab evaluation's results.json)")
        report = json_file(results, "lm-eval results JSON", limits)
        if not (isinstance(report, dict) and isinstance(report.get("results"), dict)):
            raise AnalysisInputError(
                f"{results}: expected a JSON object with a 'results' mapping (task -> metrics), as lm-eval writes"
            )
        aggregates = report["results"]
        for task, domain in benchmarks.items():
            key = metric[task] if isinstance(metric, dict) else metric
            name, _, filt = key.partition(",")
            logged, matches = _samples_files(directory, task)
            if not matches:
                continue  # a missing benchmark is reported by validation, for all runs at once
            samples = single_path(matches, directory, f"samples_{logged}_*.jsonl")
            armlab_items = logged != task  # armlab's own task: its docs carry armlab's item ids
            scores, seen_filters = [], set()
            for line_no, where, record in json_lines(samples, "lm-eval samples", "one lm-eval sample", limits):
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
                item = record["doc_id"]
                if armlab_items:
                    doc = record.get("doc")
                    if not (isinstance(doc, dict) and "id" in doc):
                        raise AnalysisInputError(f"{where}: no doc.id, the item id armlab's task {logged} logs")
                    item = doc["id"]
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
                        str(item),
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
            task_results = aggregates.get(logged)
            if not isinstance(task_results, dict) or key not in task_results:
                keys = sorted(task_results) if isinstance(task_results, dict) else "no entry for the task"
                raise AnalysisInputError(
                    f"{results}: results.{logged}: no {key!r} (found {keys}); expected the "
                    f"aggregate that the item scores of {samples.name} are checked against"
                )
            reported = json_number(task_results[key])
            if reported is None:
                raise AnalysisInputError(
                    f"{results}: results.{logged}.{key!r} is {task_results[key]!r}; expected a finite number"
                )
            if abs(np.mean(scores) - reported) > 1e-9:
                raise AnalysisInputError(
                    f"{results}: results.{logged}.{key!r} = {reported} but the mean item score in {samples.name} "
                    f"is {np.mean(scores)}; the metric must be the mean of per-item scores"
                )
            _check_doc_count(report, logged, len(scores), results, samples)
    if not rows:
        raise AnalysisInputError(f"lm-eval input: no samples for benchmarks {list(benchmarks)} in {len(runs)} run(s)")
    return rows_frame(rows)


def _samples_files(directory: Path, benchmark: str) -> tuple[str, list[Path]]:
    """``(task, its samples files)`` of a benchmark in a run's folder: the task of the benchmark's own name, else
    armlab's task ``armlab_<benchmark>``; lm-eval names the file ``samples_<task>_<timestamp>.jsonl``, armlab's
    evaluation job ``samples_<task>.jsonl``."""
    found = list(directory.rglob("samples_*.jsonl"))
    for task in (benchmark, f"{TASK_PREFIX}{benchmark}"):
        pattern = re.compile(rf"samples_{re.escape(task)}(_\d{{4}}-\d\d-\d\dT[\d.:-]+)?\.jsonl")
        matches = [p for p in found if pattern.fullmatch(p.name)]
        if matches:
            return task, matches
    return benchmark, []


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


KEYS = frozenset({"pattern", "manifest", "metric"})


def load(config: Config, spec: Mapping[str, Any]) -> tuple[pd.DataFrame, str]:
    """``input.kind: lmeval`` (see :mod:`armlab.analysis.inputs`)."""
    if ("pattern" in spec) == ("manifest" in spec) or "metric" not in spec:
        raise AnalysisInputError(f"{config.source}: input: kind lmeval needs 'metric' and one of 'pattern', 'manifest'")
    assert config.benchmarks is not None  # load_scores checked
    runs, where = locate(config, spec)
    frame = lmeval_to_tidy(
        runs, experiment=config.experiment, benchmarks=config.benchmarks, metric=spec["metric"], limits=config.limits
    )
    return frame, f"lm-eval output of {len(runs)} run(s) from {where}"
