"""The validity table: coverage, size, family-wise error and power of every interval, test and verdict the report shows.

Simulations with known truth, run with the analysis' own code (the
``*_validity`` functions of :mod:`armlab.analysis.design.synthetic`), at 3, 5, 8 and 12
matched seeds, for normal and heavy-tailed (Student t, 3 df) run noise:

- coverage of the first interval (sign-flip inversion, paired t below its
  reach), the paired t, percentile and BCa intervals, and the size of the
  exact sign-flip test; whether "interval excludes 0" and "p <= 0.05" ever
  disagree;
- size of each equivalence rule at the margin (true difference = delta);
- family-wise error of every better/worse in a family (4 arms, 12 benchmarks,
  2 summaries) under a global and a partial null, gatekept Holm against
  e2d0814's Holm within each measure;
- power of the sign-flip test at the MDE the analysis reports, and the
  coverage of the MDE range;
- coverage of the population mean over new seeds and new items by the
  crossed intervals.

    python benchmarks/coverage_sim.py              # print the tables (about 5 minutes on one core)
    python benchmarks/coverage_sim.py --update     # and rewrite analysis/README.md's block and
                                                   # analysis/design/validity_measured.py (the report's source)
"""

import argparse
import re
import time
from pathlib import Path

import numpy as np

from armlab.analysis.config import parse_config
from armlab.analysis.design import synthetic

REPO = Path(__file__).resolve().parents[1]
SEEDS = (3, 5, 8, 12)
LOOKUP_SEEDS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 20)  # bootstrap coverage for the report's wording
NOISES = ("normal", "t3")
ARMS, BENCHMARKS, PARTIAL_EFFECT = 4, 12, 12.0
ITEMS = 100
CROSSED = {
    "item effects large": {"seed_sd": 0.01, "item_sd": 0.15, "cell_sd": 0.3},
    "seed effects large": {"seed_sd": 0.05, "item_sd": 0.03, "cell_sd": 0.3},
    "seed x item cells large, as with 0/1 item scores": {"seed_sd": 0.01, "item_sd": 0.05, "cell_sd": 0.6},
}


def settings(resamples):
    raw = {
        "experiment": "validity",
        "comparisons": [{"family": "f", "reference": "r", "arms": ["a"]}],
        "analysis": {"resamples": resamples},
    }
    return parse_config(raw).settings


def measure(replicates, resamples, seed):
    """Rows ``(quantity, what, noise, n, value, mc_error)``; every cell has its own generator."""
    cfg = settings(resamples)
    rows = []
    counter = iter(range(1_000_000))

    def rng():
        return np.random.default_rng([seed, next(counter)])

    def add(quantity, what, noise, n, value, reps):
        error = None if value is None or reps is None else round(float(synthetic.mc_error(value, reps)), 4)
        rows.append((quantity, what, noise, n, None if value is None else round(float(value), 4), error))

    for noise in NOISES:
        for n in LOOKUP_SEEDS:
            # twice the replicates: the report quotes these to the percent
            cover = synthetic.bootstrap_coverage(
                noise, n, replicates=2 * replicates, resamples=resamples, confidence=cfg.confidence, rng=rng()
            )
            for method, value in cover.items():
                add("coverage", method, noise, n, value, 2 * replicates)
        for n in SEEDS:
            found = synthetic.first_interval_validity(noise, n, replicates=replicates, settings=cfg, rng=rng())
            for method, value in found["coverage"].items():
                add("coverage", method, noise, n, value, replicates)
            add("size", "sign_flip_test", noise, n, found["size"], replicates)
            add("incoherent", "sign_flip", noise, n, found["incoherent"] / replicates, None)
            for truth, quantity in ((cfg.equivalence_margin, "equivalence_size"), (0.0, "equivalence_power")):
                eq = synthetic.equivalence_validity(
                    noise, n, truth=truth, sd=cfg.equivalence_margin, replicates=replicates, settings=cfg, rng=rng()
                )
                for rule, value in eq.items():
                    add(quantity, rule, noise, n, value, replicates)
            family_reps = replicates // 5
            for effect, suffix in ((0.0, ""), (PARTIAL_EFFECT, "_partial")):
                fam = synthetic.family_validity(
                    noise,
                    n,
                    replicates=family_reps,
                    settings=cfg,
                    rng=rng(),
                    arms=ARMS,
                    benchmarks=BENCHMARKS,
                    effect=effect,
                )
                for rule, value in fam.items():
                    add("fwer", rule + suffix, noise, n, value, family_reps)
            found = synthetic.power_validity(noise, n, replicates=replicates, settings=cfg, rng=rng(), arms=ARMS)
            for what in ("at_mde", "at_t_mde", "range_covers"):
                add("power", what, noise, n, None if found is None else found[what], replicates)
            crossed_reps = replicates // 5
            for scenario, sds in CROSSED.items():
                found = synthetic.crossed_validity(
                    noise,
                    n,
                    items=ITEMS,
                    replicates=crossed_reps,
                    resamples=min(resamples, 1000),
                    settings=cfg,
                    rng=rng(),
                    **sds,
                )
                for what, value in found.items():
                    if what.startswith("width_"):
                        add("crossed_width", f"{what.removeprefix('width_')}, {scenario}", noise, n, value, None)
                    else:
                        add("crossed_coverage", f"{what}, {scenario}", noise, n, value, crossed_reps)
    return rows


