"""Ranking sensitivity: does the order of arms depend on which summary is used?"""

from itertools import combinations

import pandas as pd
from scipy import stats


def rankings(summaries, sets):
    """Rank arms by their mean over seeds under each summary.

    ``summaries``: runs (index arm, seed) x summaries; ``sets``: name -> arms
    to rank together. Returns rows (ranking, summary, arm, mean, rank); rank 1
    is the highest mean, ties share the best rank.
    """
    means = summaries.groupby(level="arm").mean()
    rows = []
    for name, arms in sets.items():
        block = means.loc[list(arms)]
        for summary in summaries.columns:
            rows.append(pd.DataFrame({
                "ranking": name, "summary": summary, "arm": block.index, "mean": block[summary].to_numpy(),
                "rank": block[summary].rank(ascending=False, method="min").astype(int).to_numpy(),
            }).sort_values("rank", kind="stable"))
    return pd.concat(rows, ignore_index=True)


def rank_correlations(ranked):
    """Spearman's rho and Kendall's tau-b between every two summaries, per ranking set of >= 3 arms.

    ``ranked`` is the output of :func:`rankings`; both coefficients come from
    scipy and are computed on the arms' means (ties get average ranks).
    """
    rows = []
    for name, block in ranked.groupby("ranking", sort=False):
        table = block.pivot(index="arm", columns="summary", values="mean")
        if len(table) < 3:
            continue  # two arms always correlate +-1
        summaries = list(dict.fromkeys(block["summary"]))
        for a, b in combinations(summaries, 2):
            rows.append({
                "ranking": name, "summary_a": a, "summary_b": b, "n_arms": len(table),
                "spearman": stats.spearmanr(table[a], table[b]).statistic,
                "kendall": stats.kendalltau(table[a], table[b]).statistic,
            })
    return pd.DataFrame(rows, columns=["ranking", "summary_a", "summary_b", "n_arms", "spearman", "kendall"])
