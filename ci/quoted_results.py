"""Figures the README and docs quote from a run, written from that run's files and checked against them.

A quoted block sits between ``<!-- quoted:NAME ... -->`` and ``<!-- /quoted:NAME -->`` in a Markdown file; its text
is exactly what the renderer ``NAME`` writes from its run's folder, so a figure in the prose is never typed by hand:

    .venv/bin/python ci/quoted_results.py write demo      # rewrite the demo block from results/demo (`make quoted`)
    .venv/bin/python ci/quoted_results.py check demo      # exit 1 where the text and the run disagree (CI, after
                                                           # `make demo`: `make check-quoted`)

A block whose run is missing is one line naming the command that makes it (exit 2).
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]


class MissingRun(Exception):
    """The run a block quotes is not there."""


def _needs(path: Path, command: str) -> Path:
    if not path.exists():
        raise MissingRun(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path} not found: run `{command}`")
    return path


def numerics_classes(results: Path) -> list[str]:
    """The distinct numerics classes the experiment's training and evaluation manifests record."""
    classes = {}
    for manifest in sorted(
        [*results.glob("runs/*/seed-*/manifest.json"), *results.glob("evals/*/seed-*/manifest.json")]
    ):
        record = json.loads(manifest.read_text()).get("numerics")
        classes[record["class"] if isinstance(record, dict) else "not recorded"] = None
    return list(classes)


def seed_agreement(summaries: pd.DataFrame, comparisons: pd.DataFrame) -> list[str]:
    """Per compared arm, on how many seeds its primary summary lies above and below its reference's."""
    rows = comparisons[(comparisons.stage == "primary") & (comparisons.ci_method == comparisons.ci_method.iloc[0])]
    parts = []
    for row in rows.itertuples():
        values = summaries[summaries.summary == row.measure].pivot_table(index="seed", columns="arm", values="value")
        diff = (values[row.arm] - values[row.reference]).dropna()
        if not row.higher_is_better:
            diff = -diff
        parts.append(f"{row.arm} above {row.reference} on {(diff > 0).sum()} of {len(diff)} seeds, below on "
                     f"{(diff < 0).sum()}")  # fmt: skip
    return parts


def headroom(accuracy: pd.DataFrame, comparisons: pd.DataFrame) -> list[str]:
    """The base policy's range over domains and what the first family's reference gains over it in each."""
    domains = [c for c in accuracy.columns if c not in ("domain_balanced", "sd over seeds")]
    reference = comparisons.reference.iloc[0]
    if "base" not in accuracy.index or reference not in accuracy.index:
        return []
    base, gain = accuracy.loc["base", domains], accuracy.loc[reference, domains] - accuracy.loc["base", domains]
    return [
        f"The base policy scores {base.min():.1f}–{base.max():.1f}% per domain; {reference} changes that by "
        f"{gain.min():+.1f} to {gain.max():+.1f} points per domain."
    ]


def render_demo(results: Path) -> str:
    """The demo's accuracy per arm and domain, its verdict lines, the seeds' agreement and the numerics it holds on."""
    from armlab.analysis import outputs, tables
    from armlab.analysis.comparisons.summaries import accuracy_table
    from armlab.analysis.errors import AnalysisInputError
    from armlab.analysis.reporting.read import read_csv

    analysis = _needs(results / "analysis" / "comparisons.csv", "make demo").parent
    try:  # an analysis an older armlab wrote: one line saying to rerun it
        outputs.check_format(json.loads((analysis / "manifest.json").read_text()), analysis / "manifest.json")
    except AnalysisInputError as older:
        raise MissingRun(f"{older} (or `make demo`)") from None
    scores = pd.read_parquet(_needs(results / "scores.parquet", "make demo"))
    comparisons = read_csv(analysis / "comparisons.csv")
    accuracy = accuracy_table(scores).rename(columns={"domain_balanced_sd": "sd over seeds"})
    agreement = seed_agreement(read_csv(analysis / "summaries.csv"), comparisons)
    header = ["arm", *accuracy.columns]
    lines = [
        f"Accuracy (%) per arm and domain, mean over seeds (`results/{results.name}/scores.parquet`):",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *(
            f"| {arm} | " + " | ".join("—" if pd.isna(v) else f"{v:.1f}" for v in row) + " |"
            for arm, row in accuracy.iterrows()
        ),
        "",
        "```text",
        *tables.verdict_lines(comparisons),
        "```",
        "",
        *headroom(accuracy, comparisons),
        f"Seed by seed on the primary summary: {'; '.join(agreement)}.",
        f"Bit for bit, these figures hold on: {'; '.join(numerics_classes(results))} (the runs' manifests).",
    ]
    return "\n".join(lines)


