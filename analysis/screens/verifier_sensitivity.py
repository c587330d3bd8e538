"""Robust to the grader? Each verdict of the configured analysis beside the verdict of the same analysis on the same
answers re-graded under another verifier (``armlab rescore``, armlab/experiment/rescore.py; docs/methods.md).

The re-graded answers come in as a tidy scores table and per-answer verdicts, like the evaluations' own; the
analysis is :func:`armlab.analysis.pipeline.run_analysis`, unchanged. :func:`sensitivity_rows` lines each cell
(family, arm, measure) of its comparisons up with the configured analysis's ``comparisons.csv``: the mean
difference, the interval at Holm's level beside the verdict, the verdict, and whether the verdict differs (a flip).
The table is ``analysis/verifier_sensitivity.csv`` (docs/contracts.md).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from armlab import layout
from armlab.analysis import tables
from armlab.analysis.inputs import reading
from armlab.analysis.samples import sampled

TABLE = Path(layout.GRADER_SENSITIVITY).name  # beside the analysis's tables, in its folder
CELL = ["family", "arm", "reference", "measure"]
COLUMNS = [
    "verifier", *CELL, "level", "n_seeds", "mean_diff", "decision_level", "decision_low", "decision_high", "verdict",
    "configured_mean_diff", "configured_verdict", "flip", "regraded", "unparsed_arm", "unparsed_reference",
    "changed_arm", "changed_reference",
]  # fmt: skip
TEXT_COLUMNS = ("verifier", "family", "arm", "reference", "measure", "level", "ci_method", "verdict", "regraded")


def read_table(path: Path | str, what: str) -> pd.DataFrame:
    """A table of the analysis (``comparisons.csv``, :data:`TABLE`): names stay text (an arm ``NA``), the rest typed."""
    frame = reading.read_csv(path, what, na_values=[""], dtype=dict.fromkeys(TEXT_COLUMNS, str))
    text = [c for c in TEXT_COLUMNS if c in frame.columns]
    frame[text] = frame[text].fillna("")
    return frame


def verdict_cells(comparisons: pd.DataFrame) -> pd.DataFrame:
    """One row per (family, arm, measure), the first interval method's, with its verdict (:func:`tables.verdicts`)."""
    rows = comparisons[comparisons["ci_method"] == comparisons["ci_method"].iloc[0]]
    return rows.assign(verdict=tables.verdicts(rows)).reset_index(drop=True)


def read_weights(path: Path | str) -> pd.DataFrame:
    """The analysis's ``weights.csv`` (summary, benchmark, weight) as its summary x benchmark matrix."""
    long = reading.read_csv(path, "table of `armlab analyze`", dtype={"summary": str, "benchmark": str})
    matrix = long.astype({"weight": float}).pivot(index="summary", columns="benchmark", values="weight")
    return matrix.reindex(index=pd.unique(long["summary"]), columns=pd.unique(long["benchmark"]))  # the primary first


def measure_benchmarks(weights: pd.DataFrame, measure: str) -> list[str]:
    """The benchmarks a measure weighs: a summary's (its row of ``weights``), a benchmark itself and its own pass@k
    and maj@k (``<benchmark>:pass@k``), and for the summaries' pass@k and maj@k and the statistics those of the
    primary (first) summary."""
    benchmark = measure.split(sampled.BENCHMARK_SEPARATOR, 1)[0]  # as analysis/samples/per_benchmark.py splits it
    if benchmark in weights.columns:
        return [benchmark]
    row = weights.loc[measure] if measure in weights.index else weights.iloc[0]
    return [b for b, w in row.items() if w > 0]


def sensitivity_rows(
    verifier: str, rescored: pd.DataFrame, configured: pd.DataFrame, weights: pd.DataFrame, grading: pd.DataFrame
) -> pd.DataFrame:
    """The :data:`COLUMNS` of every cell of ``rescored`` (the comparisons under ``verifier``) beside ``configured``
    (the configured analysis's comparisons). ``weights`` are the summaries' benchmark weights (:func:`read_weights`);
    ``grading`` holds per (arm, seed, benchmark) the answers re-graded, unparsed and changed
    (``armlab.evals.rescore``)."""
    mine, theirs = verdict_cells(rescored), verdict_cells(configured)
    joined = mine.merge(
        theirs[[*CELL, "mean_diff", "verdict"]].rename(
            columns={"mean_diff": "configured_mean_diff", "verdict": "configured_verdict"}
        ),
        on=CELL,
        how="left",
        validate="one_to_one",
    )
    counts = grading.groupby(["arm", "benchmark"])[["regraded", "unparsed", "changed"]].sum()
    regraded = counts["regraded"].groupby(level="benchmark").sum()
    # per (arm, measure): the counts over the benchmarks the measure weighs
    measures = list(dict.fromkeys(joined["measure"]))
    weighed = pd.DataFrame(
        [[benchmark in measure_benchmarks(weights, m) for benchmark in weights.columns] for m in measures],
        index=measures,
        columns=weights.columns,
    ).astype(float)
    totals = {
        name: counts[name].unstack("benchmark").reindex(columns=weights.columns, fill_value=0).fillna(0) @ weighed.T
        for name in ("regraded", "unparsed", "changed")
    }
    shares = {
        name: (totals[name] / totals["regraded"].where(totals["regraded"] > 0)).stack()
        for name in ("unparsed", "changed")
    }
    extra = pd.DataFrame(
        {
            "regraded": [
                ";".join(b for b in measure_benchmarks(weights, m) if regraded.get(b, 0) > 0) for m in joined["measure"]
            ],
            **{
                f"{name}_{side}": shares[name].reindex(list(zip(joined[side], joined["measure"]))).to_numpy()
                for name in ("unparsed", "changed")
                for side in ("arm", "reference")
            },
        },
        index=joined.index,
    )
    table = pd.concat([joined, extra], axis=1).assign(
        verifier=verifier, flip=lambda t: t["verdict"] != t["configured_verdict"]
    )
    return table[COLUMNS]


def flip_lines(table: pd.DataFrame) -> list[str]:
    """One line per flip: the verifier, the cell, both verdicts and both differences in points."""
    return [
        f"{r.verifier}: {r.family}: {r.arm} vs {r.reference} on {r.measure}: {r.configured_verdict} -> {r.verdict} "
        f"(Δ {tables.points(r.configured_mean_diff)} -> {tables.points(r.mean_diff)} points; re-graded: "
        f"{r.regraded.replace(';', ', ') or 'none'})"
        for r in table[table["flip"].astype(bool)].itertuples()
    ]
