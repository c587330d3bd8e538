"""False-positive rate of the comparisons with the base policy (pass_at_k_vs_base.csv) on A/A, by simulation.

A/A: the arm *is* the base policy (the same per-item success probabilities), each of its seeds an independent
evaluation with the same number of answers per item. The truth is "no difference" at every k, so every
interval that excludes 0 is a false positive. Per design, k and seed count it reports how often the 95%
interval of analysis/samples/sampled.py ``versus_base`` excludes 0:

- before: the base evaluated once and its pass@k taken as fixed (armlab before this table);
- counts: the base evaluated once, its sampling variance from its counts added (``pass_at_k_variance``,
  ``difference_from_estimate``, Welch-Satterthwaite); "—" where the analysis gives no interval (fewer than
  ``MIN_EFFECTIVE_ITEMS`` effective items);
- paired: the base evaluated at every seed, as the workflow now does under sampling, and the exact sign-flip
  interval of the per-seed differences (here on independent streams; the workflow's common streams only tighten
  it); it cannot exclude 0 with fewer than 6 seeds at 95%.

Items: 500 (and 30, AIME's size, at 32 answers), a third never solved (p = 0), a tenth always (p = 1), the rest
p ~ Beta(0.6, 0.9), the U shape of an RL policy's per-item success. ``--write`` puts the table into
docs/statistics.md between its markers; ``--check`` exits 1 when the docs' table is not what this run prints.

    python benchmarks/base_comparison_validity.py [--replicates 4000] [--seed 0] [--write | --check]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armlab.analysis.samples.sampled import MIN_EFFECTIVE_ITEMS  # noqa: E402
from armlab.analysis.stats import resampling, sampling  # noqa: E402

ALPHA = 0.05
SEEDS = (3, 5, 8, 12)
# (answers per item, items) -> the k of pass@k: the demo's 4 answers, 16 answers, and an AIME-sized set of 30 items
DESIGNS = {(4, 500): (1, 2, 4), (16, 500): (1, 4, 16), (32, 30): (1, 8, 32)}
DOCS = Path(__file__).resolve().parents[1] / "docs" / "statistics.md"
BEGIN, END = "<!-- base-aa:begin -->", "<!-- base-aa:end -->"


def item_probabilities(rng: np.random.Generator, items: int) -> np.ndarray:
    kind = rng.choice(3, size=items, p=[1 / 3, 1 / 10, 1 - 1 / 3 - 1 / 10])
    return np.where(kind == 0, 0.0, np.where(kind == 1, 1.0, rng.beta(0.6, 0.9, items)))


def excludes_zero(found: dict[str, np.ndarray]) -> np.ndarray:
    return (found["low"] > 0) | (found["high"] < 0)


def paired(diffs: np.ndarray) -> dict[str, np.ndarray]:
    """The exact sign-flip interval of each row of per-seed differences (analysis/samples/sampled.py's paired mode)."""
    ci = resampling.sign_flip(diffs, confidence=1 - ALPHA)["ci"]
    return {"low": ci[:, 0], "high": ci[:, 1]}


def false_positives(n: int, items: int, replicates: int, seed: int, chunk: int = 500) -> dict[tuple, np.ndarray]:
    """(k, seeds) -> [before, counts, paired]: the share of A/A replicates whose interval excludes 0."""
    rng = np.random.default_rng([seed, n, items])
    p = item_probabilities(rng, items)
    ks, most = DESIGNS[(n, items)], max(SEEDS)
    estimate = {k: sampling.pass_at_k(n, np.arange(n + 1), k) for k in ks}  # pass@k of an item by its count
    variance = {k: sampling.pass_at_k_variance(n, np.arange(n + 1), k) for k in ks}
    counted = items >= MIN_EFFECTIVE_ITEMS  # one benchmark: its items are the effective items
    hits = {(k, s): np.zeros(3) for k in ks for s in SEEDS}
    for start in range(0, replicates, chunk):
        size = min(chunk, replicates - start)
        # evaluation 0: the base once; 1..most: the arm's seeds; most+1..2 most: the base at each seed
        counts = rng.binomial(n, p, size=(size, 2 * most + 1, items))
        for k in ks:
            values = estimate[k][counts].mean(axis=-1)
            once, arm, per_seed = values[:, 0], values[:, 1 : most + 1], values[:, most + 1 :]
            item_variance = variance[k][counts[:, 0]]
            base_variance = item_variance.sum(axis=-1) / items**2
            noise = (item_variance**2).sum(axis=-1) / items**4  # base_sampling_variance's degrees of freedom
            with np.errstate(divide="ignore", invalid="ignore"):
                base_df = np.where(noise > 0, 2 * base_variance**2 / noise, np.inf)
            for s in SEEDS:
                hits[(k, s)] += [
                    excludes_zero(sampling.difference_from_estimate(arm[:, :s], once, 0.0, 1 - ALPHA)).sum(),
                    excludes_zero(
                        sampling.difference_from_estimate(arm[:, :s], once, base_variance, 1 - ALPHA, base_df)
                    ).sum()
                    if counted
                    else np.nan,
                    excludes_zero(paired(arm[:, :s] - per_seed[:, :s])).sum(),
                ]
    return {key: h / replicates for key, h in hits.items()}


def cell(rates: np.ndarray) -> str:
    before, counts, paired = (("—" if np.isnan(r) else f"{r:.3f}") for r in rates)
    return f"{before} → {counts} / {paired}"


def rows(n: int, items: int, replicates: int, seed: int) -> list[str]:
    """The table's rows of one design (n answers per item, ``items`` items)."""
    rates = false_positives(n, items, replicates, seed)
    return [
        f"| {items} | {n} | {k} | {sampling.pass_at_k_variance_method(n, k)} | "
        + " | ".join(cell(rates[(k, s)]) for s in SEEDS)
        + " |"
        for k in DESIGNS[(n, items)]
    ]


def table(replicates: int, seed: int) -> str:
    header = "| items | answers per item | k | base variance from counts | " + " | ".join(
        f"{s} seeds: before → counts / paired" for s in SEEDS
    )
    lines = [header + " |", "|---|---|---|---|" + "---|" * len(SEEDS)]
    for n, items in DESIGNS:
        lines += rows(n, items, replicates, seed)
    se = np.sqrt(ALPHA * (1 - ALPHA) / replicates)
    return (
        "\n".join(lines)
        + f"\n\n{replicates:,} replicates per cell (seed {seed}; Monte-Carlo se about {se:.4f} at α = {ALPHA:g}): "
        f"`python benchmarks/base_comparison_validity.py --replicates {replicates} --seed {seed} --write`."
    )


def docs_table(text: str, begin: str = BEGIN, end: str = END) -> str:
    """The table docs/statistics.md holds between the markers ``begin`` and ``end``."""
    if begin not in text or end not in text:
        raise SystemExit(f"{DOCS}: expected the markers {begin} and {end}")
    return text[text.index(begin) + len(begin) : text.index(end)].strip()


def docs_main(
    argv: list[str] | None, doc: str, replicates: int, make_table: Callable[[int, int], str], begin: str, end: str
) -> int:
    """The command line of a script whose table docs/statistics.md quotes between ``begin`` and ``end``: print the
    table of ``make_table(replicates, seed)``; ``--write`` puts it into the docs, ``--check`` exits 1 where the docs
    hold another."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=replicates)
    parser.add_argument("--seed", type=int, default=0)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="put the table into docs/statistics.md")
    mode.add_argument("--check", action="store_true", help="exit 1 when docs/statistics.md holds another table")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    found = make_table(args.replicates, args.seed)
    print(found)
    print(f"({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    text = DOCS.read_text()
    if args.write:
        docs_table(text, begin, end)  # the markers are there
        head, tail = text.split(begin, 1)[0], text.split(end, 1)[1]
        DOCS.write_text(f"{head}{begin}\n{found}\n{end}{tail}")
    if args.check and docs_table(text, begin, end) != found:
        print(f"{DOCS}: the table between {begin} and {end} differs from this run; rerun with --write", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    return docs_main(argv, __doc__, 4000, table, BEGIN, END)


if __name__ == "__main__":
    raise SystemExit(main())
