"""The report's sections, one registry (:data:`SECTIONS`, in page order): each is a function of a :class:`Page` (the
config, the analysis, the run folders, the rendered figures) that returns its HTML, or "" to leave it and its link
out. A new section is one function and one entry."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from armlab.analysis import tables
from armlab.analysis.design import validity
from armlab.analysis.reporting import figures
from armlab.analysis.reporting.html import details, esc, html_facts, html_list, html_table, muted, section
from armlab.analysis.reporting.read import Analysis, Curves, Runs
from armlab.analysis.samples import sampled
from armlab.analysis.screens import contamination, verifier_sensitivity
from armlab.analysis.settings import Settings
from armlab.analysis.stats.sequential import SPENDING
from armlab.registry import Registry

if TYPE_CHECKING:
    from armlab.analysis.config import Config


NO_TRAINING_LOGS = (
    "No training logs: these results were converted from elsewhere (a released table, lm-eval "
    "logs), so there are no training curves, recipe or run provenance beyond the scores file."
)


# ----------------------------------------------------------------------------- words


def _join(names: Iterable[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _span(values: np.ndarray | pd.Series, fmt: str) -> str | None:
    """``"a"`` when all finite values format alike, else ``"lowest–highest"``; ``None`` when none is finite."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if not len(values):
        return None
    low, high = fmt.format(values.min()), fmt.format(values.max())
    return low if low == high else f"{low}–{high}"


LOOSE_SPREAD = 10  # a range whose ends differ more than this many times says only its lower end


def _spread_span(values: np.ndarray | pd.Series, fmt: str, n: int, unit: str = "") -> str | None:
    """:func:`_span` over the spread's interval; "at least a (...)" where too few seeds leave its top meaningless.

    With 2 seeds the sd's 95% interval spans a factor of about 70, so "seeds needed 7–6726" reads as noise.
    """
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    if len(values) and values.max() > LOOSE_SPREAD * values.min():
        low = fmt.format(values.min())
        return f"at least {low}{unit} ({n} seeds cannot estimate the spread well enough for an upper end)"
    span = _span(values, fmt)
    return span and span + unit


def primary_rows(comparisons: pd.DataFrame) -> pd.DataFrame:
    """One row per (family, arm): the first interval method on the primary (first) summary."""
    rows = figures.first_method(comparisons[comparisons["level"] == "summary"])
    rows = rows[rows["measure"] == rows["measure"].iloc[0]]
    return rows.assign(verdict=tables.verdicts(rows))


def _sizes(rows: pd.DataFrame) -> str:
    """The family's seeds (or, unpaired, runs of the arms vs the reference) in words."""
    return tables.sizes_text(rows.loc[rows["n_seeds"].idxmax()])


def precision_sentence(rows: pd.DataFrame, settings: Settings) -> str:
    """What the family's seeds can detect (rows: :func:`primary_rows` of one family)."""
    n, k, sizes = int(rows["n_seeds"].max()), len(rows), _sizes(rows)
    unpaired = tables.is_unpaired(rows)
    mde = _span(100 * rows["mde"], "{:.2f}")
    if figures.cannot_reach_alpha(rows, settings.alpha):
        text = (
            f"With {sizes} no effect of any size is detectable: the smallest Holm-adjusted p this family "
            f"can reach is {rows['min_attainable_p'].max():.3g} > α = {settings.alpha:g}."
        )
    elif mde:
        text = (
            f"The smallest effect detectable with {sizes} (power {settings.power:g}, level α/{k}) is "
            f"{mde} points at the observed spread."
        )
    else:
        text = (
            f"The {'runs' if unpaired else 'paired differences'} have no spread, so the detectable effect is undefined."
        )
    needed = _span(rows["seeds_needed"], "{:.0f}")
    if needed:
        text += (
            f" Detecting {100 * settings.power_effect:g} point(s) with power {settings.power:g} needs "
            f"{needed} {'runs per arm' if unpaired else 'matched seeds'} at the observed spread."
        )
    # the spread's own uncertainty
    mde_range = _spread_span(100 * np.concatenate([rows["mde_low"], rows["mde_high"]]), "{:.2f}", n, " points")
    needed_range = _spread_span(np.concatenate([rows["seeds_needed_low"], rows["seeds_needed_high"]]), "{:.0f}", n)
    ranges = [
        f"detectable effect {mde_range}" if mde_range else None,
        f"{'runs per arm' if unpaired else 'seeds'} needed {needed_range}" if needed_range else None,
    ]
    stated = [r for r in ranges if r]
    if stated:
        text += (
            f" Power is the {tables.test_name(rows)}'s, for normal {'runs' if unpaired else 'differences'}; "
            f"over the {100 * settings.confidence:g}% range of the spread with {sizes}: {' and '.join(stated)}."
        )
    return text


