"""The whole analysis: load and validate, summarize, compare, rank, write.

``analyze(config)`` is what ``armlab analyze`` runs; ``run_analysis`` starts
from a tidy frame already in memory (notebooks, benchmarks);
``write_outputs`` writes every file of an output directory at once.
"""

import json
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import io, paired, sensitivity, summaries, tables
from analysis.errors import AnalysisInputError


@dataclass
class AnalysisResult:
    """Everything the analysis computed; frames are described in :func:`write_outputs`."""

    config: object
    source: str
    accuracy: pd.DataFrame  # runs (arm, seed) x benchmarks
    weights: pd.DataFrame  # summary x benchmark
    summaries: pd.DataFrame  # runs (arm, seed) x summaries
    comparisons: pd.DataFrame
    rankings: pd.DataFrame
    correlations: pd.DataFrame
    dropped: pd.DataFrame
    notes: list


def analyze(config, scores_path=None):
    """Load the scores a config points at (or ``scores_path``), validate and analyze them."""
    scores, source = io.load_scores(config, scores_path)
    return run_analysis(config, scores, source)


def run_analysis(config, scores, source="scores"):
    """Validate a tidy frame and run summaries, paired comparisons and ranking sensitivity."""
    settings = config.settings
    scores, dropped = io.validate_scores(
        scores, experiment=config.experiment, comparisons=config.comparisons, benchmarks=config.benchmarks,
        drop_incomplete=settings.drop_incomplete, source=source,
    )
    compared = config.compared_arms
    others = [a for a in pd.unique(scores["arm"]) if a not in compared]
    notes = [f"Seeds were matched for the compared arms ({', '.join(compared)})"
             + (f"; arm(s) {', '.join(others)} are in no comparison and only summarized." if others else ".")]
    for row in dropped.itertuples():
        notes.append(f"Dropped run arm={row.arm} seed={row.seed} (analysis.drop_incomplete): {row.reason}.")

    accuracy = summaries.benchmark_accuracy(scores)
    weights = summaries.summary_weights(summaries.benchmark_domains(scores), settings.subsets)
    clash = sorted(set(weights.index) & set(accuracy.columns))
    if clash:
        raise AnalysisInputError(f"{config.source}: analysis.subsets: name(s) {clash} are also benchmark names")
    per_run = summaries.summarize(accuracy, weights)

    measure_weights, levels = weights, dict.fromkeys(weights.index, "summary")
    if settings.per_benchmark:
        identity = pd.DataFrame(np.eye(len(weights.columns)), index=weights.columns, columns=weights.columns)
        measure_weights = pd.concat([weights, identity])
        levels |= dict.fromkeys(weights.columns, "benchmark")
    items = None
    if settings.item_bootstrap:
        if (scores["item"] == io.PER_BENCHMARK_ITEM).all():
            notes.append("analysis.item_bootstrap is on but the input has per-benchmark rows only; "
                         "the crossed seeds x items interval was skipped.")
        else:
            items = summaries.item_scores(scores)
    comparisons, comparison_notes = paired.compare(
        summaries.summarize(accuracy, measure_weights), config.comparisons, settings,
        levels=levels, items=items, measure_weights=measure_weights,
    )

    sets = settings.rankings or {c.family: (c.reference, *c.arms) for c in config.comparisons}
    unknown = sorted({a for arms in sets.values() for a in arms} - set(per_run.index.unique("arm")))
    if unknown:
        raise AnalysisInputError(f"{config.source}: analysis.rankings: arm(s) {unknown} have no scores")
    ranked = sensitivity.rankings(per_run, sets)
    return AnalysisResult(
        config=config, source=source, accuracy=accuracy, weights=weights, summaries=per_run,
        comparisons=comparisons, rankings=ranked, correlations=sensitivity.rank_correlations(ranked),
        dropped=dropped, notes=notes + comparison_notes,
    )


def write_outputs(result, out_dir):
    """Write the result to ``out_dir`` all at once (a temporary directory renamed into place).

    Files: ``summaries.csv`` (arm, seed, summary, value), ``accuracy.csv``
    (arm, seed, benchmark, value), ``weights.csv`` (summary, benchmark,
    weight), ``comparisons.csv`` / ``.md`` / ``.tex``, ``rankings.csv``,
    ``sensitivity.csv`` (rank correlations between summaries),
    ``dropped.csv``, ``report.md`` and ``manifest.json`` (settings, input).
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        summaries.to_long(result.summaries, "summary").to_csv(tmp / "summaries.csv", index=False)
        summaries.to_long(result.accuracy, "benchmark").to_csv(tmp / "accuracy.csv", index=False)
        result.weights.stack().rename("weight").reset_index().to_csv(tmp / "weights.csv", index=False)
        result.comparisons.to_csv(tmp / "comparisons.csv", index=False)
        (tmp / "comparisons.md").write_text(tables.comparisons_markdown(result.comparisons))
        (tmp / "comparisons.tex").write_text(tables.comparisons_latex(result.comparisons))
        result.rankings.to_csv(tmp / "rankings.csv", index=False)
        result.correlations.to_csv(tmp / "sensitivity.csv", index=False)
        result.dropped.to_csv(tmp / "dropped.csv", index=False)
        (tmp / "report.md").write_text(tables.report_markdown(result))
        manifest = {"experiment": result.config.experiment, "config": result.config.source,
                    "input": result.source, "settings": asdict(result.config.settings),
                    "notes": result.notes}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
        tmp.chmod(0o755)
        if out_dir.exists():
            old = out_dir.with_name(f".{out_dir.name}.old-{tmp.name}")
            out_dir.rename(old)
            tmp.rename(out_dir)
            shutil.rmtree(old)
        else:
            tmp.rename(out_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