def render_numerics(results: Path) -> str:
    """The demo under each numerics variant of benchmarks/numerics_portability.py: the scores' hash and the verdicts
    (each variant's wall time is in variants.csv; what portable costs is benchmarks/numerics_cost.py's, measured side
    by side)."""
    variants = pd.read_csv(
        _needs(results / "variants.csv", "python benchmarks/numerics_portability.py --out " + str(results))
    )
    wide = variants.pivot_table(
        index=["variant", "numerics", "environment", "scores_sha256"], columns="arm", values="delta_points", sort=False
    )
    verdict = variants.pivot_table(index="variant", columns="arm", values="verdict", aggfunc="first", sort=False)
    arms = list(wide.columns)
    header = ["variant", "numerics", "forced environment", "scores sha256", *(f"{a} Δ (verdict)" for a in arms)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (name, mode, environment, digest), row in wide.iterrows():
        cells = [f"{row[a]:+.2f} ({verdict.loc[name, a]})" for a in arms]
        lines.append(f"| {name} | {mode} | `{environment}` | `{digest}` | " + " | ".join(cells) + " |")
    tables = variants.drop_duplicates("variant").groupby("numerics", sort=False)
    counts = [
        f"{mode}: {g.scores_sha256.nunique()} distinct scores table(s) over {len(g)} variant(s)" for mode, g in tables
    ]
    spreads = [
        f"- {mode}: {arm} Δ {group.delta_points.min():+.2f} to {group.delta_points.max():+.2f} points, "
        + " / ".join(dict.fromkeys(group.verdict))
        for (mode, arm), group in variants.groupby(["numerics", "arm"], sort=False)
    ]
    commits = ", ".join(sorted(set(variants["commit"].astype(str))))
    intro = f"Measured at commit {commits} (`{results.name}/variants.csv`):"
    spread = ["", "Each arm's difference and verdicts over the variants of a mode:", "", *spreads]
    return "\n".join([intro, "", *lines, "", "; ".join(counts) + ".", *spread])


def _shown(path: Path) -> Path:
    """A folder as a command names it: relative to the repository where it is inside it."""
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def _percent(x: float) -> str:
    return "—" if pd.isna(x) else f"{100 * x:.0f}%"


def render_numerics_flag(results: Path) -> str:
    """How often a verdict flips when every run redraws its numerics, and how often the flag marks it
    (benchmarks/numerics_flag_sim.py)."""
    table = pd.read_csv(_needs(results / "flag.csv", f"python benchmarks/numerics_flag_sim.py --out {_shown(results)}"))
    header = ["seeds", "numerics sd", "decisive", "of which flip", "flagged", "flips flagged", "unflagged that flip",
              "flagged that flip"]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in table.itertuples():
        cells = [r.decisive, r.flips, r.flagged, r.flips_flagged, r.flip_if_unflagged, r.flip_if_flagged]
        lines.append(f"| {r.seeds} | {r.numerics_sd:g} | " + " | ".join(map(_percent, cells)) + " |")
    first = table.iloc[0]
    lines += ["", f"{int(first.replicates)} simulated comparisons per row, {int(first.controls)} controls each."]
    return "\n".join(lines)


def _points(variance: float) -> str:
    """A variance of a mean difference as its standard error in points (a negative estimate as 0)."""
    return "—" if pd.isna(variance) else f"{100 * max(variance, 0.0) ** 0.5:.2f}"


def render_numerics_components(results: Path) -> str:
    """The testbed's numerics controls: what numerics alone did to the runs' bits and scores, the numerics component
    beside the seed, item and sampling ones, the verdicts and the runs' commit and numerics."""
    from armlab.analysis import tables
    from armlab.analysis.reporting.read import read_csv

    command = ".venv/bin/snakemake --configfile config/experiments/numerics.yaml --cores 2"
    analysis = _needs(results / "analysis" / "comparisons.csv", command).parent
    comparisons, components = read_csv(analysis / "comparisons.csv"), read_csv(analysis / "variance_components.csv")
    declared = json.loads((results / "config" / "analysis.json").read_text())["arms"]
    controls = {arm: spec["numerics"] for arm, spec in declared.items() if (spec or {}).get("numerics")}
    first = comparisons[comparisons.ci_method == comparisons.ci_method.iloc[0]]
    primary = first[first.stage == "primary"]
    scores = pd.read_parquet(_needs(results / "scores.parquet", command))
    item_scores = scores.pivot_table(index=["seed", "benchmark", "item"], columns="arm", values="n_correct")
    runs = {
        (m["arm"], m["seed"]): m
        for m in (json.loads(path.read_text()) for path in sorted(results.glob("runs/*/seed-*/manifest.json")))
    }
    measure, by_arm = primary.measure.iloc[0], components.set_index("arm")
    lines = [
        f"Each control against its reference: how many of their runs' trained weights differ in any bit "
        f"(`policy.pt`'s sha256), how many item scores differ (of every item, seed and benchmark), its mean difference "
        f"on {measure} and the standard error numerics alone put on a mean difference at these seeds "
        f"(`var_numerics`, docs/statistics.md §16).",
        "",
        "| control | of | numerics | weights that differ | item scores that differ | Δ (points) | numerics se (pts) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in primary[primary.arm.isin(list(controls))].itertuples():
        seeds = sorted(seed for arm, seed in runs if arm == r.arm)
        weights = sum(runs[r.arm, s]["files"]["policy.pt"] != runs[r.reference, s]["files"]["policy.pt"] for s in seeds)
        both = item_scores[[r.arm, r.reference]].dropna()
        spec = ", ".join(f"{k} {v}" for k, v in controls[r.arm].items())
        lines.append(
            f"| {r.arm} | {r.reference} | {spec} | {weights} of {len(seeds)} | "
            f"{(both[r.arm] != both[r.reference]).sum()} of {len(both)} | {tables.points(r.mean_diff)} | "
            f"{_points(by_arm.loc[r.arm, 'var_numerics'])} |"
        )
    lines += [
        "",
        f"The standard error of each comparison's mean difference on {measure} from each source, in points (variance "
        "components, docs/statistics.md §10; numerics, from the controls' mean, is a part of the training seeds'):",
        "",
        "| comparison | Δ (points) | training seeds | items | sampling | numerics |",
        "|---|---|---|---|---|---|",
    ]
    for r in components[~components.arm.isin(list(controls))].itertuples():
        parts = " | ".join(_points(getattr(r, f"var_{name}")) for name in ("training", "items", "sampling", "numerics"))
        lines.append(f"| {r.arm} vs {r.reference} | {tables.points(r.mean_diff)} | {parts} |")
    flagged = int(first.not_robust_to_numerics.astype(bool).sum())
    lines += [
        "",
        f"Its verdicts on {measure}, and, over every measure, {flagged} verdict(s) not robust to numerics:",
        "",
        "```text",
        *tables.verdict_lines(comparisons),
        "```",
    ]
    records = [*runs.values(), *(json.loads(p.read_text()) for p in results.glob("evals/*/seed-*/manifest.json"))]
    commits = sorted({str(m.get("git_commit"))[:7] for m in records})
    dirty = " (with uncommitted changes)" if any(m.get("git_dirty") for m in records) else ""
    lines += [
        "",
        f"Run: `{command}` at commit {', '.join(commits)}{dirty}, {len(records)} training and evaluation jobs. "
        f"Their bits hold on: {'; '.join(numerics_classes(results))}.",
    ]
    return "\n".join(lines)


def render_numerics_base(results: Path) -> str:
    """The experiment's base policy trained again under each forced capability (benchmarks/numerics_base.py)."""
    command = f"python benchmarks/numerics_base.py --out {_shown(results)}"
    table = pd.read_csv(_needs(results / "base.csv", command))
    domains = [
        c for c in table.columns if c not in ("capability", "policy_sha256", "final_loss", "items_differing", "items")
    ]
    header = ["base policy trained under", "weights (sha256)", "final loss", *domains, "item scores that differ"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in table.itertuples():
        cells = " | ".join(f"{getattr(r, d):.1f}" for d in domains)
        weights, differ = f"`{r.policy_sha256}`", f"{r.items_differing} of {r.items}"
        lines.append(f"| {r.capability} | {weights} | {r.final_loss:.4f} | {cells} | {differ} |")
    manifests = [json.loads(p.read_text()) for p in sorted(results.glob("*/base/manifest.json"))]
    commits = sorted({str(m.get("git_commit"))[:7] for m in manifests})
    dirty = " (with uncommitted changes)" if any(m.get("git_dirty") for m in manifests) else ""
    lines += ["", f"Run: `.venv/bin/{command}` at commit {', '.join(commits)}{dirty}; accuracy in %, each evaluated "
              "with the experiment's evaluation (portable kernels)."]  # fmt: skip
    return "\n".join(lines)


def leak_lifts(results: Path, table: pd.DataFrame) -> list[str]:
    """Per planted leak, what training on the leaked items did to them: the arm's accuracy on its leaked items (the
    run manifests' ``leak.items``) against its reference's on the same items, mean over seeds."""
    leaks = table[table["level"] == "summary"].dropna(subset=["planted_leak"])
    if not len(leaks):
        return []
    scores = pd.read_parquet(_needs(results / "scores.parquet", "the workflow"), columns=["arm", "item", "score"])
    lines = []
    for row in leaks.itertuples():
        manifest = next(iter(sorted((results / "runs" / row.arm).glob("seed-*/manifest.json"))), None)
        if manifest is None:
            continue
        items = set(json.loads(manifest.read_text())["leak"]["items"])
        on = scores[scores["item"].isin(items)].groupby("arm")["score"].mean()
        lines.append(
            f"{row.arm}: on its {len(items)} leaked items {100 * on[row.arm]:.1f}% right, {row.reference} "
            f"{100 * on[row.reference]:.1f}% (the run manifests' leak.items)."
        )
    return lines


def render_contamination(results: Path) -> str:
    """The contamination screen's pooled row per family and arm (analysis/contamination.csv) and its flagged rows."""
    from armlab.analysis import tables
    from armlab.analysis.reporting.read import read_csv
    from armlab.analysis.screens import contamination

    command = f"snakemake --configfile config/experiments/{results.name}.yaml --cores 2"
    table = read_csv(_needs(results / "analysis" / "contamination.csv", command))
    if not len(table):
        raise MissingRun(f"{results}/analysis/contamination.csv: no rows (no benchmark has a twin): run `{command}`")
    benchmarks = table[table["level"] == "benchmark"]
    header = ["family", "comparison", "planted leak", "gain on its items", "gain on the twins", "difference",
              "interval at Holm's level", "Holm p", "flagged", "benchmarks flagged"]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table[table["level"] == "summary"].itertuples():
        own = benchmarks[(benchmarks["family"] == row.family) & (benchmarks["arm"] == row.arm)]
        cells = [
            row.family,
            f"{row.arm} vs {row.reference}",
            "—" if pd.isna(row.planted_leak) else f"{100 * row.planted_leak:g}% of each benchmark's items",
            tables.points(row.gain),
            tables.points(row.twin_gain),
            tables.points(row.mean_diff),
            tables.decision_text(row),
            f"{row.p_holm:.3g}",
            "yes" if row.flagged else "no",
            f"{int(own['flagged'].sum())} of {len(own)}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    seeds = ", ".join(str(n) for n in sorted(set(table["n_seeds"])))
    flagged = contamination.flagged_lines(table)
    lifts = leak_lifts(results, table)
    return "\n".join(
        [
            f"Pooled over the benchmarks with a twin, in points, {seeds} seeds (`results/{results.name}/analysis/"
            "contamination.csv`):",
            "",
            *lines,
            "",
            *lifts,
            *([""] if lifts else []),
            f"Flagged rows ({len(flagged)}):" if flagged else "No row is flagged.",
            *(["", "```text", *flagged, "```"] if flagged else []),
        ]
    )


RENDERERS: dict[str, tuple[Callable[[Path], str], Path, str]] = {
    # name: (renderer, the run's folder, the Markdown file holding the block)
    "demo": (render_demo, REPO / "results" / "demo", "README.md"),
    "numerics": (render_numerics, REPO / "results" / "numerics_portability", "docs/results.md"),
    "numerics_components": (render_numerics_components, REPO / "results" / "numerics", "docs/results.md"),
    "numerics_flag": (render_numerics_flag, REPO / "results" / "numerics_flag_sim", "docs/statistics.md"),
    "numerics_base": (render_numerics_base, REPO / "results" / "numerics_base", "docs/results.md"),
    "contamination": (render_contamination, REPO / "results" / "contamination", "docs/benchmarks.md"),
}


def block_pattern(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- quoted:{name}\b[^\n]*-->\n)(.*?)(<!-- /quoted:{name} -->)", re.S)


def quoted(name: str, text: str, path: str) -> re.Match:
    found = block_pattern(name).search(text)
    if not found:
        raise SystemExit(f"{path}: no block <!-- quoted:{name} ... --> ... <!-- /quoted:{name} -->")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("write", "check"))
    parser.add_argument("names", nargs="+", choices=sorted(RENDERERS))
    parser.add_argument("--results", type=Path, help="the run's folder (default: the block's own)")
    parser.add_argument("--document", type=Path, help="the Markdown file holding the block (default: the block's own)")
    args = parser.parse_args(argv)
    status = 0
    for name in args.names:
        render, results, document = RENDERERS[name]
        results, path = (args.results or results).resolve(), (args.document or REPO / document).resolve()
        document = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
        text = path.read_text()
        found = quoted(name, text, document)
        try:
            fresh = render(results) + "\n"  # the block's lines, each ending in a line break
        except MissingRun as missing:
            print(f"quoted:{name}: {missing}", file=sys.stderr)
            return 2
        if args.action == "write":
            path.write_text(text[: found.start(2)] + fresh + text[found.end(2) :])
            print(f"{document}: quoted:{name} written from {results}")
        elif fresh != found.group(2):
            line = next(
                (i for i, (a, b) in enumerate(zip(found.group(2).splitlines(), fresh.splitlines()), 1) if a != b),
                min(len(found.group(2).splitlines()), len(fresh.splitlines())) + 1,
            )
            print(f"{document}: quoted:{name} differs from {results} at its line {line}; "
                  "`make quoted` rewrites it from the run:", file=sys.stderr)  # fmt: skip
            sys.stderr.writelines(difflib.unified_diff(found.group(2).splitlines(True), fresh.splitlines(True),
                                                       document, "the run", n=0))  # fmt: skip
            status = 1
        else:
            print(f"{document}: quoted:{name} agrees with {results}")
    return status


if __name__ == "__main__":
    sys.exit(main())