def _cell(rows, quantity, what, noise, n, digits=3):
    found = [r for r in rows if r[:4] == (quantity, what, noise, n)]
    if not found or found[0][4] is None:
        return "–"
    value, error = found[0][4], found[0][5]
    return f"{value:.{digits}f}" if error is None else f"{value:.{digits}f} ± {error:.{digits}f}"


LINES = [  # (section, label, quantity, what)
    (
        "Coverage of the true mean by the nominal 95% interval (target 0.95; the report flags an interval more than "
        "1.5 points below)",
        None,
        None,
        None,
    ),
    (None, "first interval: sign-flip inversion (unbounded at 3 and 5 seeds)", "coverage", "sign_flip"),
    (None, "paired t", "coverage", "t"),
    (None, "percentile bootstrap", "coverage", "percentile"),
    (None, "BCa bootstrap", "coverage", "bca"),
    (
        "Exact sign-flip test: share of true nulls rejected at 0.05 (target <= 0.05; 0 where it cannot reject)",
        None,
        None,
        None,
    ),
    (None, "size", "size", "sign_flip_test"),
    (
        "Equivalence within ±δ declared when the true difference is exactly δ (sd of differences = δ; target <= 0.05)",
        None,
        None,
        None,
    ),
    (None, "exact sign-flip TOST (the default verdict)", "equivalence_size", "sign_flip_tost"),
    (None, "paired t-TOST (option)", "equivalence_size", "t_tost"),
    (None, "e2d0814: 90% percentile interval inside ±δ", "equivalence_size", "percentile_inside"),
    (None, "e2d0814: 90% BCa interval inside ±δ", "equivalence_size", "bca_inside"),
    ("Equivalence declared when the true difference is 0 (its power, same design)", None, None, None),
    (None, "exact sign-flip TOST", "equivalence_power", "sign_flip_tost"),
    (None, "paired t-TOST", "equivalence_power", "t_tost"),
    (
        f"Family-wise error: any false better/worse in a family of {ARMS} arms x (2 summaries + {BENCHMARKS} "
        f"benchmarks) (target <= 0.05)",
        None,
        None,
        None,
    ),
    (None, "global null, gatekept Holm (the report's rule)", "fwer", "gatekept_holm"),
    (None, "global null, e2d0814: Holm within each measure", "fwer", "holm_per_measure"),
    (
        None,
        f"partial null (all arms +{PARTIAL_EFFECT:g} sd on one benchmark), gatekept Holm",
        "fwer",
        "gatekept_holm_partial",
    ),
    (None, "partial null, e2d0814: Holm within each measure", "fwer", "holm_per_measure_partial"),
    (
        f"Power of the sign-flip test at the first Holm level α/{ARMS} "
        f"(target 0.80; – where it cannot reach the level)",
        None,
        None,
        None,
    ),
    (None, "at the reported MDE (sign-flip power)", "power", "at_mde"),
    (None, "at e2d0814's MDE (t-test power)", "power", "at_t_mde"),
    (None, "MDE range (95% range of the sd) covers the MDE at the true sd", "power", "range_covers"),
] + [
    row
    for scenario, sds in CROSSED.items()
    for row in (
        (
            f"Coverage of the population mean over new seeds and new items, {scenario} ({ITEMS} items; sd of seed "
            f"effects {sds['seed_sd']}, item effects {sds['item_sd']}, seed x item cells {sds['cell_sd']}; "
            f"target 0.95; "
            f"width: mean width over that of the interval with the true standard error)",
            None,
            None,
            None,
        ),
        (None, "crossed: variance components (default)", "crossed_coverage", f"components, {scenario}"),
        (None, "crossed: pigeonhole bootstrap (option)", "crossed_coverage", f"pigeonhole, {scenario}"),
        (None, "seeds only: sign-flip (paired t at 3 and 5 seeds)", "crossed_coverage", f"seeds_only, {scenario}"),
        (None, "width: variance components", "crossed_width", f"components, {scenario}"),
        (None, "width: pigeonhole bootstrap", "crossed_width", f"pigeonhole, {scenario}"),
    )
]


