"""The whole analysis: load and validate, summarize, compare, rank, write.

``analyze(config)`` is what ``armlab analyze`` runs; ``run_analysis`` starts
from a tidy frame already in memory (notebooks, benchmarks);
``write_outputs`` writes every file of an output directory at once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis import improvement, io, paired, profiles, sensitivity, statistics, summaries, tables
from analysis.errors import AnalysisInputError
from armlab import files

if TYPE_CHECKING:
    from pathlib import Path

    from analysis.config import Config


@dataclass
class AnalysisResult:
    """Everything the analysis computed; frames are described in :func:`write_outputs`."""

    config: object
    source: str
    accuracy: pd.DataFrame  # runs (arm, seed) x benchmarks
    weights: pd.DataFrame  # summary x benchmark
    summaries: pd.DataFrame  # runs (arm, seed) x summaries and statistics
    comparisons: pd.DataFrame
    rankings: pd.DataFrame
    correlations: pd.DataFrame
    dropped: pd.DataFrame
    notes: list
    improvement: pd.DataFrame  # paired probability of improvement (analysis.improvement)
    profiles: pd.DataFrame  # performance profiles (analysis.profiles)


def analyze(config: Config, scores_path: Path | str | None = None) -> AnalysisResult:
    """Load the scores a config points at (or ``scores_path``), validate and analyze them."""
    scores, source = io.load_scores(config, scores_path)
    return run_analysis(config, scores, source)


def run_analysis(config: Config, scores: pd.DataFrame, source: str = "scores") -> AnalysisResult:
    """Validate a tidy frame; run summaries, paired comparisons, probability of improvement, profiles, rankings."""
    settings = config.settings
    scores, dropped = io.validate_scores(
        scores,
        experiment=config.experiment,
        comparisons=config.comparisons,
        benchmarks=config.benchmarks,
        drop_incomplete=settings.drop_incomplete,
        source=source,
    )
    compared = config.compared_arms
    others = [a for a in pd.unique(scores["arm"]) if a not in compared]
    notes = [
        f"Seeds were matched for the compared arms ({', '.join(compared)})"
        + (f"; arm(s) {', '.join(others)} are in no comparison and only summarized." if others else ".")
    ]
    for row in dropped.itertuples():
        notes.append(f"Dropped run arm={row.arm} seed={row.seed} (analysis.drop_incomplete): {row.reason}.")

    accuracy = summaries.benchmark_accuracy(scores)
    weights = summaries.summary_weights(summaries.benchmark_domains(scores), settings.subsets)
    clash = sorted(set(weights.index) & set(accuracy.columns))
    if clash:
        raise AnalysisInputError(f"{config.source}: analysis.subsets: name(s) {clash} are also benchmark names")
    clash = sorted(set(settings.statistics) & (set(weights.index) | set(accuracy.columns)))
    if clash:
        raise AnalysisInputError(
            f"{config.source}: analysis.statistics: name(s) {clash} are also summary or benchmark names"
        )
    per_statistic = statistics.per_run(accuracy, settings.statistics)
    per_run = pd.concat([summaries.summarize(accuracy, weights), per_statistic], axis=1)
    higher_is_better = statistics.higher_is_better(settings.statistics)

    measure_weights, levels = weights, dict.fromkeys([*weights.index, *per_statistic.columns], "summary")
    if settings.per_benchmark:
        identity = pd.DataFrame(np.eye(len(weights.columns)), index=weights.columns, columns=weights.columns)
        measure_weights = pd.concat([weights, identity])
        levels |= dict.fromkeys(weights.columns, "benchmark")
    items = None
    if settings.item_bootstrap:
        if (scores["item"] == io.PER_BENCHMARK_ITEM).all():
            notes.append(
                "analysis.item_bootstrap is on but the input has per-benchmark rows only; "
                "the crossed seeds x items interval was skipped."
            )
        else:
            items = summaries.item_scores(scores)
    weighted = summaries.summarize(accuracy, measure_weights)
    values = pd.concat([weighted[weights.index], per_statistic, weighted.drop(columns=weights.index)], axis=1)
    comparisons, comparison_notes = paired.compare(
        values,
        config.comparisons,
        settings,
        levels=levels,
        higher_is_better=higher_is_better,
        items=items,
        measure_weights=measure_weights,
    )

    sets = settings.rankings or {c.family: (c.reference, *c.arms) for c in config.comparisons}
    unknown = sorted({a for arms in sets.values() for a in arms} - set(per_run.index.unique("arm")))
    if unknown:
        raise AnalysisInputError(f"{config.source}: analysis.rankings: arm(s) {unknown} have no scores")
    ranked = sensitivity.rankings(per_run, sets, higher_is_better)
    return AnalysisResult(
        config=config,
        source=source,
        accuracy=accuracy,
        weights=weights,
        summaries=per_run,
        comparisons=comparisons,
        rankings=ranked,
        correlations=sensitivity.rank_correlations(ranked, higher_is_better),
        dropped=dropped,
        notes=notes + comparison_notes,
        improvement=improvement.probability_of_improvement(accuracy, config.comparisons, settings),
        profiles=profiles.performance_profiles(accuracy, compared, settings),
    )


def write_outputs(result: AnalysisResult, out_dir: Path | str) -> None:
    """Write the result to ``out_dir`` all at once (:func:`armlab.files.output_directory`).

    ``out_dir`` must be new, empty or an earlier output of ``armlab analyze``; it is replaced
    as a whole. Files: ``summaries.csv`` (arm, seed, summary, value), ``accuracy.csv``
    (arm, seed, benchmark, value), ``weights.csv`` (summary, benchmark,
    weight), ``comparisons.csv`` / ``.md`` / ``.tex``, ``rankings.csv``,
    ``sensitivity.csv`` (rank correlations between summaries),
    ``probability_of_improvement.csv``, ``performance_profiles.csv``,
    ``dropped.csv``, ``report.md`` and ``manifest.json`` (settings, input, and the
    sha256 of every other file).
    """
    with files.output_directory(out_dir, "analyze") as tmp:
        summaries.to_long(result.summaries, "summary").to_csv(tmp / "summaries.csv", index=False)
        summaries.to_long(result.accuracy, "benchmark").to_csv(tmp / "accuracy.csv", index=False)
        result.weights.stack().rename("weight").reset_index().to_csv(tmp / "weights.csv", index=False)
        result.comparisons.to_csv(tmp / "comparisons.csv", index=False)
        (tmp / "comparisons.md").write_text(tables.comparisons_markdown(result.comparisons))
        (tmp / "comparisons.tex").write_text(tables.comparisons_latex(result.comparisons))
        result.rankings.to_csv(tmp / "rankings.csv", index=False)
        result.correlations.to_csv(tmp / "sensitivity.csv", index=False)
        result.improvement.to_csv(tmp / "probability_of_improvement.csv", index=False)
        result.profiles.to_csv(tmp / "performance_profiles.csv", index=False)
        result.dropped.to_csv(tmp / "dropped.csv", index=False)
        (tmp / "report.md").write_text(tables.report_markdown(result))
        record = {
            "experiment": result.config.experiment,
            "config": result.config.source,
            "input": result.source,
            "settings": asdict(result.config.settings),
            "notes": result.notes,
        }
        files.write_manifest(tmp, record, *sorted(p.name for p in tmp.iterdir()))