def family_headline(rows: pd.DataFrame, settings: Settings) -> list[str]:
    """Plain-word verdicts of one family (rows: :func:`primary_rows` of that family).

    What the seeds could detect at all is :func:`precision_sentence`.
    """
    reference, measure, n = rows["reference"].iloc[0], rows["measure"].iloc[0], int(rows["n_seeds"].max())

    def interval(r: Any) -> str:
        shown = tables.interval_text(r.decision_low, r.decision_high, tables.points)
        return f"{100 * r.decision_level:.3g}% interval at Holm's level: {shown}"

    sentences = []
    if not (rows["verdict"] == "better").any():
        sentences.append(
            f"No arm beats {reference} on {measure} at this precision ({_sizes(rows)}, Holm at α = {settings.alpha:g})."
        )
    for r in rows[rows["verdict"].isin(["better", "worse"])].itertuples():
        relation = "beats" if r.verdict == "better" else "is worse than"
        sentences.append(
            f"{r.arm} {relation} {reference} by {abs(100 * r.mean_diff):.2f} points "
            f"({interval(r)}; Holm p = {r.p_holm:.3g}{tables.numerics_flag(r)})."
        )
    for r in rows[rows["verdict"] == "equivalent"].itertuples():
        # decided by an exact TOST (sign-flip, permutation) or the t-TOST under Holm: its own interval, not the
        # difference's, is the one that lies inside the margin
        shown = tables.interval_text(r.eq_decision_low, r.eq_decision_high, tables.points)
        sentences.append(
            f"{r.arm} is equivalent to {reference} within {tables.margin_text(r.equivalence_margin)} "
            f"({100 * r.eq_decision_level:.3g}% TOST interval at Holm's level: {shown}; TOST Holm p = "
            f"{r.p_equivalence_holm:.3g}{tables.numerics_flag(r)})."
        )
    attainable = rows["equivalence_attainable"].astype(bool).all()
    if not attainable and not tables.is_unpaired(rows):  # unpaired: the notes say it, with the run counts
        sentences.append(
            validity.unattainable_equivalence_sentence(n, settings.alpha, rows["equivalence_margin"].iloc[0], len(rows))
        )
    largest = rows.loc[rows["mean_diff"].abs().idxmax()]
    sentences.append(
        f"Largest observed difference: {largest.arm}, {tables.points(largest.mean_diff)} points ({interval(largest)})."
    )
    return sentences


def _flatten(mapping: Mapping, prefix: str = "") -> dict:
    """Nested dicts as ``{"a.b": value}``."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            out |= _flatten(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


def recipe_tables(manifests: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(shared, per_arm)``: the recipe keys equal in every run, and per arm the keys that differ."""
    recipes = pd.DataFrame(
        [{"arm": m["arm"], **{k: str(v) for k, v in _flatten(m.get("recipe", {})).items()}} for m in manifests]
    )
    recipes = recipes.fillna("—")  # a key that some runs lack differs between runs
    keys = [c for c in recipes.columns if c != "arm"]
    varying = [k for k in keys if recipes[k].nunique() > 1]
    shared = pd.DataFrame({"key": [k for k in keys if k not in varying]})
    shared["value"] = [recipes[k].iloc[0] for k in shared["key"]]
    return shared, recipes.drop_duplicates("arm")[["arm", *varying]]


def provenance(manifests: list[dict]) -> tuple[dict[str, str], pd.DataFrame]:
    """``(facts, times)``: the distinct commits, versions and platforms of the runs, and each run's time."""
    frame = pd.DataFrame(manifests)
    packages = pd.DataFrame([m.get("packages", {}) for m in manifests])

    def distinct(values: pd.Series) -> str:
        return ", ".join(values.dropna().astype(str).unique()) or "not recorded"

    columns = {
        "git commit": "git_commit",
        "uncommitted changes": "git_dirty",
        "python": "python",
        "platform": "platform",
        "threads": "threads",
        "config hash": "config_hash",
    }
    facts = {label: distinct(frame.get(column, pd.Series(dtype=str))) for label, column in columns.items()}
    facts["numerics (the machines its bits hold on)"] = numerics_classes(manifests) or "not recorded"
    facts |= {name: distinct(packages[name]) for name in packages.columns}
    times = frame.reindex(columns=["arm", "seed", "seconds", "ms_per_step"])
    times = times.assign(seconds=times["seconds"].round(1), ms_per_step=times["ms_per_step"].round().astype("Int64"))
    return facts, times


def numerics_classes(manifests: list[dict]) -> str:
    """The distinct numerics classes the runs recorded (armlab.numerics): the machines their bits are reproducible
    on; "" where none recorded one."""
    classes = dict.fromkeys(str(m["numerics"].get("class")) for m in manifests if isinstance(m.get("numerics"), dict))
    return "; ".join(classes)


def runs_summary(runs: Runs | None) -> str:
    """One line on the training runs: how many, how long, which commit; or that there are none."""
    if runs is None:
        return NO_TRAINING_LOGS
    trained = [m for m in runs.manifests if not m.get("trained_elsewhere")]  # the others' seconds: their recording
    elsewhere = len(runs.manifests) - len(trained)
    text = f"{runs.steps.groupby(['arm', 'seed']).ngroups} runs with step logs"
    text += f", {elsewhere} of them trained elsewhere (see Checkpoints evaluated)" if elsewhere else ""
    seconds = pd.Series([m.get("seconds") for m in trained], dtype=float)
    timing = _span(seconds, "{:.0f}")
    if timing:
        text += f", {seconds.sum() / 60:.1f} min of training ({timing} s per run)"
    commits = sorted({str(m["git_commit"]) for m in runs.manifests if m.get("git_commit")})
    dirty = sum(bool(m.get("git_dirty")) for m in runs.manifests)
    changes = f" ({dirty} run(s) with uncommitted changes to tracked files)" if dirty else ""
    numerics = numerics_classes(runs.manifests)
    return (
        text
        + f"; commit {', '.join(commits) or 'not recorded'}{changes}"
        + (f"; numerics {numerics}" if numerics else "")
    )


# ----------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class Page:
    """What the report's sections are made of: the config, the analysis, the run folders (None for results from
    elsewhere), each figure's inline HTML by name (:func:`render_figures`) and the config's text."""

    cfg: Config
    analysis: Analysis
    runs: Runs | None = None
    figures: Mapping[str, str] = field(default_factory=dict)
    config_text: str = ""
    curves: Curves | None = None  # armlab curves --config's tables, where the report was given them
    checkpoints: pd.DataFrame | None = None  # the checkpoints of runs made elsewhere, as recorded (read_checkpoints)

    def figures_of_families(self, prefix: str) -> dict[str, str]:
        """The figures ``<prefix>-<i>`` by the family of the config's i-th comparison ("" where there is none)."""
        return {c.family: self.figures.get(f"{prefix}-{i}", "") for i, c in enumerate(self.cfg.comparisons, start=1)}


