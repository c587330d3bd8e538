"""Per-run summaries: benchmark accuracy and weighted averages over benchmarks.

Every summary is a weighted mean of benchmark accuracies with weights summing
to one, so one weight matrix (summary x benchmark) describes them all and is
written out with the results:

- ``domain_balanced`` (primary): the mean over domains of the mean over that
  domain's benchmarks;
- ``flat``: the mean over all benchmarks;
- each named subset of the config, with its explicit weights.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from armlab.analysis.errors import AnalysisInputError
from armlab.contract import RUN

PRIMARY, FLAT = "domain_balanced", "flat"  # the primary summary (the first row of every weight matrix), the flat mean
BUILT_IN = (PRIMARY, FLAT)  # the summaries every analysis computes; config subsets cannot take these names


def benchmark_accuracy(scores: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per run and benchmark: mean item score; index (arm, seed), one column per benchmark."""
    acc = scores.groupby([*RUN, "benchmark"], observed=True, sort=False)["score"].mean().unstack("benchmark")
    return acc[list(pd.unique(scores["benchmark"]))].sort_index()


def benchmark_domains(scores: pd.DataFrame) -> pd.Series:
    """Domain of each benchmark, in order of first appearance."""
    return scores.drop_duplicates("benchmark").set_index("benchmark")["domain"]


def twin_measures(weights: pd.DataFrame) -> dict[str, str]:
    """Measures (rows of a weight matrix) that weigh the benchmarks exactly as an earlier row does: name -> that row.

    With one benchmark every summary is that benchmark; with domains of equal size flat is domain_balanced.
    Such a twin is the same measure under another name, so the analysis tests and shows it once.
    """
    rounded = weights.round(12)  # 1/4/3 and 1/12 differ in the last bit
    same = rounded.duplicated(keep="first")
    first = {tuple(row): name for name, row in rounded[~same].iterrows()}
    return {name: first[tuple(row)] for name, row in rounded[same].iterrows()}


def summary_weights(domains: pd.Series, subsets: dict[str, dict[str, float]] | None = None) -> pd.DataFrame:
    """Weight matrix (summary x benchmark) of the built-in summaries and the named ``subsets``.

    ``domains`` maps benchmark -> domain; ``subsets`` maps name -> {benchmark:
    weight} with weights summing to one.
    """
    benchmarks = list(domains.index)
    per_domain = domains.map(domains.value_counts())
    rows = {
        PRIMARY: (1.0 / per_domain / domains.nunique()).to_numpy(),
        FLAT: np.full(len(benchmarks), 1.0 / len(benchmarks)),
    }
    for name, weights in (subsets or {}).items():
        unknown = sorted(set(weights) - set(benchmarks))
        if unknown:
            raise AnalysisInputError(f"analysis.subsets.{name}: unknown benchmark(s) {unknown}; known: {benchmarks}")
        rows[name] = np.array([weights.get(b, 0.0) for b in benchmarks])
    return pd.DataFrame(rows, index=benchmarks).T.rename_axis(index="summary", columns="benchmark")


def summarize(accuracy: pd.DataFrame, weights: pd.DataFrame) -> pd.DataFrame:
    """Summaries per run: ``accuracy`` (runs x benchmarks) times the weights; index (arm, seed)."""
    return accuracy[weights.columns] @ weights.T


def item_scores(scores: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per benchmark, item scores as a frame with index (arm, seed) and one column per item."""
    return {
        benchmark: group.set_index([*RUN, "item"])["score"].unstack("item").sort_index()
        for benchmark, group in scores.groupby("benchmark", observed=True, sort=False)
    }


def to_long(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """A runs x columns frame as long rows (arm, seed, ``name``, value)."""
    return frame.rename_axis(columns=name).stack().rename("value").reset_index()


def domain_summaries(scores: pd.DataFrame) -> pd.DataFrame:
    """Per run (index arm, seed): each domain's mean benchmark accuracy and the primary summary, as fractions."""
    accuracy = benchmark_accuracy(scores)
    domains = benchmark_domains(scores)
    per_domain = accuracy.T.groupby(domains.loc[accuracy.columns].to_numpy(), sort=False).mean().T
    return per_domain.assign(**{PRIMARY: summarize(accuracy, summary_weights(domains))[PRIMARY]})


def accuracy_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (%) per arm: each domain, the primary summary and its sd over seeds, mean over seeds.

    The domain columns and ``domain_balanced`` are the analysis's own summaries (means of
    benchmark accuracies), so the table printed at the end of a run agrees with the analysis.
    """
    per_run = domain_summaries(scores)
    table = per_run.groupby(level="arm", sort=False).mean()
    table["domain_balanced_sd"] = per_run.groupby(level="arm", sort=False)["domain_balanced"].std()
    return (100 * table).round(1)
