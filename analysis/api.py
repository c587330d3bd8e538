"""The Python API, for a DataFrame in a notebook: compare arms on a tidy scores table in one call, with the checks
and statistics of ``armlab analyze`` (the same :func:`~armlab.analysis.config.parse_config` and
:func:`~armlab.analysis.pipeline.run_analysis`), and an adapter from rliable-style score arrays.

    from armlab.analysis.api import compare, from_score_arrays, verdicts

    result = compare(scores, reference="grpo")  # every other arm of the table against grpo, paired by seed
    print("\\n".join(verdicts(result)))
    result.comparisons  # one row per measure, arm and interval method (docs/contracts.md)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from armlab.analysis import tables
from armlab.analysis.config import parse_config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.outputs import AnalysisResult
from armlab.analysis.pipeline import run_analysis
from armlab.contract import PER_BENCHMARK_ITEM, REQUIRED


def compare(
    scores: pd.DataFrame,
    reference: str | None = None,
    arms: Sequence[str] | None = None,
    *,
    comparisons: Sequence[Mapping] | None = None,
    family: str = "comparison",
    analysis: Mapping | None = None,
) -> AnalysisResult:
    """Compare arms with a reference on a tidy scores table (the columns of docs/contracts.md).

    The statistics, checks and outputs are those of `armlab analyze` given a config with these ``comparisons:``
    and ``analysis:`` sections only (no ``benchmarks:``, ``eval.pass_k``, sequential design, predictions or job
    times). Either ``reference`` (and ``arms``, by default every other arm of the table, in the order they first
    appear) makes one family named ``family``, or ``comparisons`` lists families as a config's ``comparisons:``
    does. ``analysis`` holds the ``analysis:`` settings (e.g. ``{"pairing": "unpaired"}``, ``{"alpha": 0.1}``),
    validated as in a config file; the experiment is the table's own.
    """
    if (reference is None) == (comparisons is None):
        got = "neither" if reference is None else "both"
        raise AnalysisInputError(f"compare(): expected either reference (with arms) or comparisons; got {got}")
    if comparisons is not None and arms is not None:
        raise AnalysisInputError("compare(): arms go with reference; with comparisons, each family lists its arms")
    missing = [c for c in REQUIRED if c not in scores.columns]
    if missing:
        raise AnalysisInputError(
            f"compare(): scores lack the column(s) {missing}; expected the tidy columns {REQUIRED}"
        )
    if comparisons is None:
        present = list(dict.fromkeys(scores["arm"]))
        if reference not in present:
            raise AnalysisInputError(f"compare(): reference {reference!r} is not an arm of the scores; arms: {present}")
        others = [a for a in present if a != reference] if arms is None else list(arms)
        comparisons = [{"family": family, "reference": reference, "arms": others}]
    experiments = list(dict.fromkeys(scores["experiment"]))
    if len(experiments) != 1:
        raise AnalysisInputError(f"compare(): expected the scores of one experiment; the table holds {experiments}")
    raw: dict[str, Any] = {"experiment": str(experiments[0]), "comparisons": [dict(c) for c in comparisons]}
    if analysis is not None:
        raw["analysis"] = dict(analysis)
    return run_analysis(parse_config(raw, source="compare()"), scores, source="compare()")


def verdicts(result: AnalysisResult) -> list[str]:
    """One line per compared arm, as `armlab analyze` ends: verdict, difference and the interval that supports the
    verdict (:func:`armlab.analysis.tables.verdict_line`)."""
    return tables.verdict_lines(result.comparisons, result.sequential)


def from_score_arrays(
    scores: Mapping[str, np.ndarray],
    tasks: Sequence[str] | None = None,
    *,
    seeds: Sequence[int] | None = None,
    domains: Mapping[str, str] | None = None,
    experiment: str = "score_arrays",
) -> pd.DataFrame:
    """rliable-style scores ``{arm: array (runs x tasks)}`` of accuracies in [0, 1] as a tidy table.

    Runs are matched by row: row i of every arm's array is the run of seed ``seeds[i]`` (default 1, 2, ...), so
    the paired analysis compares row i of an arm with row i of its reference. That is right only when the arms'
    i-th runs share their seed (the same data order and initialisation); where they do not, pass
    ``analysis={"pairing": "unpaired"}`` to :func:`compare`. Arms may have different numbers of runs: an unpaired
    analysis uses them all; a paired one needs ``common_seeds_only``, which keeps the seeds every compared arm ran.
    Each cell becomes a benchmark's accuracy
    (item ``*``, one row per run and task); ``tasks`` names the columns (default ``task0``, ``task1``, ...) and
    ``domains`` maps a task to its domain (default one domain, ``all``: the primary summary is the mean over tasks).
    """
    arrays = {arm: np.asarray(values, dtype=float) for arm, values in scores.items()}
    if not arrays:
        raise AnalysisInputError("from_score_arrays(): no arms; expected {arm: array of runs x tasks}")
    width = None
    for arm, values in arrays.items():
        width = values.shape[1] if width is None and values.ndim == 2 else width
        if values.ndim != 2 or values.shape[1] != width or values.shape[0] == 0:
            expected = "a 2-D array of runs x tasks" if width is None else f"an array of runs x {width} tasks"
            raise AnalysisInputError(f"from_score_arrays(): arm {arm!r}: expected {expected}, got shape {values.shape}")
    if width is None:  # unreachable: the loop above sets it or raises
        raise AnalysisInputError("from_score_arrays(): expected arrays of runs x tasks")
    tasks = [f"task{j}" for j in range(width)] if tasks is None else list(tasks)
    if len(tasks) != width:
        raise AnalysisInputError(f"from_score_arrays(): {len(tasks)} task names for arrays of {width} tasks")
    runs = max(len(values) for values in arrays.values())
    seeds = list(range(1, runs + 1)) if seeds is None else list(seeds)
    if len(seeds) != runs or len(set(seeds)) != runs or not all(float(s).is_integer() for s in seeds):
        raise AnalysisInputError(
            f"from_score_arrays(): expected {runs} distinct whole-number seeds (one per row of the longest array), "
            f"got {seeds}"
        )
    seeds = [int(s) for s in seeds]
    domain_of = {task: "all" for task in tasks} if domains is None else dict(domains)
    unmapped = [task for task in tasks if task not in domain_of]
    if unmapped:
        raise AnalysisInputError(f"from_score_arrays(): task(s) {unmapped} have no domain in domains")
    frames = [
        pd.DataFrame(
            {
                "experiment": experiment,
                "arm": arm,
                "seed": np.repeat(np.asarray(seeds[: len(values)], dtype="int64"), width),
                "benchmark": np.tile(tasks, len(values)),
                "domain": np.tile([domain_of[t] for t in tasks], len(values)),
                "item": PER_BENCHMARK_ITEM,
                "score": values.ravel(),
            }
        )
        for arm, values in arrays.items()
    ]
    return pd.concat(frames, ignore_index=True)
