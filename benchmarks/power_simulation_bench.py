"""Time the power simulation of the exact sign-flip test, and the order statistics its intervals come from.

The interval of the exact sign-flip test lies between the k-th smallest and the k-th largest of the 2^n - 1
subset means of each row. The power simulation (``armlab plan``, the power columns of every analysis, the
report's power figure) takes them for 4000 standard normal replicates at each seed count up to 14, at the Holm
level of each family. Side by side, one core, best of ``--repeat``; the values must be identical:

1. the order statistics at one level: a partition of every row (before) against armlab's sampled bound;
2. the lower ends at the three Holm levels of a family of three arms (0.05/3, 0.05/2, 0.05) for 8 to 14 seeds:
   sign_flip's interval once per level (before: one enumeration of the subset means per level) against
   armlab's power simulation (one enumeration per seed count serves every level up to 0.05).

    python benchmarks/power_simulation_bench.py [--replicates 4000] [--repeat 3] [--level 0.0167]
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from armlab.analysis.stats import power, resampling  # noqa: E402


def partition_every_row(means, rank, count):
    """The reference (armlab before the bound): in place, the k-th smallest, then the k-th largest among what lies
    right of it (numpy's introselect)."""
    means.partition(rank - 1, axis=1)
    means[:, rank:].partition(count - 2 * rank, axis=1)
    return means[:, rank - 1].copy(), means[:, count - rank].copy()


def reference(blocks, rank, count):
    return [partition_every_row(m.copy(), rank, count) for m in blocks]


def armlab(blocks, rank, count):
    return [resampling._order_statistics(m.copy(), [rank])[rank] for m in blocks]


def best(function, repeat, *args):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = function(*args)
        times.append(time.perf_counter() - start)
    return min(times), out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--level", type=float, default=0.05 / 3, help="two-sided level (the first Holm step)")
    args = parser.parse_args()
    print(f"{'seeds':>5} {'rank':>5} {'partition s':>12} {'armlab s':>9} {'ratio':>6}")
    for n in (10, 12, 13, 14):
        patterns = resampling._Patterns(n, 20, 0, None)
        rank = patterns.rank(args.level / 2)
        z = np.random.default_rng(n).normal(size=(args.replicates, n))
        blocks = [means for _, means, _ in patterns.subset_means(z)]

        slow, expected = best(reference, args.repeat, blocks, rank, patterns.count)
        fast, got = best(armlab, args.repeat, blocks, rank, patterns.count)
        for (a, b), (c, d) in zip(expected, got):
            assert np.array_equal(a, c) and np.array_equal(b, d), "the order statistics differ"
        print(f"{n:>5} {rank:>5} {slow:>12.3f} {fast:>9.3f} {slow / fast:>6.1f}")
    print("(times include one copy of the subset means per method; values identical)")

    levels = (0.05 / 3, 0.05 / 2, 0.05)

    def per_level():
        out = []
        for n in range(8, 15):
            z = np.random.default_rng([0, n, args.replicates]).normal(size=(args.replicates, n))
            for level in levels:
                ci = resampling.sign_flip(z, confidence=1 - level, max_exact=power.SIMULATED_MAX_SEEDS)["ci"]
                out.append(np.sort(np.concatenate([ci[:, 0], -ci[:, 1]])))
        return out

    def simulation():
        power._lower_ends.cache_clear()
        power._extreme_means.cache_clear()
        return [power._lower_ends(n, level, args.replicates, 0) for n in range(8, 15) for level in levels]

    slow, expected = best(per_level, args.repeat)
    fast, got = best(simulation, args.repeat)
    assert all(np.array_equal(a, b) for a, b in zip(expected, got)), "the lower ends differ"
    print(
        f"lower ends, 8-14 seeds x 3 levels: sign_flip per level {slow:.3f} s, armlab {fast:.3f} s, "
        f"ratio {slow / fast:.1f}"
    )


if __name__ == "__main__":
    main()
