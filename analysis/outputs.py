"""What `armlab analyze` computes and writes: :class:`AnalysisResult` in memory, the tables that the writer
(:func:`armlab.analysis.pipeline.write_outputs`) and the readers (:func:`.reporting.read.read_analysis`,
``armlab summary``) share, and their format.

``FORMAT`` goes up whenever a table or a column is added, renamed or removed; the report refuses an analysis of
another format with one line that says to rerun `armlab analyze` (seconds), rather than guess at what an older
layout meant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from armlab.analysis.errors import AnalysisInputError

if TYPE_CHECKING:
    from armlab.analysis.config import Config

# 1: the layouts before the format was recorded (no "format" in manifest.json); 3: per_benchmark.csv; 4:
# contamination.csv; 5: the numerics columns (comparisons.csv's numerics flag, variance_components.csv's numerics
# component)
FORMAT = 5
FORMAT_KEY = "format"
TABLES = (  # each is <name>.csv, listed with its sha256 in manifest.json
    "summaries",
    "accuracy",
    "weights",
    "comparisons",
    "rankings",
    "sensitivity",
    "probability_of_improvement",
    "performance_profiles",
    "dropped",
    "pass_at_k_vs_base",
    "per_benchmark",
    "variance_components",
    "allocation",
    "sequential",
    "sequential_looks",
    "replications",
    "unparsed",
    "contamination",
    "report_card",
)


def check_format(manifest: dict, path: object) -> None:
    """Refuse, in one line, the analysis whose ``manifest.json`` (at ``path``) records another format."""
    found = manifest.get(FORMAT_KEY, 1) if isinstance(manifest, dict) else None
    if found != FORMAT:
        folder = getattr(path, "parent", path)
        raise AnalysisInputError(
            f"{path}: an analysis of format {found!r}, written by another version of armlab; this one reads format "
            f"{FORMAT}: rerun `armlab analyze` into {folder}"
        )


@dataclass
class AnalysisResult:
    """Everything the analysis computed; frames are described in :func:`armlab.analysis.pipeline.write_outputs`."""

    config: Config
    source: str
    accuracy: pd.DataFrame  # runs (arm, seed) x benchmarks
    weights: pd.DataFrame  # summary x benchmark
    summaries: pd.DataFrame  # runs (arm, seed) x summaries and statistics
    comparisons: pd.DataFrame
    rankings: pd.DataFrame
    correlations: pd.DataFrame
    dropped: pd.DataFrame
    notes: list
    improvement: pd.DataFrame  # paired probability of improvement (armlab.analysis.comparisons.improvement)
    profiles: pd.DataFrame  # performance profiles (armlab.analysis.comparisons.profiles)
    pass_at_k_vs_base: pd.DataFrame  # each arm's pass@k minus the base policy's (armlab.analysis.samples.sampled)
    per_benchmark: (
        pd.DataFrame
    )  # avg@k, pass@k, maj@k per (family, arm, benchmark) (armlab.analysis.samples.per_benchmark)
    variance_components: pd.DataFrame  # training / items / sampling in each primary difference
    allocation: pd.DataFrame  # one more seed or twice the samples, per job-minute
    sequential: pd.DataFrame  # a sequential design's decision per arm (armlab.analysis.waves.final_tables); else empty
    sequential_looks: pd.DataFrame  # every look of every arm
    replications: pd.DataFrame  # each preregistered prediction's verdict (predictions.replication_table)
    unparsed: (
        pd.DataFrame
    )  # each arm's share of unparsed answers against its reference's (armlab.analysis.samples.unparsed)
    contamination: (
        pd.DataFrame
    )  # gains on a benchmark against gains on its twin (armlab.analysis.screens.contamination)
    report_card: (
        pd.DataFrame
    )  # the experiment graded against the minimum standard (armlab.analysis.screens.report_card)
