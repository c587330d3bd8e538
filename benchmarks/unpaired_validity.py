"""Size, coverage and equivalence error of the unpaired permutation test by simulation with known truth.

For independent runs (``analysis.pairing: unpaired``) every comparison is the exact two-sample
permutation test of run-level scores (:func:`armlab.analysis.stats.resampling.permutation`). Per design (runs of the
arm vs runs of the reference) and noise law (normal; exponential, i.e. skewed), it draws ``--replicates``
experiments with known truth and prints:

- size: how often the two-sided test rejects at alpha when the arms have the same law (at most alpha);
- coverage: how often the confidence interval holds a true shift of 1 sd (at least the confidence);
- TOST error: how often equivalence within +-margin is declared when the true shift is the margin itself
  (at most alpha);

each with its Monte-Carlo standard error, at the analysis defaults (alpha 0.05, 95% intervals, exact up
to C(n1 + n2, n1) <= 2^20 splits, 100,000 random splits beyond).

    python benchmarks/unpaired_validity.py [--replicates 2000] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armlab.analysis.stats import resampling  # noqa: E402

DESIGNS = [(3, 3), (4, 4), (5, 5), (6, 6), (8, 8), (10, 10), (12, 12), (4, 8), (6, 10)]
ALPHA, CONFIDENCE, MARGIN = 0.05, 0.95, 0.5  # margin in sd units of the runs


def noise(law: str, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Standardized draws: mean 0, sd 1."""
    return rng.standard_normal(shape) if law == "normal" else rng.exponential(1.0, shape) - 1.0


def measure(n1: int, n2: int, law: str, replicates: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng([seed, n1, n2, law == "normal"])
    x, y = noise(law, rng, (replicates, n1)), noise(law, rng, (replicates, n2))
    limits = {"max_exact": 20, "resamples": 100_000, "rng": np.random.default_rng([seed, n1, n2])}
    null = resampling.permutation(x, y, **limits)
    shifted = resampling.permutation(x + 1.0, y, confidence=CONFIDENCE, **limits)
    at_margin = resampling.permutation(x + MARGIN, y, alpha=ALPHA, margin=MARGIN, **limits)
    return {
        "size": float((null["p_value"] <= ALPHA).mean()),
        "coverage": float(((shifted["ci"][:, 0] <= 1.0) & (1.0 <= shifted["ci"][:, 1])).mean()),
        "tost": float((at_margin["p_equivalence"] <= ALPHA).mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    r = args.replicates
    print(f"unpaired permutation test: {r} replicates per cell; alpha {ALPHA}, {CONFIDENCE:.0%} intervals")
    print(f"{'runs':>8} {'law':>11} {'splits':>9} {'size':>14} {'coverage':>14} {'TOST error':>14}  seconds")
    for n1, n2 in DESIGNS:
        for law in ("normal", "exponential"):
            start = time.perf_counter()
            found = measure(n1, n2, law, r, args.seed)
            cells = []
            for key in ("size", "coverage", "tost"):
                value = found[key]
                cells.append(f"{value:.3f} ± {np.sqrt(max(value * (1 - value), 1e-12) / r):.3f}")
            splits = resampling.math.comb(n1 + n2, n1)
            print(
                f"{n1:>3} v {n2:<3} {law:>11} {splits:>9} {cells[0]:>14} {cells[1]:>14} {cells[2]:>14}  "
                f"{time.perf_counter() - start:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
