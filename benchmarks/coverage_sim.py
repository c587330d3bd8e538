"""Measured coverage of the bootstrap intervals and family-wise error of sign-flip + Holm.

Simulations with known truth, run with the analysis' own functions:

- coverage of the nominal 95% interval (percentile, BCa) for the mean of n
  paired differences, normal and heavy-tailed (Student t, 3 df), n = 12,
  and normal at n = 3 (DataFlex-RL's design); next to it the share of true
  nulls the exact sign-flip test rejects at 0.05;
- family-wise error of the exact sign-flip test with Holm under a global null
  (k arms against one reference, 12 seeds), with the unadjusted rate beside it;
- coverage of the population mean difference (over new seeds and new items)
  by the seeds-only and the crossed seeds x items interval.

    python benchmarks/coverage_sim.py                      # print the tables
    python benchmarks/coverage_sim.py --update analysis/README.md

``--update`` replaces the block between the coverage markers of that file.
"""

import argparse
import re
from pathlib import Path

import numpy as np

from analysis import resampling, synthetic

DRAWS = {
    "normal": lambda rng, shape: rng.normal(size=shape),
    "t3 (heavy-tailed)": lambda rng, shape: rng.standard_t(3, size=shape),
}


def coverage_rows(replicates, resamples, rng):
    rows = []
    for name, n in (("normal", 12), ("t3 (heavy-tailed)", 12), ("normal", 3)):
        d = DRAWS[name](rng, (replicates, n))  # true mean difference 0
        cover = synthetic.interval_coverage(d, 0.0, resamples=resamples, confidence=0.95, rng=rng)
        flip = float(np.mean(resampling.sign_flip_pvalue(d) <= 0.05))
        rows.append((name, n, cover["percentile"], cover["bca"], flip))
    return rows


def fwer_rows(replicates, rng):
    rows = []
    for name in DRAWS:
        for arms in (5, 12):
            rates = synthetic.null_family_rejections(DRAWS[name], arms=arms, seeds=12, replicates=replicates,
                                                     alpha=0.05, rng=rng)
            rows.append((name, arms, rates["fwer_holm"], rates["fwer_unadjusted"], rates["per_comparison"]))
    return rows


def crossed_rows(replicates, resamples, rng, seeds=12, items=100):
    """Item-level differences d[s, i] = item effect + seed effect + noise; the target is their population mean 0."""
    d = (rng.normal(0, 0.1, (replicates, 1, items)) + rng.normal(0, 0.01, (replicates, seeds, 1))
         + rng.normal(0, 0.3, (replicates, seeds, items)))
    seed_only = synthetic.interval_coverage(d.mean(axis=2), 0.0, resamples=resamples, confidence=0.95, rng=rng)
    boot = resampling.crossed_bootstrap_means([d], rng, resamples)[:, :, 0]
    ci = resampling.bootstrap_intervals(boot, None, ["percentile"], (0.95,))[0]["percentile"][:, 0]
    crossed = float(np.mean((ci[:, 0] <= 0) & (ci[:, 1] >= 0)))
    return [("seeds only, percentile", seed_only["percentile"]), ("crossed seeds x items, percentile", crossed)]


def render(replicates, resamples, seed):
    rng = np.random.default_rng(seed)
    mc = lambda p, reps: 1.96 * np.sqrt(p * (1 - p) / reps)  # noqa: E731  (95% Monte-Carlo half-width)
    lines = [
        f"Measured by `python benchmarks/coverage_sim.py --replicates {replicates} --resamples {resamples} "
        f"--seed {seed}`; +- is the 95% Monte-Carlo half-width.",
        "",
        "Coverage of the true mean difference by the nominal 95% interval (target 0.95), and the share of "
        "true nulls the exact sign-flip test rejects at 0.05 (target <= 0.05):",
        "",
        "| differences | seeds | percentile | BCa | sign-flip rejections |",
        "|---|---|---|---|---|",
    ]
    for name, n, pct, bca, flip in coverage_rows(replicates, resamples, rng):
        lines.append(f"| {name} | {n} | {pct:.3f} +- {mc(pct, replicates):.3f} | {bca:.3f} +- {mc(bca, replicates):.3f} "
                     f"| {flip:.3f} +- {mc(flip, replicates):.3f} |")
    lines += [
        "",
        "Family-wise error at alpha = 0.05 under a global null (k arms vs one reference, 12 seeds; target <= 0.05):",
        "",
        "| run noise | k | Holm FWER | unadjusted FWER | per comparison |",
        "|---|---|---|---|---|",
    ]
    for name, k, holm, raw, per in fwer_rows(replicates, rng):
        lines.append(f"| {name} | {k} | {holm:.4f} +- {mc(holm, replicates):.4f} | {raw:.3f} | {per:.4f} |")
    crossed_reps = max(200, replicates // 10)
    lines += [
        "",
        f"Coverage of the population mean over new seeds and new items (12 seeds x 100 items, item effects "
        f"sd 0.1, noise sd 0.3; {crossed_reps} replicates; target 0.95):",
        "",
        "| interval | coverage |",
        "|---|---|",
    ]
    for name, cover in crossed_rows(crossed_reps, min(resamples, 2000), rng):
        lines.append(f"| {name} | {cover:.3f} +- {mc(cover, crossed_reps):.3f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=20_000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--update", type=Path, help="Markdown file whose coverage block is replaced")
    args = parser.parse_args()
    text = render(args.replicates, args.resamples, args.seed)
    print(text)
    if args.update:
        doc = args.update.read_text()
        block = f"<!-- coverage:start -->\n{text}\n<!-- coverage:end -->"
        updated, count = re.subn(r"<!-- coverage:start -->.*?<!-- coverage:end -->", lambda _: block, doc,
                                 flags=re.S)
        if count != 1:
            raise SystemExit(f"{args.update}: expected one coverage block between the markers")
        args.update.write_text(updated)


if __name__ == "__main__":
    main()
