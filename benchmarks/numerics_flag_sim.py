"""How well "not robust to numerics" marks the verdicts a change of numerics flips, by simulation with known truth.

Each replicate is one comparison at n seeds and its numerics controls, as armlab runs them: per seed, the arm's
difference from its reference is D_s = effect + t_s + v_B,s - v_A,s (t: the seed's training noise of the difference,
sd 1; v: each run's numerics noise, sd ``numerics``), and control c's difference is v_c,s - v_A,s (the same reference
runs). On another machine every run draws new numerics, D'_s = effect + t_s + v'_B,s - v'_A,s, and the verdict may
change: a flip. The verdicts are the analysis's own (:func:`armlab.analysis.comparisons.paired.seed_statistics`: the
exact sign-flip test, its interval at 1 - alpha, the sign-flip TOST within ±margin; one arm per family, so Holm's level
is alpha) and the flag is :func:`armlab.analysis.screens.numerics_noise.flag_verdicts`' rule: a better/worse/equivalent
verdict whose room (its interval's bound nearest 0; its equivalence interval's distance from ±margin) is within the
largest absolute mean difference of the controls. Effects are drawn uniformly over [0, 3] standard errors of the mean
difference so that every verdict occurs; the margin is one standard deviation of D.

    .venv/bin/python benchmarks/numerics_flag_sim.py --out results/numerics_flag_sim   # seeds 3, 5, 8, 12; numerics
                                                                                       # sd 0.25, 0.5, 1 (about 2 min)

Prints and writes (``OUT/flag.csv``; docs/statistics.md quotes it: ``ci/quoted_results.py write numerics_flag``),
per seed count and numerics sd, the share of verdicts that are decisive (better, worse, equivalent), and among
them the share that flip and that are flagged, the share of flips the flag marks, and how often an unflagged and a
flagged verdict flips.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from armlab.analysis import tables
from armlab.analysis.comparisons.paired import seed_statistics
from armlab.analysis.config import parse_config
from armlab.analysis.screens import numerics_noise
from armlab.analysis.stats.intervals import FIRST_METHOD
from armlab.files import write_csv


def comparisons(d: np.ndarray, controls: np.ndarray, settings) -> pd.DataFrame:
    """Comparison rows as the analysis writes them, one measure per replicate: the arm's (differences ``d`` (R, n),
    one arm per family, so its decision interval is the sign-flip interval at 1 - alpha) and its controls' mean
    differences (``controls`` (C, R, n))."""
    stats = seed_statistics(d, settings)
    (low, high), (eq_low, eq_high) = stats["intervals"][FIRST_METHOD][0].T, stats["eq"].T
    measures = [f"r{r}" for r in range(len(d))]
    arm = pd.DataFrame(
        {
            "arm": "b",
            "measure": measures,
            "mean_diff": stats["mean"],
            "decision_low": low,
            "decision_high": high,
            "eq_low": eq_low,
            "eq_high": eq_high,
            "equivalence_margin": settings.equivalence_margin,
            "reject": stats["p"] <= settings.alpha,
            "equivalent": stats["p_eq"] <= settings.alpha,
            "higher_is_better": True,
        }  # fmt: skip
    )
    rows = [
        arm.assign(mean_diff=c.mean(axis=1), arm=f"c{j}", reject=False, equivalent=False)
        for j, c in enumerate(controls)
    ]
    return pd.concat([arm, *rows], ignore_index=True)


def simulate(n: int, numerics: float, controls: int, replicates: int, rng: np.random.Generator) -> dict:
    sd = np.sqrt(1 + 2 * numerics**2)  # of one seed's difference D_s
    settings = parse_config(
        {
            "experiment": "sim",
            "comparisons": [{"family": "f", "reference": "a", "arms": ["b"]}],
            "analysis": {"equivalence_margin": float(sd)},
        }  # fmt: skip
    ).settings
    effect = rng.uniform(0, 3 * sd / np.sqrt(n), (replicates, 1))
    training = rng.normal(0, 1, (replicates, n))
    reference, arm, again_reference, again_arm = rng.normal(0, numerics, (4, replicates, n))
    control = rng.normal(0, numerics, (controls, replicates, n)) - reference
    names = {f"c{j}": "a" for j in range(controls)}
    here = numerics_noise.flag_verdicts(comparisons(effect + training + arm - reference, control, settings), names)
    here = here[here["arm"] == "b"]
    there = comparisons(effect + training + again_arm - again_reference, control, settings)
    verdict, again = tables.verdicts(here), tables.verdicts(there[there["arm"] == "b"])
    decisive = verdict != "inconclusive"
    flip, flagged = (verdict != again)[decisive], here["not_robust_to_numerics"].to_numpy()[decisive]
    share = lambda x: float(x.mean()) if len(x) else np.nan  # noqa: E731
    return {
        "seeds": n,
        "numerics_sd": numerics,
        "decisive": share(decisive),
        "flips": share(flip),
        "flagged": share(flagged),
        "flips_flagged": share(flagged[flip]),
        "flip_if_unflagged": share(flip[~flagged]),
        "flip_if_flagged": share(flip[flagged]),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[3, 5, 8, 12])
    parser.add_argument("--numerics", type=float, nargs="+", default=[0.25, 0.5, 1.0])
    parser.add_argument("--controls", type=int, default=5)
    parser.add_argument("--replicates", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="a folder for flag.csv")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    rows = [simulate(n, v, args.controls, args.replicates, rng) for n in args.seeds for v in args.numerics]
    table = pd.DataFrame(rows).assign(controls=args.controls, replicates=args.replicates)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        write_csv(table, args.out / "flag.csv")


if __name__ == "__main__":
    main()
