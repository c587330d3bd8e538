"""Group-sequential seed design against the fixed design with the same maximum: error, power and seeds used.

Simulated paired differences (seed-matched arm minus reference) in SD units, normal or Student t with 3 df scaled
to unit SD, for families of 1 and 4 arms, with the design of analysis.sequential at looks 6, 8, ..., 16 seeds
(Design(initial=6, wave=2, max=16)) under O'Brien-Fleming-type and Pocock-type spending, alpha 0.05:

- (a) family-wise error under the global null (any arm declared ``differs``), with its Monte-Carlo SE, beside
  naive designs that test at alpha at every look with the fixed-n exact sign-flip p: Holm across the arms at
  each look, and every arm unadjusted;
- (b) at true effects 0, 0.5, 1 and 2 SD in every arm: power (share of arms declared ``differs`` in the right
  direction), share declared equivalent, and runs per family (seeds at stop summed over the arms, plus the
  reference's, the most any arm used), against the fixed design (exact sign-flip at n = 16, Holm across arms,
  (arms + 1) x 16 runs), and whether the targets hold: at 2 SD at least 30% fewer runs with power no lower than
  fixed, and at the null at most 10% more runs.

Every trial feeds the same differences to the sequential, fixed and naive designs. Draws depend on --seed and
the cell only, not on --workers.

    python benchmarks/sequential_sim.py                            # 1000 trials per cell, 2 workers (~10 min)
    python benchmarks/sequential_sim.py --trials 100 --workers 4
"""

import argparse
import math
import time
from multiprocessing import Pool

import numpy as np

from armlab.analysis.stats.resampling import sign_flip_pvalue
from armlab.analysis.stats.sequential import DIFFERS, EQUIVALENT, Design, run_family

ALPHA = 0.05
MARGIN = 0.5  # equivalence margin in SD units: half the SD of a paired difference
INITIAL, WAVE, MAX_SEEDS = 6, 2, 16
ARMS = (1, 4)
SPENDINGS = ("obrien_fleming", "pocock")
NOISES = ("normal", "t3")
EFFECTS = (0.0, 0.5, 1.0, 2.0)
CHUNK = 50  # trials per task: enough work per task to amortise the process hand-off
SEED_SAVING_TARGET, NULL_COST_TARGET = 0.7, 1.1  # runs ratio sequential / fixed at 2 SD and at the null


def design(spending):
    return Design(initial=INITIAL, wave=WAVE, max=MAX_SEEDS, spending=spending, alpha=ALPHA, margin=MARGIN)


def differences(rng, noise, effect, shape):
    """Paired differences with mean ``effect`` and unit SD."""
    if noise == "normal":
        return effect + rng.normal(size=shape)
    return effect + rng.standard_t(3, size=shape) / math.sqrt(3)  # t with 3 df has variance 3


def holm(p):
    """Holm's step-down rejections (trials, arms) of p-values (trials, arms) at ALPHA."""
    m = p.shape[1]
    order = np.argsort(p, axis=1)
    ordered = np.take_along_axis(p, order, axis=1)
    passes = np.logical_and.accumulate(ordered <= ALPHA / np.arange(m, 0, -1), axis=1)
    rejected = np.zeros_like(passes)
    np.put_along_axis(rejected, order, passes, axis=1)
    return rejected


def simulate(cell):
    """Per-trial measures of one chunk of one (arms, spending, noise, effect) cell, as a dict of arrays."""
    arms, spending, noise, effect, chunk, trials, seed = cell
    rng = np.random.default_rng([seed, arms, SPENDINGS.index(spending), NOISES.index(noise), int(effect * 10), chunk])
    data = differences(rng, noise, effect, (trials, arms, MAX_SEEDS))
    names = [f"arm{i}" for i in range(arms)]
    plan = design(spending)
    out = {key: np.zeros(trials) for key in ("any_differs", "power", "equivalent", "runs")}
    for t, x in enumerate(data):
        final = {r.arm: r for r in run_family(dict(zip(names, x)), plan)}.values()
        out["any_differs"][t] = any(r.decision == DIFFERS for r in final)
        out["power"][t] = np.mean([r.decision == DIFFERS and r.mean_diff > 0 for r in final])
        out["equivalent"][t] = np.mean([r.decision == EQUIVALENT for r in final])
        seeds = [r.n_seeds for r in final]
        out["runs"][t] = sum(seeds) + max(seeds)  # the reference runs as many seeds as the longest arm
    fixed_p = sign_flip_pvalue(data.reshape(-1, MAX_SEEDS)).reshape(trials, arms)
    fixed = holm(fixed_p)
    out["fixed_any"] = fixed.any(axis=1)
    out["fixed_power"] = (fixed & (data.mean(axis=2) > 0)).mean(axis=1)
    per_look = [sign_flip_pvalue(data[:, :, :n].reshape(-1, n)).reshape(trials, arms) for n in plan.looks]
    out["naive_holm"] = np.any([holm(p).any(axis=1) for p in per_look], axis=0)
    out["naive_unadjusted"] = np.any([(p <= ALPHA).any(axis=1) for p in per_look], axis=0)
    return (arms, spending, noise, effect), out


