"""Per-benchmark avg@k, pass@k and maj@k, the table RLVR papers print ("MATH-500 pass@4 per method").

Each benchmark's pass@k (k > 1) and maj@k of every run (:func:`sampled_per_run`, from the estimators of
:mod:`armlab.analysis.samples.sampled`) are measures like the benchmark's accuracy: compared seed by seed with the
reference as secondary cells of the family, under the same gatekept Holm (:mod:`armlab.analysis.comparisons.paired`).
Their comparisons are rows of ``comparisons.csv`` named ``<benchmark>:<measure>`` (level ``benchmark``);
:func:`per_benchmark_table` gathers every per-benchmark row into ``per_benchmark.csv``, one row per (family, arm,
benchmark, measure), with each arm's and its reference's mean over seeds and its interval beside the paired
difference, p, Holm p and verdict: what :func:`armlab.analysis.tables.per_benchmark_latex` lays out as a paper's
table.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from armlab.analysis import tables
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.samples import sampled
from armlab.analysis.stats import normal_theory

if TYPE_CHECKING:
    from armlab.analysis.settings import Settings

COLUMNS = [
    "family", "arm", "reference", "benchmark", "measure", "n_seeds", "n_reference_seeds",
    "arm_mean", "arm_low", "arm_high", "reference_mean", "reference_low", "reference_high", "ci_level",
    "mean_diff", "decision_level", "decision_low", "decision_high", "p_value", "p_holm", "reject", "min_attainable_p",
    "eq_decision_level", "eq_decision_low", "eq_decision_high", "p_equivalence_holm", "equivalent",
    "equivalence_margin", "stage", "verdict",
]  # fmt: skip


def sampled_per_run(
    scores: pd.DataFrame, answers: pd.DataFrame | None, benchmarks: Sequence[str], settings: Settings, source: str
) -> pd.DataFrame:
    """Every run's pass@k and maj@k on each benchmark: index (arm, seed), columns
    :func:`armlab.analysis.samples.sampled.per_benchmark_measures`."""
    wanted = sampled.per_benchmark_measures(benchmarks, settings)
    if not wanted:
        return pd.DataFrame(index=pd.MultiIndex.from_tuples([], names=["arm", "seed"]))
    found = {
        **{sampled.measure_name(k): sampled.pass_at_k_per_benchmark(scores, k) for k in settings.pass_k if k > 1},
        **{
            sampled.majority_name(k): frame
            for k, frame in sampled.majority_at_k_per_benchmark(scores, answers, settings.maj_k, source).items()
        },
    }
    columns = {sampled.benchmark_measure_name(b, kind): frame[b] for kind, frame in found.items() for b in benchmarks}
    return pd.DataFrame(columns)[wanted].sort_index()


def accuracy_name(scores: pd.DataFrame) -> str:
    """What a benchmark's accuracy is: ``avg@k`` where every item has k > 1 answers, else ``accuracy``."""
    samples = scores["n_samples"].unique() if "n_samples" in scores.columns else [1]
    return f"avg@{int(samples[0])}" if len(samples) == 1 and samples[0] > 1 else "accuracy"


def check_names(names: Sequence[str], others: Sequence[str], source: str) -> None:
    """A per-benchmark measure's name is no other measure's (a benchmark from elsewhere may hold a ':')."""
    clash = sorted(set(names) & set(others))
    if clash:
        raise AnalysisInputError(
            f"{source}: benchmark name(s) {clash} are also the names of per-benchmark pass@k/maj@k measures; "
            f"rename them or set analysis.per_benchmark: false"
        )


def per_benchmark_table(
    comparisons: pd.DataFrame, values: pd.DataFrame, benchmarks: Collection[str], accuracy: str, confidence: float
) -> pd.DataFrame:
    """Every per-benchmark comparison as one row per (family, arm, benchmark, measure) (``per_benchmark.csv``).

    ``comparisons``: the comparisons table; ``values``: runs (index arm, seed) x measures, as compared;
    ``benchmarks``: the benchmarks, whose names are their accuracies' measures; ``accuracy``: what
    that accuracy is (:func:`accuracy_name`). Besides the comparison's own columns, each arm's and its reference's
    mean over their seeds with the paired t interval of that mean at ``confidence`` (a paper's "mean ± interval").
    """
    rows = comparisons[(comparisons["level"] == "benchmark")]
    rows = rows[rows["ci_method"] == rows["ci_method"].iloc[0]] if len(rows) else rows
    if not len(rows):
        return pd.DataFrame(columns=COLUMNS)
    split = [
        (m, accuracy) if m in benchmarks else tuple(m.split(sampled.BENCHMARK_SEPARATOR, 1)) for m in rows["measure"]
    ]
    out = rows.assign(
        benchmark=[b for b, _ in split], measure=[kind for _, kind in split], verdict=tables.verdicts(rows)
    )
    for side, column in (("arm", "arm"), ("reference", "reference")):
        runs = [values.loc[a, m].to_numpy(dtype=float) for a, m in zip(rows[column], rows["measure"])]
        ends = np.array([normal_theory.t_interval(r[None], confidence)[0] for r in runs])
        out[f"{side}_mean"] = [r.mean() for r in runs]
        out[f"{side}_low"], out[f"{side}_high"] = ends[:, 0], ends[:, 1]
    return out.assign(ci_level=confidence)[COLUMNS].reset_index(drop=True)
