"""Per-run statistics over benchmarks beyond the weighted summaries: a registry that ``analysis.statistics`` names.

A statistic is one function of the benchmark accuracies of runs, ``(runs,
benchmarks)`` -> ``(runs,)``, with keyword-only parameters the config may
set (``{optimality_gap: {gamma: 0.9}}``); its entry in :data:`STATISTICS`
says whether higher is better. Each statistic the config names is a measure
like a summary: per-run values in summaries.csv, rankings, and paired
differences seed by seed with the comparisons' intervals, tests and
equivalence, as secondary cells of the family's gatekept Holm (so turning
one on enlarges the secondary Holm family). The crossed seeds x items
intervals need a weighted mean and are empty for these.

Both are rliable's aggregates (Agarwal et al. 2021, "Deep RL at the Edge of
the Statistical Precipice", NeurIPS; ``rliable.metrics``) computed per run:
rliable aggregates all runs x tasks at once, armlab one run's benchmarks, so
that each seed gives one value to pair with the reference's.

Adding a statistic: one function here, one entry in :data:`STATISTICS`, one
test (tests/analysis/stats/test_stats_statistics.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from armlab.analysis.errors import AnalysisInputError
from armlab.registry import Registry


@dataclass(frozen=True)
class Statistic:
    """A registry entry: the per-run function and which direction is better."""

    function: Callable
    higher_is_better: bool = True


def interquartile_mean(accuracy: np.ndarray) -> np.ndarray:
    """Interquartile mean of each run's benchmark accuracies: rliable's ``aggregate_iqm`` on one run (Agarwal 2021).

    rliable's is ``scipy.stats.trim_mean(scores, 0.25)``: with B benchmarks
    floor(B / 4) are dropped at each end (the middle 50% when 4 divides B;
    with fewer than 4 nothing is dropped and it is the flat mean). rliable
    trims the pooled runs x tasks; armlab each run's benchmarks, each counted
    once (not domain-balanced).
    """
    ordered = np.sort(np.asarray(accuracy, dtype=float), axis=1)
    cut = ordered.shape[1] // 4
    return ordered[:, cut : ordered.shape[1] - cut].mean(axis=1)


def optimality_gap(accuracy: np.ndarray, *, gamma: float = 1.0) -> np.ndarray:
    """Each run's mean shortfall below gamma: rliable's ``aggregate_optimality_gap`` on one run (Agarwal et al. 2021).

    The mean over benchmarks of max(gamma - score, 0); lower is better. The
    mean over seeds of the per-run gaps is rliable's gap over all runs x
    tasks. Accuracies are at most 1, so with the default gamma = 1 the gap is
    1 - flat and its paired difference is minus that of ``flat``; a target
    gamma below 1 counts only the shortfalls below it.
    """
    return np.maximum(gamma - np.asarray(accuracy, dtype=float), 0.0).mean(axis=1)


STATISTICS = Registry(
    "statistic",
    {
        "iqm": Statistic(interquartile_mean),
        "optimality_gap": Statistic(optimality_gap, higher_is_better=False),
    },
)


def lookup(name: str, key: str = "analysis.statistics") -> Statistic:
    """The registry entry ``name``; an unknown name is an error naming the setting ``key``."""
    return STATISTICS.entry(name, key, AnalysisInputError)


def parameters(statistic: Statistic) -> dict[str, float]:
    """The keyword-only parameters of a statistic's function and their defaults."""
    signature = inspect.signature(statistic.function)
    return {p.name: p.default for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY}


def per_run(accuracy: pd.DataFrame, chosen: Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    """The ``chosen`` statistics (name -> parameters) of every run; ``accuracy`` is runs (arm, seed) x benchmarks."""
    values = accuracy.to_numpy()
    return pd.DataFrame(
        {name: lookup(name).function(values, **params) for name, params in chosen.items()},
        index=accuracy.index,
        columns=list(chosen),
    )


def higher_is_better(chosen: Iterable[str]) -> dict[str, bool]:
    """``{name: bool}`` for the ``chosen`` statistics."""
    return {name: lookup(name).higher_is_better for name in chosen}