def measure(trials, workers, seed):
    """``{(arms, spending, noise, effect): {measure: per-trial array}}``."""
    cells = []
    for arms in ARMS:
        for spending in SPENDINGS:
            for noise in NOISES:
                for effect in EFFECTS:
                    for chunk, start in enumerate(range(0, trials, CHUNK)):
                        cells.append((arms, spending, noise, effect, chunk, min(CHUNK, trials - start), seed))
    # the slow 4-arm cells first, so that no worker is left with one at the end
    cells.sort(key=lambda c: -c[0])
    results = {}
    with Pool(workers) as pool:
        for key, out in pool.imap_unordered(simulate, cells):
            parts = results.setdefault(key, {})
            for name, values in out.items():
                parts.setdefault(name, []).append(np.asarray(values, dtype=float))
    return {key: {name: np.concatenate(v) for name, v in parts.items()} for key, parts in results.items()}


def mean_se(values):
    return float(np.mean(values)), float(np.std(values, ddof=1) / math.sqrt(len(values)))


def render(results, trials):
    lines = [
        f"(a) family-wise error under the global null, alpha {ALPHA} ({trials} trials per cell; SE in brackets)",
        f"{'arms':>4} {'spending':<15} {'noise':<7} {'sequential':>16} {'naive Holm':>16} {'naive unadj.':>16}"
        f" {'fixed n=16':>16}",
    ]
    for arms in ARMS:
        for spending in SPENDINGS:
            for noise in NOISES:
                cell = results[(arms, spending, noise, 0.0)]
                figures = [mean_se(cell[k]) for k in ("any_differs", "naive_holm", "naive_unadjusted", "fixed_any")]
                text = " ".join(f"{f'{m:.4f} ({se:.4f})':>16}" for m, se in figures)
                lines.append(f"{arms:>4} {spending:<15} {noise:<7} {text}")
    lines += [
        "",
        "(b) power (share of arms declared differs, right direction), share declared equivalent, runs per family",
        f"{'arms':>4} {'spending':<15} {'noise':<7} {'effect':>6} {'power seq':>9} {'fixed':>6}"
        f" {'diff (SE)':>16} {'equiv':>6} {'runs seq':>8} {'fixed':>5} {'ratio':>6}",
    ]
    verdicts = []
    for arms in ARMS:
        for spending in SPENDINGS:
            for noise in NOISES:
                for effect in EFFECTS:
                    cell = results[(arms, spending, noise, effect)]
                    power, fixed_power = cell["power"].mean(), cell["fixed_power"].mean()
                    diff, diff_se = mean_se(cell["power"] - cell["fixed_power"])
                    runs, fixed_runs = cell["runs"].mean(), (arms + 1) * MAX_SEEDS
                    ratio = runs / fixed_runs
                    lines.append(
                        f"{arms:>4} {spending:<15} {noise:<7} {effect:>6.1f} {power:>9.4f} {fixed_power:>6.4f}"
                        f" {f'{diff:+.4f} ({diff_se:.4f})':>16} {cell['equivalent'].mean():>6.4f} {runs:>8.2f}"
                        f" {fixed_runs:>5} {ratio:>6.3f}"
                    )
                    name = f"{arms} arm(s), {spending}, {noise}"
                    if effect == 2.0:
                        met = ratio <= SEED_SAVING_TARGET and power >= fixed_power
                        verdicts.append(
                            f"  2 SD, {name}: runs ratio {ratio:.3f} (target <= {SEED_SAVING_TARGET}), power"
                            f" {power:.4f} vs fixed {fixed_power:.4f}, difference {diff:+.4f} (SE {diff_se:.4f})"
                            f" (target: no lower): {'MET' if met else 'NOT MET'}"
                        )
                    if effect == 0.0:
                        met = ratio <= NULL_COST_TARGET
                        verdicts.append(
                            f"  null, {name}: runs ratio {ratio:.3f} (target <= {NULL_COST_TARGET}):"
                            f" {'MET' if met else 'NOT MET'}"
                        )
    return "\n".join([*lines, "", "targets", *verdicts])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000, help="trials per cell (arms, spending, noise, effect)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    if args.trials < 2:
        raise SystemExit("--trials: at least 2, for a standard error")
    print(
        f"python benchmarks/sequential_sim.py --trials {args.trials} --workers {args.workers} --seed {args.seed}\n"
        f"design: looks {design(SPENDINGS[0]).looks} seeds, alpha {ALPHA}, equivalence margin {MARGIN} SD;"
        f" fixed design: exact sign-flip at n = {MAX_SEEDS}, Holm across arms\n"
    )
    start = time.perf_counter()
    results = measure(args.trials, args.workers, args.seed)
    print(render(results, args.trials))
    print(f"\n{time.perf_counter() - start:.0f} s with {args.workers} worker(s)")


if __name__ == "__main__":
    main()