def render(rows, command, seconds, replicates):
    header = "| | noise | " + " | ".join(f"{n} seeds" for n in SEEDS) + " |"
    rule = "|---|---|" + "---|" * len(SEEDS)
    lines = [f"Measured by `{command}` ({seconds / 60:.0f} min on one core); ± is the 95% Monte-Carlo half-width.", ""]
    for section, label, quantity, what in LINES:
        if section:
            lines += ["", f"**{section}**", "", header, rule]
            continue
        for noise in NOISES:
            cells = [_cell(rows, quantity, what, noise, n, 2 if quantity == "crossed_width" else 3) for n in SEEDS]
            lines.append(f"| {label} | {noise} | " + " | ".join(cells) + " |")
    disagreements = round(sum(r[4] for r in rows if r[0] == "incoherent") * replicates)
    draws = replicates * sum(r[0] == "incoherent" for r in rows)
    lines += [
        "",
        f"The first interval excluded 0 exactly when the sign-flip p was <= 0.05 wherever it was bounded: "
        f"{disagreements} disagreements in {draws} simulated comparisons.",
    ]
    return "\n".join(lines)


def module_text(rows, command, seconds, replicates, cfg):
    body = ",\n".join(f"    {tuple(r)!r}" for r in rows)
    return (
        f'"""Measured validity of the intervals, tests and verdicts (generated by `{command}`; do not edit).\n\n'
        f"Rows: (quantity, what, noise, seeds, value, 95% Monte-Carlo half-width). Read through\n"
        f':mod:`armlab.analysis.design.validity`; analysis/README.md shows the same numbers.\n"""\n\n'
        f"COMMAND = {command!r}\nSECONDS = {seconds:.0f}\nREPLICATES = {replicates}\n"
        f"SETTINGS = {{'alpha': {cfg.alpha!r}, 'confidence': {cfg.confidence!r}, "
        f"'equivalence_margin': {cfg.equivalence_margin!r}}}\n"
        f"ROWS = (\n{body},\n)\n"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=20_000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument(
        "--update",
        action="store_true",
        help="rewrite analysis/README.md's validity block and analysis/design/validity_measured.py",
    )
    args = parser.parse_args()
    command = (
        f"python benchmarks/coverage_sim.py --replicates {args.replicates} --resamples {args.resamples} "
        f"--seed {args.seed}"
    )
    start = time.perf_counter()
    rows = measure(args.replicates, args.resamples, args.seed)
    seconds = round(time.perf_counter() - start)
    text = render(rows, command, seconds, args.replicates)
    print(text)
    if args.update:
        readme = REPO / "analysis" / "README.md"
        block = f"<!-- coverage:start -->\n{text}\n<!-- coverage:end -->"
        updated, count = re.subn(
            r"<!-- coverage:start -->.*?<!-- coverage:end -->", lambda _: block, readme.read_text(), flags=re.S
        )
        if count != 1:
            raise SystemExit(f"{readme}: expected one coverage block between the markers")
        readme.write_text(updated)
        (REPO / "analysis" / "design" / "validity_measured.py").write_text(
            module_text(rows, command, seconds, args.replicates, settings(args.resamples))
        )


if __name__ == "__main__":
    main()
