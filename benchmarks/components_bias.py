"""Bias of the variance components (training seeds, items, evaluation sampling) by simulation with known truth.

Simulates paired differences d[s, i] = a_i + t_s + g_si + e_si per benchmark, e_si the evaluation-sampling
error of k binary answers per cell and arm, and runs :func:`armlab.analysis.stats.sampling.variance_components` on
every replicate at once (replicates are its comparison axis). Prints, per regime, each component's mean
estimate over the truth with its Monte-Carlo standard error, and how often an estimate came out negative.

    python benchmarks/components_bias.py [--replicates 4000] [--seed 0]

Regimes: the issue's (3 benchmarks of 30/20/40 items, 4 seeds, 8 samples per item), and the two of
analysis/README.md's crossed table (items and seeds each dominant).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armlab.analysis.stats import sampling  # noqa: E402


@dataclass(frozen=True)
class Regime:
    name: str
    items: tuple[int, ...]  # items per benchmark
    seeds: int
    samples: int
    item_sd: float  # sd of an item's effect on the difference
    seed_sd: float  # sd of a seed's effect
    cell_sd: float  # sd of the seed x item interaction
    base: float = 0.5  # accuracy around which the answers are drawn


REGIMES = (
    Regime("issue 26: 30/20/40 items, 4 seeds, k = 8", (30, 20, 40), 4, 8, 0.04, 0.01, 0.03),
    Regime("items dominate: 3 x 50 items, 8 seeds, k = 4", (50, 50, 50), 8, 4, 0.10, 0.015, 0.05),
    Regime("seeds dominate: 3 x 50 items, 8 seeds, k = 4", (50, 50, 50), 8, 4, 0.04, 0.05, 0.05),
)


def simulate(regime: Regime, replicates: int, rng: np.random.Generator):
    """``(item_diffs, item_variances, truth)`` of ``replicates`` independent experiments of one regime."""
    n, k = regime.seeds, regime.samples
    weights = np.full(len(regime.items), 1 / len(regime.items))
    seed_effect = regime.seed_sd * rng.standard_normal((replicates, n, 1))  # shared by a run's benchmarks
    diffs, variances, sampling_truth = [], [], 0.0
    for m, w in zip(regime.items, weights):
        item = regime.item_sd * rng.standard_normal((replicates, 1, m))
        cell = regime.cell_sd * rng.standard_normal((replicates, n, m))
        p_ref = np.clip(regime.base + 0.1 * rng.standard_normal((replicates, 1, m)), 0.05, 0.95)
        p_arm = np.clip(p_ref + item + seed_effect + cell, 0.01, 0.99)
        p_ref = np.broadcast_to(p_ref, p_arm.shape)
        c_arm, c_ref = rng.binomial(k, p_arm), rng.binomial(k, p_ref)
        diffs.append((c_arm - c_ref) / k)
        variances.append(
            sampling.cell_sampling_variance(np.full(c_arm.shape, k), c_arm)
            + sampling.cell_sampling_variance(np.full(c_ref.shape, k), c_ref)
        )
        # the true sampling part: sum_b w_b^2 / m_b^2 sum_i mean_s(p(1-p)/k of both arms) / n, per replicate
        cell_var = (p_arm * (1 - p_arm) + p_ref * (1 - p_ref)) / k
        sampling_truth = sampling_truth + w**2 * cell_var.mean(axis=1).sum(axis=1) / (m**2 * n)
    # items and training on the probability scale (the clip moves them by a hair; its effect is in the MC error)
    truth = {
        "training": (regime.seed_sd**2 + sum(w**2 * regime.cell_sd**2 / m for m, w in zip(regime.items, weights))) / n,
        "items": sum(w**2 * regime.item_sd**2 / m for m, w in zip(regime.items, weights)),
        "sampling": float(np.mean(sampling_truth)),
    }
    return diffs, variances, weights[None, :], truth


def measure(replicates: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for regime in REGIMES:
        diffs, variances, weights, truth = simulate(regime, replicates, rng)
        found = sampling.variance_components(diffs, variances, weights)
        for name in ("training", "items", "sampling"):
            estimate = getattr(found, name)[:, 0]
            rows.append(
                {
                    "regime": regime.name,
                    "component": name,
                    "truth": truth[name],
                    "ratio": estimate.mean() / truth[name],
                    "mc_se": estimate.std(ddof=1) / np.sqrt(replicates) / truth[name],
                    "negative": float(np.mean(estimate < 0)),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    rows = measure(args.replicates, args.seed)
    print(f"{args.replicates} replicates per regime, {time.perf_counter() - start:.1f} s")
    print(f"{'regime':48} {'component':10} {'truth':>10} {'mean/truth':>11} {'MC se':>7} {'negative':>9}")
    for r in rows:
        print(
            f"{r['regime']:48} {r['component']:10} {r['truth']:10.3g} {r['ratio']:11.3f} {r['mc_se']:7.3f} "
            f"{r['negative']:9.1%}"
        )


if __name__ == "__main__":
    main()