def report_card_section(page: Page) -> str:
    """The report card (report_card.csv): each item of the minimum standard for an RLVR claim, its grade, the number
    behind it and why; "" where the analysis wrote no card."""
    card = page.analysis.report_card
    if not len(card):
        return ""
    counts = card["status"].value_counts()
    tally = ", ".join(
        f"{counts[s]} {s}" for s in ("pass", "fail", "not applicable", "not available", "not run") if s in counts
    )
    rows = "".join(
        f'<tr><td class="status"><span class="chip {esc(r.status.replace(" ", "-"))}">{esc(r.status)}</span></td>'
        f"<td>{esc(r.check)}</td><td>{esc(r.value)}</td><td>{esc(r.reason)}</td></tr>"
        for r in card.itertuples()
    )
    table = (
        '<div class="scroll"><table class="grades"><thead><tr><th>grade</th><th>check</th><th>number</th>'
        f"<th>why</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )
    lede = (
        f'<p class="muted">This experiment against the minimum standard for an RLVR claim ({esc(tally)}): '
        "enough seeds, one evaluation protocol for every arm and the base, matched compute, answer-format failures "
        "compared, nothing chosen on the test items, grader robustness and contamination. "
        '"Not available": an input is missing, so the item cannot pass. analysis/report_card.csv.</p>'
    )
    return section("card", "Report card", lede + table)


def what_was_run(page: Page) -> str:
    """Scores, arms and seeds, benchmarks, comparisons, runs; folded: summaries, recipe, provenance, config."""
    cfg, analysis, runs, config_text = page.cfg, page.analysis, page.runs, page.config_text
    seeds = analysis.summaries.groupby("arm", sort=False)["seed"].apply(
        lambda s: ", ".join(map(str, sorted(s.unique())))
    )
    compared = cfg.compared_arms
    others = [a for a in seeds.index if a not in compared]
    seed_sets = sorted(set(seeds[compared]))
    benchmarks = list(dict.fromkeys(analysis.weights["benchmark"]))
    domains = pd.Series([(cfg.benchmarks or {}).get(b, "unknown") for b in benchmarks]).value_counts(sort=False)
    facts = {
        "Scores": analysis.manifest.get("input", "not recorded"),
        "Arms × seeds": f"{', '.join(compared)} × seeds {'; '.join(seed_sets)}"
        + (" (matched)" if len(seed_sets) == 1 else "")
        + (f"; only summarized: {', '.join(others)}" if others else ""),
        "Benchmarks": f"{len(benchmarks)} in {len(domains)} domain(s): "
        + ", ".join(f"{d} ({c})" for d, c in domains.items()),
        "Comparisons": "; ".join(f"{c.family}: {', '.join(c.arms)} vs {c.reference}" for c in cfg.comparisons),
        "Training runs": runs_summary(runs),
    }
    body = html_facts(facts)
    means = analysis.summaries.pivot_table(index="arm", columns="summary", values="value", sort=False)
    means = (100 * means).map(lambda x: f"{x:.2f}").reset_index().rename_axis(columns=None)
    body += details("Summaries per arm (mean over seeds, points)", html_table(means))
    if runs is not None and runs.manifests:
        shared, per_arm = recipe_tables(runs.manifests)
        facts, times = provenance(runs.manifests)
        body += details(
            "Recipe: what each arm changes, and what all runs share", html_table(per_arm) + html_table(shared)
        )
        body += details(
            "Provenance: commit, versions, platform and run times",
            html_table(pd.DataFrame({"": list(facts), "value": list(facts.values())})) + html_table(times),
        )
    body += details(f"Config file ({cfg.source})", f"<pre>{esc(config_text)}</pre>")
    return section("run", "What was run", body)


def checkpoints_section(page: Page) -> str:
    """Runs made elsewhere: every checkpoint evaluated, with its folder and the sha256 of its files as recorded
    before the evaluation (the base checkpoint as arm base); "" where the runs were trained here."""
    recorded = page.checkpoints
    if recorded is None:
        return ""
    runs = recorded.drop_duplicates(["arm", "seed"])
    text = (
        f"{len(recorded)} checkpoint(s) of {len(runs)} run(s) trained elsewhere, each a folder whose files were "
        f"hashed before it was evaluated; its sha256 is of its files' paths, sizes and sha256 "
        f"(training/backends/checkpoints.py). A checkpoint whose files change is recorded and evaluated again."
    )
    shown = recorded.drop(columns=["description", "claims"]).assign(
        step=recorded["step"].map(lambda step: "—" if pd.isna(step) else str(int(step))),
        bytes=recorded["bytes"].map(lambda n: f"{n:,}"),
    )
    arms = runs.drop_duplicates("arm").assign(
        claims=lambda frame: frame["claims"].map(
            lambda claims: ", ".join(f"{k}: {v}" for k, v in _flatten(claims).items())
        )
    )
    described = arms[(arms["description"].notna()) | (arms["claims"] != "")][["arm", "description", "claims"]]
    body = f"<p>{esc(text)}</p>"
    if not described.empty:  # what each arm is and claims it was trained with, as its config says: not checked
        body += html_table(described.fillna("—"))
    return section("checkpoints", "Checkpoints evaluated", body + html_table(shown))


def sequential_verdicts(analysis: Analysis) -> str:
    """The headline under a sequential design: each arm's decision at its stop, with its repeated interval."""
    decisions = analysis.sequential
    cards = []
    for family, group in decisions.groupby("family", sort=False):
        chips, sentences = "", []
        for r in group.itertuples():
            verdict = r.direction or r.decision  # better / worse, or equivalent / inconclusive
            chips += (
                f'<span class="chip {verdict}">{esc(r.arm)} {esc(tables.points(r.mean_diff))} · {esc(verdict)}</span>'
            )
            where = f"stopped at look {r.look} with {r.n_seeds} seeds"
            interval = (
                f"{100 * r.rci_level:g}% repeated interval {tables.points(r.rci_low)} to {tables.points(r.rci_high)}"
            )
            if r.decision == "differs":
                relation = "beats" if r.direction == "better" else "is worse than"
                sentences.append(
                    f"{r.arm} {relation} {r.reference} by {abs(100 * r.mean_diff):.2f} points ({interval}; {where})."
                )
            elif r.decision == "equivalent":
                sentences.append(
                    f"{r.arm} is equivalent to {r.reference} within ±{100 * r.equivalence_margin:g} point(s) ({where})."
                )
            else:
                sentences.append(
                    f"{r.arm} vs {r.reference}: not decided by the last look, {r.n_seeds} seeds ({interval})."
                )
        cards.append(
            f'<div class="card"><h3>{esc(family)}: arms vs {esc(group["reference"].iloc[0])}</h3>{chips}'
            + html_list(sentences)
            + "</div>"
        )
    lede = (
        f'<p class="muted">A sequential seed design decided these on the primary summary: its group-sequential '
        f"sign-flip tests with the family-wise error of difference claims over all looks at α = "
        f"{analysis.settings.alpha:g} (section Sequential design), not the fixed-n tests of the comparisons below, "
        f"which ignore the stopping. Δ in points (score × 100): the mean over the arm's seeds.</p>"
    )
    return section("verdicts", "Headline verdicts", lede + f'<div class="cards">{"".join(cards)}</div>')


def replication_section(page: Page) -> str:
    """The preregistered predictions: claim, source, prediction, observed difference, verdict; "" without any."""
    analysis = page.analysis
    table = analysis.replications
    if not len(table):
        return ""
    counts = table.groupby(["registration", "verdict"]).size()
    tally = "; ".join(
        f"{status}: " + ", ".join(f"{n} {v}" for v, n in group.droplevel(0).items())
        for status, group in counts.groupby(level=0)
    )
    body = (
        f"<p>{esc(tally)}.</p>"
        + html_table(tables.replication_display(table))
        + f'<p class="muted">{esc(tables.REPLICATION_NOTE)}</p>'
    )
    dropped = table[~table["in_config"].astype(bool)]
    if len(dropped):
        body += (
            '<p class="warning">Locked but no longer in the config: '
            + esc(", ".join(f"{r.arm} ({r.family}, {r.measure})" for r in dropped.itertuples()))
            + ". A preregistered prediction stays in this table whatever the config says now.</p>"
        )
    return section("replication", "Replication of preregistered predictions", body)


def verdict_section(page: Page) -> str:
    """Headline verdicts per family, on the primary summary, with a chip per arm (a sequential design's decisions
    where there is one)."""
    analysis = page.analysis
    if has_sequential(analysis):
        return sequential_verdicts(analysis)
    rows = primary_rows(analysis.comparisons)
    cards = []
    for family, group in rows.groupby("family", sort=False):
        chips = "".join(
            f'<span class="chip {r.verdict}">{esc(r.arm)} {esc(tables.points(r.mean_diff))} · '
            f"{esc(r.verdict)} · {esc(tables.verdict_evidence(r))}{' · ' + tables.NOT_ROBUST if flagged else ''}</span>"
            for r, flagged in zip(group.itertuples(), tables.not_robust(group))
        )
        unreachable = figures.cannot_reach_alpha(group, analysis.settings.alpha) is not None
        precision = (
            ('<p class="warning">' if unreachable else "<p>")
            + esc(precision_sentence(group, analysis.settings))
            + "</p>"
        )
        cards.append(
            f'<div class="card"><h3>{esc(family)}: arms vs {esc(group["reference"].iloc[0])}</h3>{chips}'
            + html_list(family_headline(group, analysis.settings))
            + precision
            + "</div>"
        )
    test = tables.test_name(rows)
    lede = (
        f'<p class="muted">On the primary summary, {esc(rows["measure"].iloc[0])}; Δ in points (score × 100). '
        f"Better/worse: {esc(test)}, Holm across the family's arms at α = {analysis.settings.alpha:g}, shown with "
        f"its interval at the level where it agrees with Holm's decisions (it excludes 0 exactly when the arm is "
        f"better or worse); equivalent: {esc(tables.equivalence_test(rows))} within the margin, Holm across the "
        f"arms at α, shown with its own interval at the level where it agrees with those decisions (it lies inside "
        f"the margin exactly when the arm is equivalent); otherwise inconclusive, shown with both.</p>"
    )
    return section("verdicts", "Headline verdicts", lede + f'<div class="cards">{"".join(cards)}</div>')


def comparison_section(page: Page) -> str:
    """Per family: the forest plot, the summary table and (folded) the per-benchmark table."""
    analysis = page.analysis
    families = dict.fromkeys(analysis.comparisons["family"])
    forest = {family: page.figures[f"forest-{i}"] for i, family in enumerate(families, start=1)}
    parts = []
    for (family, level), group in analysis.comparisons.groupby(["family", "level"], sort=False):
        table = html_table(tables.comparison_display(group))
        parts.append(
            f"<h3>{esc(family)}</h3>{forest[family]}{table}"
            if level == "summary"
            else details(f"{family}: per benchmark", table)
        )
    note = (
        f'<p class="muted">{esc(tables.comparison_note(analysis.comparisons))} MDE: minimum detectable effect of the '
        f"{esc(tables.test_name(analysis.comparisons))} at power {analysis.settings.power:g} (range: over the "
        f"uncertainty of the spread). Percentile and BCa "
        f"intervals over few seeds are too narrow: their measured coverage is in the notes below and in "
        f"analysis/README.md. The same tables are in comparisons.csv, .md and .tex.</p>"
    )
    return section("comparisons", "Forest plots and tables", "".join(parts) + note)


def has_sequential(analysis: Analysis) -> bool:
    """Whether the analysis ran a sequential design (its tables have rows; a header only or absent: none)."""
    return len(analysis.sequential) > 0


def runs_spent(decisions: pd.DataFrame) -> pd.DataFrame:
    """Seeds each arm ran under the sequential design and under the fixed one (rows of sequential.csv).

    Seeds run in the design's order, so an arm's runs are its first n seeds: a reference runs until the last
    arm of its family stops, an arm in several families until its last stop.
    """
    needed = pd.concat(
        [
            decisions.groupby("reference", sort=False)["n_seeds"].max(),
            decisions.groupby("arm", sort=False)["n_seeds"].max(),
        ]
    )
    seeds = needed.groupby(level=0, sort=False).max()
    fixed = int(decisions["max_seeds"].max())
    return pd.DataFrame(
        {"arm": seeds.index, "seeds run": seeds.to_numpy(), "fixed design": fixed, "saved": fixed - seeds.to_numpy()}
    )


def sequential_display(decisions: pd.DataFrame) -> pd.DataFrame:
    """Each arm's stop under the sequential design, as strings (rows of sequential.csv)."""
    level = f"{100 * decisions['rci_level'].iloc[0]:g}%"
    return pd.DataFrame(
        {
            "family": decisions["family"],
            "arm": decisions["arm"],
            "reference": decisions["reference"],
            "stopped at look": decisions["look"],
            "seeds": decisions["n_seeds"],
            "decision": [f"{d} ({r})" if r else d for d, r in zip(decisions["decision"], decisions["direction"])],
            "Δ (pts)": decisions["mean_diff"].map(tables.points),
            f"{level} repeated CI": [
                f"[{tables.points(low)}, {tables.points(high)}]"
                for low, high in zip(decisions["rci_low"], decisions["rci_high"])
            ],
            "z": decisions["z"].map("{:+.2f}".format),
            "boundary": ["±∞" if np.isinf(b) else f"±{b:.2f}" for b in decisions["boundary_z"]],
            "Holm level": decisions["level"].map("{:.3g}".format),
        }
    )


def sequential_section(page: Page) -> str:
    """The sequential design, where each arm stopped, the runs it took against the fixed design; "" without one."""
    cfg, analysis, figure = page.cfg, page.analysis, page.figures.get("sequential", "")
    if not has_sequential(analysis):
        return ""
    decisions, design = analysis.sequential, cfg.design
    if design is None:
        facts = muted("The config has no sequential design (seeds: {initial, wave, max}), so its looks are not shown.")
    else:
        facts = html_facts(
            {
                "Looks": f"{len(design.looks)}, after {_join([str(n) for n in design.looks])} seeds "
                f"(seeds {design.start} to {design.start + design.max - 1}, in that order)",
                "Error spending": f"{SPENDING[design.spending].label} spending of "
                f"α = {design.alpha:g} over the looks; Holm's step-down over the arms of each family",
                "Equivalence": f"within ±{100 * design.margin:g} point(s): two one-sided sequential tests at α",
                "Intervals": f"{100 * design.confidence:g}% repeated confidence intervals: they cover the true "
                "difference at every look at once with that probability, so also at the look where an arm stopped",
            }
        )
    spent = runs_spent(decisions)
    used, fixed = int(spent["seeds run"].sum()), int(spent["fixed design"].sum())
    runs = (
        f"{used} runs (arm × seed) against {fixed} for the fixed design of {int(decisions['max_seeds'].max())} "
        f"seeds per arm: {fixed - used} saved ({100 * (fixed - used) / fixed:.0f}%)."
    )
    validity_note = (
        "The p-values and intervals of the comparisons table above are fixed-n: they ignore that seeds were added "
        "until a look decided, so under this design they are descriptive. The decisions and repeated confidence "
        "intervals here are valid under the design. Δ is the plain mean at the stop; an arm stopped early for a "
        "difference tends to overstate it. Holm level: α / (arms of the family not yet rejected) at the stop."
    )
    body = (
        facts
        + "<h3>Where each arm stopped</h3>"
        + html_table(sequential_display(decisions))
        + muted(validity_note)
        + "<h3>Runs spent</h3>"
        + f"<p>{esc(runs)}</p>"
        + html_table(spent)
        + figure
    )
    return section("sequential", "Sequential design", body)


def benchmarks_section(page: Page) -> str:
    """The heatmap of every arm's difference on every benchmark, and per family and measure (avg@k, pass@k, maj@k)
    the paper's table of benchmarks × methods."""
    shown = page.figures.get("benchmarks") or muted(
        "Per-benchmark comparisons were not computed (analysis.per_benchmark is off)."
    )
    table = page.analysis.per_benchmark
    for family, measure, frame in tables.per_benchmark_sections(table):
        shown += details(
            f"{family}: {measure} per benchmark",
            html_table(frame)
            + muted(tables.per_benchmark_caption(table, family, measure, page.analysis.settings.alpha)),
        )
    return section("benchmarks", "Per-benchmark view", shown)


def distributions_section(page: Page) -> str:
    """Per family: the performance profiles of its arms, and the paired probability of improvement."""
    analysis, profile_figures = page.analysis, page.figures_of_families("profile")
    parts = []
    for family, group in analysis.probability_of_improvement.groupby("family", sort=False):
        parts.append(
            f"<h3>{esc(family)}</h3>{profile_figures[family]}"
            + html_table(tables.improvement_display(group).drop(columns="family"))
        )
    return section(
        "distributions",
        "Score distributions",
        "".join(parts)
        + muted(
            tables.UNPAIRED_IMPROVEMENT_NOTE if tables.is_unpaired(analysis.comparisons) else tables.IMPROVEMENT_NOTE
        ),
    )


def base_crossing(rows: pd.DataFrame, confidence: float) -> str:
    """Whether and where one arm's pass@k curve falls below the base policy's (rows of pass_at_k_vs_base.csv), and
    how its intervals hold the base's own sampling noise."""
    rows = rows.sort_values("k")
    arm, below = rows["arm"].iloc[0], rows[rows["mean_diff"] < 0]
    methods = "; ".join(dict.fromkeys(rows["method"].astype(str)))
    how = f" Intervals: {methods}." if methods else ""
    if below.empty:
        return f"{arm} stays above the base policy at every k ({_join(map(str, rows['k']))}).{how}"
    first = below.iloc[0]
    sure = rows[rows["ci_high"] < 0]
    where = (
        f"; its {100 * confidence:g}% interval lies below 0 at k = {_join(map(str, sure['k']))}"
        if len(sure)
        else "; no interval lies wholly below 0"
    )
    return (
        f"{arm} falls below the base policy from k = {int(first.k)}: Δ {tables.points(first.mean_diff)} points "
        f"{tables.interval_text(first.ci_low, first.ci_high, tables.points)}{where}.{how}"
    )


def training_section(page: Page) -> str:
    """The training curves of every run with step logs."""
    return section("training", "Training dynamics", page.figures.get("training") or muted(NO_TRAINING_LOGS))


def curves_section(page: Page) -> str:
    """Learning curves: each comparison's verdict over training, the forecasts' backtest and the figures; "" without
    the curve tables (``armlab report --curves``)."""
    curves = page.curves
    if curves is None:
        return ""
    said = "".join(f"<li>{esc(f'{row.family}: {row.verdict}')}</li>" for row in curves.verdicts.itertuples())
    decided = curves.forecasts[curves.forecasts["fraction"] < 1.0]
    forecasts = decided[["family", "arm", "fraction", "n_seeds", "forecast_diff", "ci_low", "ci_high", "verdict"]]
    where = "every evaluated step" + (
        " and at equal compute" if curves.compute_band is not None else " (no compute ledger: not at equal compute)"
    )
    body = (
        f"<p>Paired over matched seeds at {where}, with bands and p-values that hold over all steps and arms at once; "
        f"forecasts from saturating fits of the first part of training (docs/statistics.md §14).</p><ul>{said}</ul>"
        + "".join(page.figures.get(name, "") for name in ("curve-differences", "equal-compute", "forecasts"))
        + "<h3>Forecasts of the final difference</h3>"
        + html_table(forecasts.round(4))
        + "<h3>Backtest: forecasts against the final verdicts</h3>"
        + html_table(curves.backtest.round(3))
    )
    return section("curves", "Learning curves", body)


def rankings_section(page: Page) -> str:
    """The ranking plot, the order of arms under each summary, and the rank correlations between summaries."""
    analysis = page.analysis
    shown = analysis.sensitivity.assign(
        **{c: analysis.sensitivity[c].map(tables.correlation) for c in ("spearman", "kendall")}
    )
    sensitivity = html_table(shown) if len(shown) else muted("No ranking set has three or more arms.")
    return section(
        "rankings",
        "Ranking sensitivity",
        page.figures.get("rankings", "")
        + html_table(tables.ranking_orders(analysis.rankings))
        + muted(tables.ranking_note(tables.is_unpaired(analysis.comparisons)))
        + sensitivity,
    )


def sampling_section(page: Page) -> str:
    """pass@k against the base policy, the variance components, and whether to buy seeds or samples."""
    analysis = page.analysis
    pass_figures = {name: html for name, html in page.figures.items() if name.startswith("pass-at-k-")}
    body = ""
    vs_base = analysis.pass_at_k_vs_base
    if len(vs_base):
        body += "<h3>pass@k against the base policy</h3>" + html_list(
            base_crossing(rows, analysis.settings.confidence) for _, rows in vs_base.groupby("arm", sort=False)
        )
    body += "".join(pass_figures.values())
    components = analysis.variance_components
    if len(components):
        shares = {f"{name} (%)": (100 * components[f"share_{name}"]).round(1) for name in sampled.COMPONENTS}
        shown = components[["family", "arm", "reference", "measure", "n_seeds", "samples", "sampling_method"]].assign(
            **{
                "Δ (points)": components["mean_diff"].map(tables.points),
                "se (points)": (100 * components["se"]).round(2),
            },
            **shares,
        )
        body += (
            "<h3>Where the uncertainty comes from</h3>"
            + muted(
                "Share of the variance of each mean paired difference from training seeds (seed effect and "
                "seed × item interaction), from the finite item set, and from sampling k answers per item; "
                "method of moments (analysis/stats/sampling.py) on the per-item counts, with the two arms' answers "
                "paired by sample where the evaluations kept their verdicts (sampling_method 'paired by sample': "
                "var(y_arm,j − y_ref,j)/k, unbiased whatever the arms' answers share), else as if the arms' "
                "answers were independent. Sampling is blank where it cannot be separated from training (one "
                "answer per item). " + sampling_streams_sentence(components)
            )
            + html_table(shown)
        )
        negative = [
            f"{r.arm} vs {r.reference} ({name})"
            for r in components.itertuples()
            for name in ("training", "items")
            if str(getattr(r, f"{name}_negative")) == "True"
        ]
        if negative:
            body += muted(
                "Estimated below 0 by chance (the estimates are not truncated, so they stay unbiased), counted as "
                f"0 in the shares and the standard error: {_join(negative)}."
            )
    advice = analysis.allocation
    if len(advice):
        lines = []
        for _, rows in advice.groupby(["family", "arm"], sort=False):
            seed, more = rows.set_index("option").loc["seed"], rows.set_index("option").loc["samples"]
            buy = "one more seed" if seed.advice == "seed" else "twice the samples per item"
            samples = (
                f"twice the samples ({more.minutes:.1f} job-min) → {100 * more.se_after:.2f}"
                if pd.notna(more.se_after)
                else "twice the samples: no estimate (one answer per item, or no sampling)"
            )
            lines.append(
                f"{seed.arm} vs {seed.reference}: se {100 * seed.se:.2f} points; one more seed "
                f"({seed.minutes:.1f} job-min) → {100 * seed.se_after:.2f}; {samples}. Per job-minute, buy {buy}."
            )
        body += "<h3>What to buy next</h3>" + html_list(lines)
    return section("sampling", "Sampled evaluation", body or muted("Evaluated with one answer per item."))


def numerics_section(page: Page) -> str:
    """The numerics controls: what numerics alone did to a difference, beside the other components of the variance,
    and the verdicts that lie within it (armlab.analysis.screens.numerics_noise); "" without controls."""
    analysis = page.analysis
    comparisons = figures.first_method(analysis.comparisons)
    controls = comparisons[comparisons["numerics_control"].astype(bool)]
    if not len(controls):
        return ""
    declared = {
        m["arm"]: m.get("config", {}).get("arms", {}).get(m["arm"], {}).get("numerics")
        for m in (page.runs.manifests if page.runs else [])
    }
    primary = controls[controls["stage"] == "primary"]
    components = analysis.variance_components.set_index(["family", "arm"])
    shown = pd.DataFrame(
        {
            "control": primary["arm"],
            "of": primary["reference"],
            "numerics": [
                ", ".join(f"{k} {v}" for k, v in (declared.get(arm) or {}).items()) or "—" for arm in primary["arm"]
            ],
            "measure": primary["measure"],
            "Δ (points)": primary["mean_diff"].map(tables.points),
            "numerics se (points)": [_se(components, r.family, r.arm, "var_numerics") for r in primary.itertuples()],
        }
    )
    body = muted(
        "Each control is its reference run again at the same seeds with the same random streams under other numerics "
        "only (kernels, threads, batch size, engine), so its difference is what numerics alone do. Numerics se: the "
        "standard error numerics alone put on a mean difference at these seeds (mean_s d² less the sampling part, over "
        "n; docs/statistics.md §16)."
    ) + html_table(shown)
    treated = analysis.variance_components[~analysis.variance_components["arm"].isin(controls["arm"])]
    if len(treated) and treated["var_numerics"].notna().any():
        beside = treated[["family", "arm", "reference", "measure"]].assign(
            **{
                f"{name} (points)": [_se(components, r.family, r.arm, f"var_{name}") for r in treated.itertuples()]
                for name in (*sampled.COMPONENTS, "numerics")
            }
        )
        body += (
            "<h3>Beside the other sources of noise</h3>"
            + muted(
                "Standard error of each mean paired difference from each source, in points; numerics is a part of the "
                "training seeds' (every run draws its numerics), from the controls' mean."
            )
            + html_table(beside)
        )
    flagged = comparisons[tables.not_robust(comparisons)]
    lines = [
        f"{r.family}: {r.arm} vs {r.reference} on {r.measure}, {verdict}{tables.numerics_flag(r)}"
        for r, verdict in zip(flagged.itertuples(), tables.verdicts(flagged))
    ]
    body += "<h3>Verdicts not robust to numerics</h3>" + (
        html_list(lines)
        if lines
        else muted(
            "None: every better, worse or equivalent verdict has more room than the controls' spread on its measure."
        )
    )
    return section("numerics", "Numerics", body)


def _se(components: pd.DataFrame, family: str, arm: str, column: str) -> str:
    """A component's standard error in points (a negative estimate as 0), "—" where it is not there."""
    if (family, arm) not in components.index or pd.isna(components.loc[(family, arm), column]):
        return "—"
    return f"{100 * max(float(components.loc[(family, arm), column]), 0.0) ** 0.5:.2f}"


def sampling_streams_sentence(components: pd.DataFrame) -> str:
    """How the compared arms' evaluations drew their answers, in the words of their manifests (the engine decides
    whether arms of a seed share each answer's random draw, which correlates their sampling errors)."""
    said = [how for how in dict.fromkeys(components["sampling_streams"]) if how]
    if not said:
        return "The evaluations' manifests do not say how they drew their answers (results from elsewhere)."
    return "How the evaluations drew their answers, as their manifests record it: " + "; ".join(said) + "."


def grader_section(page: Page) -> str:
    """Robust to the grader? Each summary's verdict under every verifier the stored answers were re-graded by
    (``armlab rescore``), and every flip of any cell named."""
    table = page.analysis.verifier_sensitivity
    if table is None or not len(table):
        return ""
    verifiers = list(dict.fromkeys(table["verifier"]))
    flips = verifier_sensitivity.flip_lines(table)
    body = muted(
        f"The answers the evaluations stored, graded again by {_join(verifiers)} (nothing generated again; "
        "evals/verifiers.py names each verifier's rule), and the same analysis rerun on each: a flip is a cell "
        "(family, arm, measure) whose verdict differs from the configured grading's. Unparsed: the share of the "
        "re-graded answers the verifier read nothing from, arm / reference; a verdict that changes with it is "
        "about the answers' format as much as their correctness."
    )
    body += (
        f"<h3>Flips ({len(flips)})</h3>" + html_list(flips)
        if flips
        else f"<p>No verdict changes under any of these {len(verifiers)} verifiers ({len(table)} cells).</p>"
    )
    rows = table[table["level"] == "summary"]
    shown = pd.DataFrame(
        {
            "verifier": rows["verifier"],
            "family": rows["family"],
            "comparison": rows["arm"] + " vs " + rows["reference"],
            "measure": rows["measure"],
            "Δ (points)": rows["mean_diff"].map(tables.points),
            "interval at Holm's level": [tables.decision_text(r) for r in rows.itertuples()],
            "verdict": rows["verdict"],
            "configured": rows["verdict"].where(~rows["flip"].astype(bool), rows["configured_verdict"] + " (flip)"),
            "configured Δ": rows["configured_mean_diff"].map(tables.points),
            "unparsed (%)": [
                f"{_percent(r.unparsed_arm)} / {_percent(r.unparsed_reference)}" for r in rows.itertuples()
            ],
        }
    )
    body += "<h3>The summaries under each verifier</h3>" + html_table(shown)
    return section("grader", "Robust to the grader?", body)


def contamination_section(page: Page) -> str:
    """Contamination screen: each arm's gain over its reference on a benchmark's items beside its gain on the
    benchmark's procedural twin (contamination.csv), every flagged row and every planted leak named."""
    table = page.analysis.contamination
    if not len(table):
        return ""
    leaks = table.drop_duplicates("arm").dropna(subset=["planted_leak"])
    body = muted(
        "Every benchmark with a procedural twin (fresh items of the same kind: its generator with another seed, "
        "another reasoning-gym draw, or a twin file) was evaluated beside it in the same jobs. A gain over the "
        "reference on the benchmark's items that does not carry over to its twin's is the signature of leakage "
        f"(ConStat, arXiv 2405.16281). Seed by seed, d = (gain on the benchmark) − (gain on its twin), the "
        f"{tables.test_name(page.analysis.comparisons)}, Holm within each family (the pooled row first, the "
        "benchmarks gatekept behind it); flagged where it rejects with the benchmark's gain above the twin's. "
        "analysis/contamination.csv."
    )
    if len(leaks):
        named = ", ".join(f"{r.arm} ({100 * r.planted_leak:g}% of each benchmark's items)" for r in leaks.itertuples())
        body += f"<p>Planted leaks (controls, arms.&lt;arm&gt;.leak: evaluation items it trains on): {esc(named)}.</p>"
    lines = contamination.flagged_lines(table)
    body += f"<h3>Flagged ({len(lines)})</h3>" + html_list(lines) if lines else "<p>No row is flagged.</p>"
    rows = table[table["level"] == "summary"]
    shown = pd.DataFrame(
        {
            "family": rows["family"],
            "comparison": rows["arm"] + " vs " + rows["reference"],
            "pooled over": rows["benchmark"],
            "gain on its items": rows["gain"].map(tables.points),
            "gain on the twins": rows["twin_gain"].map(tables.points),
            "difference": rows["mean_diff"].map(tables.points),
            "interval at Holm's level": [tables.decision_text(r) for r in rows.itertuples()],
            "Holm p": rows["p_holm"].map("{:.3g}".format),
            "flagged": rows["flagged"].map({True: "yes", False: "no"}),
        }
    )
    body += "<h3>Pooled over the benchmarks with a twin (points)</h3>" + html_table(shown)
    return section("contamination", "Contamination screen", body)


def _percent(share: float) -> str:
    return "—" if np.isnan(share) else f"{100 * share:.0f}"


def power_section(page: Page) -> str:
    """The power plot, every note of the analysis, and the dropped runs."""
    analysis = page.analysis
    body = page.figures["power"] + "<h3>Warnings and notes</h3>" + html_list(analysis.manifest.get("notes", []))
    if len(analysis.dropped):
        body += "<h3>Dropped runs</h3>" + html_table(analysis.dropped)
    return section("power", "Power and warnings", body)


@dataclass(frozen=True)
class Section:
    """One section of the report: the text of its link, and its HTML from the page ("" hides it and its link)."""

    nav: str
    render: Callable[[Page], str]


# the report's sections in their order: a new section is one function of a Page and one entry here
SECTIONS: Registry[Section] = Registry(
    "report section",
    {
        "card": Section("Report card", report_card_section),
        "run": Section("What was run", what_was_run),
        "verdicts": Section("Verdicts", verdict_section),
        "replication": Section("Replication", replication_section),
        "comparisons": Section("Comparisons", comparison_section),
        "sequential": Section("Sequential", sequential_section),
        "benchmarks": Section("Benchmarks", benchmarks_section),
        "distributions": Section("Distributions", distributions_section),
        "training": Section("Training", training_section),
        "checkpoints": Section("Checkpoints", checkpoints_section),
        "curves": Section("Curves", curves_section),
        "rankings": Section("Rankings", rankings_section),
        "sampling": Section("Sampling", sampling_section),
        "numerics": Section("Numerics", numerics_section),
        "grader": Section("Robust to the grader?", grader_section),
        "contamination": Section("Contamination", contamination_section),
        "power": Section("Power", power_section),
    },
)
