"""Family-wise error of "equivalent" claims: the gatekept Holm over the TOSTs against each cell's TOST unadjusted.

Simulations with known truth, run with the analysis' own code (:func:`armlab.analysis.design.synthetic.
equivalence_family_validity`), at 3, 5, 8 and 12 matched seeds, normal and heavy-tailed (Student t, 3 df) run
noise: a family of 4 arms x (2 summaries + 12 benchmarks), each benchmark's paired difference of sd δ (the
equivalence margin), in three scenarios: every cell at the margin (every "equivalent" is false); the benchmarks at
±δ with signs that cancel in every summary (the summaries truly equivalent, every benchmark's "equivalent" false);
no difference anywhere (the power, the price of the control).

    python benchmarks/equivalence_fwer.py                 # print the table (about 15 minutes on one core)
    python benchmarks/equivalence_fwer.py --update        # and rewrite its block in docs/statistics.md and
                                                          # benchmarks/equivalence_fwer.json (the rows it shows)
"""

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np

from armlab.analysis.config import parse_config
from armlab.analysis.design import synthetic

REPO = Path(__file__).resolve().parents[1]
DOC, ROWS = REPO / "docs" / "statistics.md", REPO / "benchmarks" / "equivalence_fwer.json"
START, END = "<!-- equivalence-fwer:start -->", "<!-- equivalence-fwer:end -->"
SEEDS, NOISES, ARMS, BENCHMARKS = (3, 5, 8, 12), ("normal", "t3"), 4, 12
LINES = [  # (label, scenario, quantity)
    ("every cell at the margin: any 'equivalent' (target <= 0.05)", "at the margin", "fwer"),
    ("benchmarks at the margin, summaries equivalent: any benchmark 'equivalent' (target <= 0.05)",
     "benchmarks at the margin", "fwer"),
    ("benchmarks at the margin, summaries equivalent: share of the summaries declared equivalent",
     "benchmarks at the margin", "power"),
    ("no difference: share of all cells declared equivalent", "no difference", "power"),
]  # fmt: skip
RULES = {"gatekept_holm": "gatekept Holm (the analysis)", "unadjusted": "each TOST at α, unadjusted (before)"}


def measure(replicates: int, seed: int) -> list[dict]:
    """One row per (scenario, noise, seeds): the rates of :func:`synthetic.equivalence_family_validity`."""
    settings = parse_config({"experiment": "v", "comparisons": [{"family": "f", "reference": "r", "arms": ["a"]}]})
    rows = []
    for s, scenario in enumerate(synthetic.EQUIVALENCE_SCENARIOS):
        for noise in NOISES:
            for n in SEEDS:
                rng = np.random.default_rng([seed, s, NOISES.index(noise), n])
                found = synthetic.equivalence_family_validity(
                    noise, n, replicates=replicates, settings=settings.settings, rng=rng, scenario=scenario,
                    arms=ARMS, benchmarks=BENCHMARKS,
                )  # fmt: skip
                found = {key: None if np.isnan(value) else value for key, value in found.items()}  # JSON: null
                rows.append({"scenario": scenario, "noise": noise, "seeds": n, **found})
    return rows


def _cell(rows: list[dict], scenario: str, noise: str, n: int, key: str, replicates: int) -> str:
    (row,) = [r for r in rows if (r["scenario"], r["noise"], r["seeds"]) == (scenario, noise, n)]
    value = row[key]
    if value is None:
        return "–"
    return f"{value:.3f} ± {synthetic.mc_error(value, replicates):.3f}"


def render(rows: list[dict], command: str, seconds: float, replicates: int) -> str:
    """The Markdown block of docs/statistics.md §7."""
    header = "| | rule | noise | " + " | ".join(f"{n} seeds" for n in SEEDS) + " |"
    lines = [
        f"Measured by `{command}` ({seconds / 60:.0f} min on one core; {ARMS} arms x (2 summaries + {BENCHMARKS} "
        f"benchmarks), {replicates} families per cell; ± is the 95% Monte-Carlo half-width):",
        "",
        header,
        "|---|---|---|" + "---|" * len(SEEDS),
    ]
    for label, scenario, quantity in LINES:
        for rule, name in RULES.items():
            for noise in NOISES:
                cells = [_cell(rows, scenario, noise, n, f"{quantity}_{rule}", replicates) for n in SEEDS]
                lines.append(f"| {label} | {name} | {noise} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=54)
    parser.add_argument("--update", action="store_true", help=f"rewrite the block of {DOC.name} and {ROWS.name}")
    args = parser.parse_args()
    command = f"python benchmarks/equivalence_fwer.py --replicates {args.replicates} --seed {args.seed}"
    start = time.perf_counter()
    rows = measure(args.replicates, args.seed)
    seconds = round(time.perf_counter() - start)
    text = render(rows, command, seconds, args.replicates)
    print(text)
    if args.update:
        block = f"{START}\n{text}\n{END}"
        updated, count = re.subn(f"{START}.*?{END}", lambda _: block, DOC.read_text(), flags=re.S)
        if count != 1:
            raise SystemExit(f"{DOC}: expected one block between {START} and {END}")
        DOC.write_text(updated)
        record = {"command": command, "seconds": seconds, "replicates": args.replicates, "rows": rows}
        ROWS.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
