"""Answer-format failures as a measure: each run's share of unparsed answers, compared seed by seed like accuracy.

An arm can "win" by answering in the format the grader reads rather than by solving more items (attempt
inflation; "A Sober Look at Progress in LM Reasoning", arXiv 2504.07086, counts answer-format failures for
this reason). Every sampled answer's ``status`` in the evaluations' ``answers.parquet`` says whether the
verifier could read it (evals/verifiers.py: ``graded``, ``unparsed``, ``timeout``). Per run, the share of
``unparsed`` answers on each benchmark and over benchmarks (weighted like the primary summary) is a measure
where lower is better; :func:`compare` runs the analysis's own paired comparison on it
(:func:`armlab.analysis.comparisons.paired.compare`: exact sign-flip test and interval, Holm across the family's arms on
the summary, the benchmarks gatekept behind it), so an arm whose unparsed share moved is visible beside its
accuracy (``unparsed.csv``; the report card's "answer format" item).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from armlab.analysis.comparisons import paired
from armlab.contract import RUN

if TYPE_CHECKING:
    from armlab.analysis.config import Comparison
    from armlab.analysis.settings import Settings

SUMMARY = ""  # the column of the share over benchmarks: no benchmark has an empty name
UNPARSED = "unparsed"  # the status armlab.evals.verifiers gives an answer nothing could be read from
COLUMNS = [
    "family", "arm", "reference", "level", "benchmark", "n_seeds", "arm_rate", "reference_rate", "mean_diff",
    "ci_low", "ci_high", "ci_method", "p_value", "p_holm", "differs", "decision_level", "decision_low",
    "decision_high",
]  # fmt: skip


def rates_per_run(answers: pd.DataFrame, weights: pd.Series) -> pd.DataFrame:
    """Each run's share of unparsed answers: index (arm, seed); column :data:`SUMMARY` (over the benchmarks that
    have answers, weighted like ``weights``, renormalized over them) and one column per such benchmark."""
    unparsed = answers.assign(unparsed=(answers["status"] == UNPARSED).astype(float))
    per_benchmark = unparsed.groupby([*RUN, "benchmark"], observed=True)["unparsed"].mean().unstack("benchmark")
    present = [b for b in weights.index if b in per_benchmark.columns and weights[b] > 0]
    share = weights[present] / weights[present].sum()
    summary = (per_benchmark[present] @ share).rename(SUMMARY)
    return pd.concat([summary, per_benchmark[present]], axis=1).sort_index()


def compare(
    answers: pd.DataFrame | None, comparisons: Sequence[Comparison], settings: Settings, weights: pd.Series
) -> pd.DataFrame:
    """The paired comparison of every (family, arm) on its unparsed share (rows of ``unparsed.csv``, columns
    :data:`COLUMNS`); a header only without the answers' statuses or without a compared arm among them."""
    if answers is None or "status" not in answers.columns or not len(answers):
        return pd.DataFrame(columns=COLUMNS)
    rates = rates_per_run(answers, weights)
    compared = {name for c in comparisons for name in (c.reference, *c.arms)}
    if not compared <= set(rates.index.get_level_values("arm")):
        return pd.DataFrame(columns=COLUMNS)
    levels = {name: "summary" if name == SUMMARY else "benchmark" for name in rates.columns}
    table = paired.compare_screen(
        rates, comparisons, settings, levels=levels, higher_is_better=dict.fromkeys(levels, False)
    )
    means = rates.groupby(level="arm").mean()
    return pd.DataFrame(
        {
            **paired.screen_fields(table),
            "arm_rate": [means.loc[a, m] for a, m in zip(table["arm"], table["measure"])],
            "reference_rate": [means.loc[r, m] for r, m in zip(table["reference"], table["measure"])],
            "differs": table["reject"].astype(bool),
        }
    )[COLUMNS]
