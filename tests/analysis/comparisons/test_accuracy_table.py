"""The accuracy table printed at the end of a run uses the analysis's definition of each summary."""

import pandas as pd
import pytest

from armlab.analysis.comparisons.summaries import (
    accuracy_table,
    benchmark_accuracy,
    benchmark_domains,
    summarize,
    summary_weights,
)


def _scores(rows):
    return pd.DataFrame(rows, columns=["experiment", "arm", "seed", "benchmark", "domain", "item", "score"])


def test_domains_average_benchmark_means_not_pooled_items():
    # math: A scores 1 on 2 items, B scores 0 on 4 items -> benchmark means 1 and 0 -> math 50 (pooled: 33.3)
    rows = [("x", "grpo", 1, "A", "math", f"a{i}", 1.0) for i in range(2)]
    rows += [("x", "grpo", 1, "B", "math", f"b{i}", 0.0) for i in range(4)]
    rows += [("x", "grpo", 1, "C", "logic", "c0", 1.0)]
    table = accuracy_table(_scores(rows))
    assert table.loc["grpo", "math"] == 50.0
    assert table.loc["grpo", "logic"] == 100.0
    assert table.loc["grpo", "domain_balanced"] == 75.0  # pooling items per domain gives 66.7


def test_agrees_with_the_analysis_summary_on_unequal_benchmarks():
    rng = pd.Series(range(1000)).sample(frac=1, random_state=0).to_numpy()
    rows, k = [], 0
    for arm in ("grpo", "rloo"):
        for seed in (1, 2, 3):
            for bench, domain, n in (("A", "math", 10), ("B", "math", 60), ("C", "logic", 25), ("D", "science", 7)):
                for i in range(n):
                    rows.append(("x", arm, seed, bench, domain, f"{bench}{i}", float(rng[k % 1000] % 3 == 0)))
                    k += 1
    scores = _scores(rows)
    primary = summarize(benchmark_accuracy(scores), summary_weights(benchmark_domains(scores)))["domain_balanced"]
    table = accuracy_table(scores)
    for arm in ("grpo", "rloo"):
        assert table.loc[arm, "domain_balanced"] == pytest.approx(round(100 * primary.loc[arm].mean(), 1))
        assert table.loc[arm, "domain_balanced_sd"] == pytest.approx(round(100 * primary.loc[arm].std(), 1))
