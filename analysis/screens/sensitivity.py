"""Ranking sensitivity: does the order of arms depend on which summary is used?"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from armlab.analysis.stats import resampling
from armlab.spec import DEFAULT_ANALYSIS as ANALYSIS  # every default a keyword below takes


def rankings(
    summaries: pd.DataFrame,
    sets: Mapping[str, Sequence[str]],
    higher_is_better: Mapping[str, bool] | None = None,
    *,
    confidence: float = ANALYSIS.confidence,
    max_exact: int = ANALYSIS.exact_max_seeds,
    resamples: int = ANALYSIS.sign_flip_resamples,
    seed: int = ANALYSIS.bootstrap_seed,
    unpaired: bool = False,
) -> pd.DataFrame:
    """Rank arms by their mean over seeds under each summary, and say which neighbours the seeds separate.

    ``summaries``: runs (index arm, seed) x summaries; ``sets``: name -> arms
    to rank together; ``higher_is_better``: summary -> bool (default True).
    Returns rows (ranking, summary, arm, mean, rank, separated); rank 1 is the
    best mean (the highest, or the lowest where lower is better), ties share
    the best rank. ``separated``: whether the exact sign-flip interval
    (:func:`armlab.analysis.stats.resampling.sign_flip`, Hartigan 1969) of the paired
    difference to the next-ranked arm, over their common seeds, excludes 0 at
    ``confidence`` (unadjusted, descriptive; False where it cannot, NaN for the last arm).
    With ``unpaired`` (runs not matched by seed) the exact permutation
    test's interval of their runs (:func:`armlab.analysis.stats.resampling.permutation`) instead.
    """
    means = summaries.groupby(level="arm").mean()
    rows = []
    for name, arms in sets.items():
        block = means.loc[list(arms)]
        for summary in summaries.columns:
            ranked = pd.DataFrame(
                {
                    "ranking": name,
                    "summary": summary,
                    "arm": block.index,
                    "mean": block[summary].to_numpy(),
                    "rank": block[summary]
                    .rank(ascending=not (higher_is_better or {}).get(summary, True), method="min")
                    .astype(int)
                    .to_numpy(),
                }
            ).sort_values("rank", kind="stable")
            runs = summaries[summary]
            separated = [
                _separated(runs.loc[a], runs.loc[b], confidence, max_exact, resamples, seed, unpaired)
                for a, b in zip(ranked["arm"], ranked["arm"].iloc[1:])
            ]
            rows.append(ranked.assign(separated=[*separated, np.nan]))
    return pd.concat(rows, ignore_index=True)


def _separated(
    a: pd.Series, b: pd.Series, confidence: float, max_exact: int, resamples: int, seed: int, unpaired: bool
) -> bool:
    """Whether the sign-flip interval of a - b over their common seeds excludes 0, i.e. p <= 1 - confidence.

    Unpaired: whether the permutation interval of a's runs against b's does.
    """
    if unpaired:
        if min(len(a), len(b)) < 2:
            return False
        rng = np.random.default_rng([seed, len(a), len(b), 3])
        test = resampling.permutation(a.to_numpy(), b.to_numpy(), max_exact=max_exact, resamples=resamples, rng=rng)
        return bool(test["p_value"][0] <= 1 - confidence)
    d = (a - b).dropna().to_numpy()
    if len(d) < 2:
        return False
    rng = np.random.default_rng([seed, len(d), 3])  # 3: the rankings' purpose (intervals use 0-2)
    p = resampling.sign_flip_pvalue(d[None], max_exact=max_exact, resamples=resamples, rng=rng)[0]
    return bool(p <= 1 - confidence)


def rank_correlations(ranked: pd.DataFrame, higher_is_better: Mapping[str, bool] | None = None) -> pd.DataFrame:
    """Spearman's rho and Kendall's tau-b between every two summaries, per ranking set of >= 3 arms.

    ``ranked`` is the output of :func:`rankings`; both coefficients come from
    scipy and are computed on the arms' means (ties get average ranks),
    negated for a summary where lower is better (``higher_is_better``:
    summary -> bool, default True), so +1 means the same order. When
    all arms have the same mean under a summary no order exists to correlate:
    the coefficients are NaN and ``note`` says which summary is constant.
    """
    rows = []
    for name, block in ranked.groupby("ranking", sort=False):
        table = block.pivot(index="arm", columns="summary", values="mean")
        table = table * [1 if (higher_is_better or {}).get(s, True) else -1 for s in table.columns]
        if len(table) < 3:
            continue  # two arms always correlate +-1
        summaries = list(dict.fromkeys(block["summary"]))
        for a, b in combinations(summaries, 2):
            constant = [s for s in (a, b) if table[s].nunique() == 1]
            row = {"ranking": name, "summary_a": a, "summary_b": b, "n_arms": len(table)}
            if constant:
                # scipy would return NaN with a ConstantInputWarning
                row |= {
                    "spearman": np.nan,
                    "kendall": np.nan,
                    "note": f"all arms have the same mean under {' and '.join(constant)}: no ranking to correlate",
                }
            else:
                row |= {
                    "spearman": stats.spearmanr(table[a], table[b]).statistic,
                    "kendall": stats.kendalltau(table[a], table[b]).statistic,
                    "note": "",
                }
            rows.append(row)
    return pd.DataFrame(rows, columns=["ranking", "summary_a", "summary_b", "n_arms", "spearman", "kendall", "note"])
