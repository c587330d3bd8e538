"""Error rates of the forecast verdicts of ``armlab curves`` (analysis/learning_curves/forecasts.py), by simulation with
known truth.

Each replicate draws ``seeds`` matched runs of a reference arm and of one compared arm, each a ScaleRL saturating
curve (Khatri et al. 2025, eq. 1) evaluated every 10 of 100 steps from the base value 0.2, with a run effect shared
by the seed's arms, independent noise per run and checkpoint (sd 0.015, about 1,000 binary items) and a run-level
spread of the asymptote (sd 0.01). Per truth it prints, per fraction f of training fitted, the share of replicates
whose forecast verdict is better, worse, equivalent, open or none; the share whose *final* verdict (the exact
sign-flip test of the last step's paired difference at alpha) is decided; and for the truths with a difference, the
share of those decided finals the forecast decided the same way:

- ``aa``: both arms the reference (a forecast "better" or "worse" is an error; at most alpha by construction);
- ``lower_asymptote``: the arm's asymptote 0.05 lower (forecast "worse" is right);
- ``faster_same_asymptote``: the arm reaches half its gain in 10 steps instead of 30, same asymptote (the final
  difference is not 0 at step 100, where the reference is still short of its asymptote; a forecast "better" is
  right only where the final is decided better).

    python benchmarks/forecast_validity.py [--replicates 200] [--seeds 3 5 8 12] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armlab.analysis.config import parse_config  # noqa: E402
from armlab.analysis.learning_curves.forecasts import forecasts, saturating  # noqa: E402
from armlab.analysis.stats import resampling  # noqa: E402

STEPS = np.arange(0, 101, 10)
R0, REFERENCE = 0.2, {"asymptote": 0.6, "t_mid": 30.0, "b": 1.5}
TRUTHS = {
    "aa": REFERENCE,
    "lower_asymptote": {**REFERENCE, "asymptote": 0.55},
    "faster_same_asymptote": {**REFERENCE, "t_mid": 10.0},
}
FRACTIONS = (0.25, 0.4, 0.6)
CONFIG = parse_config({"experiment": "sim", "comparisons": [{"family": "f", "reference": "ref", "arms": ["arm"]}]})


def draw(rng: np.random.Generator, seeds: int, truth: dict) -> pd.DataFrame:
    """Runs (arm, seed) x steps: each arm's curve, the seed's shared effect, the run's noise."""
    rows, index = [], []
    for seed in range(1, seeds + 1):
        shared = rng.normal(0, 0.01, len(STEPS))
        for arm, params in (("ref", REFERENCE), ("arm", truth)):
            curve = saturating(
                np.maximum(STEPS, 1), R0, params["asymptote"] + rng.normal(0, 0.01), params["t_mid"], params["b"]
            )
            values = np.where(STEPS == 0, R0, curve + shared + rng.normal(0, 0.015, len(STEPS)))
            rows.append(values)
            index.append((arm, seed))
    return pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(index, names=["arm", "seed"]), columns=STEPS)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[3, 5, 8, 12])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    print(f"{args.replicates} replicates per cell; alpha {CONFIG.settings.alpha}; shares of replicates")
    print("truth                  seeds  f     better  worse  equiv  open   none   final_decided  agree_given_final")
    for name, truth in TRUTHS.items():
        for seeds in args.seeds:
            rng = np.random.default_rng([args.seed, seeds, len(name)])
            verdicts, finals = [], []
            for _ in range(args.replicates):
                matrix = draw(rng, seeds, truth)
                table = forecasts([(CONFIG.comparisons[0], matrix)], CONFIG.settings, FRACTIONS)[1]
                verdicts.append(table.set_index("fraction")["verdict"])
                last = (matrix.loc["arm"] - matrix.loc["ref"])[STEPS[-1]].to_numpy()
                p = resampling.sign_flip_pvalue(last[None, :])[0]
                finals.append("undecided" if p > CONFIG.settings.alpha else ("better" if last.mean() > 0 else "worse"))
            frame, finals = pd.DataFrame(verdicts), np.array(finals)
            for fraction in FRACTIONS:
                said = frame[fraction].to_numpy()
                shares = [np.mean(said == v) for v in ("better", "worse", "equivalent", "open", "no forecast")]
                decided = finals != "undecided"
                agree = np.mean(said[decided] == finals[decided]) if decided.any() else float("nan")
                print(
                    f"{name:<22} {seeds:>5}  {fraction:<4}  "
                    + "  ".join(f"{s:>5.3f}" for s in shares)
                    + f"  {decided.mean():>13.3f}  {agree:>17.3f}"
                )
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
