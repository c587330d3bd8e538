"""The contamination screen's size on A/A arms and its power on a planted leak, by simulation with known truth.

A family of one arm and its reference, evaluated on 12 benchmarks of 100 items and their procedural twins of 100
fresh items each (the testbed's shape, ``config/experiments/contamination.yaml``), one answer per item (greedy) or
four. An item's success probability in a run is its base probability (a third never solved, a tenth always, the
rest Beta(0.6, 0.9): an RL policy's U shape) moved on the logit scale by the run's training gain (one per arm and
seed, N(0.5, 0.3), the same on a benchmark's items and its twin's: they are items of the same kind) and by the run's
own item noise (N(0, 0.5) per item and run: what a training seed changes item by item); each answer is a Bernoulli
draw. A/A: the arm is the reference's recipe, so the truth is "no contamination". A planted leak: 5% of each
benchmark's items (never its twin's) solved ``lift`` more often by the arm (on the probability scale, at most 1),
as training on them does; the truth is "contaminated".

The screen is :func:`armlab.analysis.screens.contamination.screen`'s procedure on these differences: per run m =
accuracy on the benchmark − accuracy on its twin, d_s = m(arm, s) − m(reference, s), the exact two-sided sign-flip test,
Holm within the family with the pooled row (equal weights: the testbed's domains are of equal size) first and the
benchmarks gatekept behind it; an arm is flagged when any of its rows rejects with d > 0. The test
``tests/analysis/screens/test_contamination.py`` checks that this script's flags are the screen's on simulated tables,
and that docs/statistics.md quotes this table. ``--write`` puts the table into docs/statistics.md between its markers;
``--check`` exits 1 when the docs' table is not what this run prints.

    python benchmarks/contamination_validity.py [--replicates 2000] [--seed 0] [--write | --check]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import base_comparison_validity  # noqa: E402

from armlab.analysis.stats import multiplicity, resampling  # noqa: E402

ALPHA = 0.05
SEEDS = (3, 5, 8, 12)
BENCHMARKS, ITEMS, SHARE = 12, 100, 0.05
GAIN, GAIN_SD, ITEM_SD = 0.5, 0.3, 0.5  # logit scale
LIFTS = (0.1, 0.2, 0.4)  # the leaked items' extra probability of a right answer, on the probability scale
ANSWERS = (1, 4)
DOCS = base_comparison_validity.DOCS
BEGIN, END = "<!-- contamination:begin -->", "<!-- contamination:end -->"


def item_probabilities(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Items' base probabilities of a right answer, the U shape of benchmarks/base_comparison_validity.py."""
    return base_comparison_validity.item_probabilities(rng, int(np.prod(shape))).reshape(shape)


def differences(rng: np.random.Generator, size: int, lift: float, answers: int) -> np.ndarray:
    """Per replicate and seed, the arm's d = (gain on the benchmark) − (gain on its twin): shape (size, seeds,
    1 + BENCHMARKS), the pooled difference first. ``lift`` 0 is A/A."""
    seeds = max(SEEDS)
    base = item_probabilities(rng, (size, 1, 1, BENCHMARKS, 2, ITEMS))  # (.., arm, seed, benchmark, twin?, item)
    with np.errstate(divide="ignore"):
        logit = np.log(base) - np.log1p(-base)
    gain = rng.normal(GAIN, GAIN_SD, (size, 2, seeds, 1, 1, 1))
    p = 1 / (1 + np.exp(-(logit + gain + rng.normal(0, ITEM_SD, (size, 2, seeds, BENCHMARKS, 2, ITEMS)))))
    leaked = np.zeros((BENCHMARKS, 2, ITEMS), dtype=bool)
    leaked[:, 0, : round(SHARE * ITEMS)] = True  # the first items of each benchmark (its items are exchangeable)
    p[:, 0] = np.where(leaked, np.minimum(p[:, 0] + lift, 1.0), p[:, 0])  # arm 0 is the arm, 1 the reference
    accuracy = rng.binomial(answers, p).mean(axis=-1) / answers  # (size, arm, seed, benchmark, twin?)
    m = accuracy[..., 0] - accuracy[..., 1]
    d = m[:, 0] - m[:, 1]  # (size, seed, benchmark)
    return np.concatenate([d.mean(axis=-1, keepdims=True), d], axis=-1)


def flagged(d: np.ndarray) -> np.ndarray:
    """Whether each replicate's arm is flagged on some row: d (size, seeds, 1 + BENCHMARKS), the pooled row first."""
    size, n, rows = d.shape
    p = resampling.sign_flip_pvalue(d.transpose(0, 2, 1).reshape(-1, n)).reshape(size, rows)
    up = d.mean(axis=1) > 0
    hits = np.zeros(size, dtype=bool)
    for r in range(size):
        (first, _), (rest, _) = multiplicity.gatekept_holm(p[r, :1], p[r, 1:], ALPHA)
        hits[r] = bool((np.concatenate([first, rest]) & up[r]).any())
    return hits


def rates(replicates: int, seed: int, lift: float, answers: int, chunk: int = 250) -> dict[int, float]:
    """Seeds -> the share of replicates whose arm is flagged."""
    rng = np.random.default_rng([seed, round(1000 * lift), answers])
    hits = {n: 0 for n in SEEDS}
    for start in range(0, replicates, chunk):
        d = differences(rng, min(chunk, replicates - start), lift, answers)
        for n in SEEDS:
            hits[n] += int(flagged(d[:, :n]).sum())
    return {n: h / replicates for n, h in hits.items()}


def effect(lift: float, rng: np.random.Generator) -> float:
    """The pooled difference a leak of ``lift`` plants, in points (its expectation over items and runs)."""
    p = item_probabilities(rng, (200_000,))
    with np.errstate(divide="ignore"):
        logit = np.log(p) - np.log1p(-p)
    moved = 1 / (1 + np.exp(-(logit + rng.normal(GAIN, np.hypot(GAIN_SD, ITEM_SD), p.shape))))
    return 100 * SHARE * float((np.minimum(moved + lift, 1.0) - moved).mean())


def rows(replicates: int, seed: int) -> list[str]:
    lines = []
    for answers in ANSWERS:
        cells = [rates(replicates, seed, 0.0, answers)] + [rates(replicates, seed, lift, answers) for lift in LIFTS]
        for n in SEEDS:
            lines.append(f"| {answers} | {n} | " + " | ".join(f"{c[n]:.3f}" for c in cells) + " |")
    return lines


def table(replicates: int, seed: int) -> str:
    planted = np.random.default_rng(seed)
    leaks = [f"leak +{100 * lift:g} points ({effect(lift, planted):.2f} pooled)" for lift in LIFTS]
    header = "| answers per item | seeds | A/A: flagged | " + " | ".join(f"{leak}: flagged" for leak in leaks) + " |"
    lines = [header, "|---|---|---|" + "---|" * len(LIFTS), *rows(replicates, seed)]
    se = np.sqrt(ALPHA * (1 - ALPHA) / replicates)
    return (
        "\n".join(lines)
        + f"\n\n{replicates:,} replicates per cell (seed {seed}; Monte-Carlo se about {se:.4f} at α = {ALPHA:g}): "
        f"`python benchmarks/contamination_validity.py --replicates {replicates} --seed {seed} --write`."
    )


def docs_table(text: str) -> str:
    return base_comparison_validity.docs_table(text, BEGIN, END)


def main(argv: list[str] | None = None) -> int:
    return base_comparison_validity.docs_main(argv, __doc__, 2000, table, BEGIN, END)


if __name__ == "__main__":
    raise SystemExit(main())
