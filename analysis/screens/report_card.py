"""The report card: one experiment graded against the minimum standard for an RLVR claim (``report_card.csv``).

What a credible claim needs, after "A Sober Look at Progress in LM Reasoning" (arXiv 2504.07086) and the position
paper on RLVR evaluation (arXiv 2509.21882): enough seeds for the effect claimed, the baseline evaluated under the
identical protocol, budget-matched comparisons, answer-format failures tracked, nothing chosen on the test items,
grader robustness and a contamination screen. Each item of :data:`ITEMS` reads what the experiment's files say
and gives one :class:`Grade`: ``pass``, ``fail``, ``not applicable``, ``not available`` (an input is missing:
never a pass) or ``not run`` (a screen armlab does not run yet), with the number behind it and its reason.

The inputs (:class:`Inputs`) are the analysis's own tables (the contamination screen's among them) and, for armlab's
experiments, the folder the jobs wrote (:class:`Jobs`, :func:`read_jobs`): every evaluation's and run's manifest,
every run's compute ledger, the equal-compute comparison of ``armlab curves`` and the grader-sensitivity screen's
table when it is there. A family marked ``control: true`` in the config is a planted control: its answer is known,
so its compute and answer format are not graded as a claim's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from armlab import layout
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.stats import multiplicity, resampling
from armlab.contract import BASE_ARM, LEDGER_FILE
from armlab.files import BadFile, read_json
from armlab.registry import Registry

if TYPE_CHECKING:
    from armlab.analysis.config import Comparison, Config

PASS, FAIL, NOT_APPLICABLE, NOT_AVAILABLE, NOT_RUN = "pass", "fail", "not applicable", "not available", "not run"
COLUMNS = ["item", "check", "status", "value", "reason"]
COMPUTE_TOLERANCE = 0.05  # arms whose mean final compute is within 5% of their reference's are compute-matched
SAMPLING_FIELDS = ("samples", "temperature", "top_p", "max_gen_toks")  # an evaluation manifest's ``sampling``
BENCHMARK_FIELDS = ("samples", "prompt_template", "verifier", "items")  # its ``protocol`` per benchmark
SENSITIVITY = "verifier_sensitivity.csv"  # the grader-sensitivity screen's table: a later change writes it


@dataclass(frozen=True)
class Grade:
    """One item's grade: its status, the number behind it (as text) and why."""

    status: str
    value: str
    reason: str


@dataclass(frozen=True)
class Jobs:
    """What the card reads from an experiment's results folder (``source``); an empty field: none there."""

    source: str
    evaluations: Mapping[tuple[str, int], dict] = field(default_factory=dict)  # (arm, seed) -> evals manifest
    runs: Mapping[tuple[str, int], dict] = field(default_factory=dict)  # (arm, seed) -> run manifest
    compute: pd.DataFrame | None = None  # arm, seed, value: each run's compute at its last step (its ledger)
    compute_column: str = "cum_flops"
    compute_band: pd.DataFrame | None = None  # curves_summary/curve_compute_band.csv (armlab curves)
    verifier_sensitivity: pd.DataFrame | None = None


@dataclass(frozen=True)
class Inputs:
    """Everything the card grades: the config, the validated scores, the analysis's tables (``comparisons`` None
    where the comparisons could not run, ``unparsed`` None without the answers' statuses, ``contamination`` None
    without procedural twins), and the jobs' folder (None for results from elsewhere)."""

    config: Config
    scores: pd.DataFrame
    comparisons: pd.DataFrame | None = None
    unparsed: pd.DataFrame | None = None
    dropped: pd.DataFrame | None = None
    jobs: Jobs | None = None
    contamination: pd.DataFrame | None = None

    def claims(self) -> list[tuple[Comparison, str]]:
        """(family, arm) of every comparison that makes a claim: not a planted control's."""
        return [(c, arm) for c in self.config.comparisons if not c.control for arm in c.arms]

    def controls(self) -> list[str]:
        return [f"{arm} ({c.family})" for c in self.config.comparisons if c.control for arm in c.arms]


# ----------------------------------------------------------------------------- reading the jobs' folder


def _manifests(results_dir: Path, stage: str) -> dict[tuple[str, int], dict]:
    found = {}
    for path in layout.job_files(results_dir, stage, "manifest.json"):
        arm, seed = layout.run_of(path.parent)
        try:
            manifest = read_json(path, "manifest")
        except BadFile as exc:
            raise AnalysisInputError(f"{path}: {str(exc).splitlines()[0]}") from None
        if not isinstance(manifest, dict):
            raise AnalysisInputError(f"{path}: expected a manifest object")
        found[(arm, int(seed))] = manifest
    return found


def _final_compute(results_dir: Path, column: str) -> pd.DataFrame | None:
    rows = []
    for path in layout.job_files(results_dir, "runs", LEDGER_FILE):
        arm, seed = layout.run_of(path.parent)
        try:
            ledger = pd.read_parquet(path)
        except (OSError, ValueError) as exc:
            raise AnalysisInputError(f"{path}: not a parquet compute ledger ({str(exc).splitlines()[0]})") from None
        if column not in ledger.columns or not len(ledger):
            raise AnalysisInputError(f"{path}: expected a column {column!r} with one row per step")
        rows.append({"arm": arm, "seed": int(seed), "value": float(ledger[column].iloc[-1])})
    return pd.DataFrame(rows, columns=["arm", "seed", "value"]) if rows else None


def _optional_csv(path: Path) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    try:
        return pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise AnalysisInputError(f"{path}: not a table ({str(exc).splitlines()[0]})") from None


def read_jobs(results_dir: Path | str, compute_column: str | None) -> Jobs:
    """The manifests, compute ledgers and screens of an experiment's results folder ``results_dir``."""
    results_dir = Path(results_dir)
    column = compute_column or "cum_flops"
    return Jobs(
        source=str(results_dir),
        evaluations=_manifests(results_dir, "evals"),
        runs=_manifests(results_dir, "runs"),
        compute=_final_compute(results_dir, column),
        compute_column=column,
        compute_band=_optional_csv(results_dir / "curves_summary" / "curve_compute_band.csv"),
        verifier_sensitivity=_optional_csv(results_dir / "analysis" / SENSITIVITY),
    )


# ----------------------------------------------------------------------------- the items


def _join(parts: Iterable[str]) -> str:
    return "; ".join(parts)


def _primary_rows(comparisons: pd.DataFrame) -> pd.DataFrame:
    """One row per (family, arm): the primary summary's first interval method."""
    rows = comparisons[comparisons["level"] == "summary"]
    rows = rows[rows["measure"] == rows["measure"].iloc[0]]
    return rows.drop_duplicates(["family", "arm"])


def _scored(inputs: Inputs, manifests: Mapping[tuple[str, int], dict], arms: Iterable[str]) -> dict:
    """The manifests of ``arms``' runs that the scores hold (a folder left from an earlier design is not graded)."""
    runs = set(inputs.scores[["arm", "seed"]].drop_duplicates().itertuples(index=False, name=None))
    return {(arm, seed): m for (arm, seed), m in manifests.items() if arm in arms and (arm, seed) in runs}


def seeds(inputs: Inputs) -> Grade:
    """Seeds at least those needed to detect the configured effect (``analysis.power_effect``, power
    ``analysis.power``, at the observed spread: ``seeds_needed``), or else a smallest attainable Holm p <= alpha."""
    settings = inputs.config.settings
    effect = f"{100 * settings.power_effect:g} point(s) with power {settings.power:g}"
    short, fine = [], []
    if inputs.comparisons is not None and len(inputs.comparisons):
        for r in _primary_rows(inputs.comparisons).itertuples():
            needed = float(r.seeds_needed) if pd.notna(r.seeds_needed) else None
            if r.min_attainable_p > settings.alpha:
                short.append(f"{r.arm}: {r.n_seeds} seeds can reach Holm p {r.min_attainable_p:.3g} at best > α")
            elif needed is not None and r.n_seeds < needed:
                short.append(f"{r.arm}: {r.n_seeds} seeds < {needed:.0f} needed for {effect}")
            else:
                fine.append(f"{r.arm} {r.n_seeds} ≥ {needed:.0f}" if needed is not None else f"{r.arm} {r.n_seeds}")
    else:  # the comparisons could not run (one seed per arm): the seeds the scores hold
        runs = inputs.scores[["arm", "seed"]].drop_duplicates()
        for comp in inputs.config.comparisons:
            reference = set(runs.loc[runs["arm"] == comp.reference, "seed"])
            for arm in comp.arms:
                n = len(reference & set(runs.loc[runs["arm"] == arm, "seed"]))
                best = float(multiplicity.min_attainable_p(resampling.min_pvalue(n, 0), len(comp.arms)))
                line = f"{arm}: {n} matched seed(s) can reach Holm p {best:.3g} at best"
                (short if n < 2 or best > settings.alpha else fine).append(line)
    if short:
        return Grade(FAIL, f"{len(short)} arm(s) short", _join(short))
    return Grade(PASS, _join(fine), f"every arm has the seeds to detect {effect} at α = {settings.alpha:g}")


def _evaluation_fields(manifest: dict) -> dict[str, Any]:
    """The protocol fields one evaluation manifest records; a missing one is absent from the dict."""
    found: dict[str, Any] = {}
    sampling = manifest.get("sampling")
    for name in SAMPLING_FIELDS:
        if isinstance(sampling, dict) and name in sampling:
            found[name] = sampling[name]
    protocol = manifest.get("protocol")
    for benchmark, spec in (protocol if isinstance(protocol, dict) else {}).items():
        for name in BENCHMARK_FIELDS:
            if isinstance(spec, dict) and name in spec:
                found[f"{benchmark} {name}"] = spec[name]
    return found


def _differences(values: Mapping[tuple[str, int], Mapping[str, Any]], fields: Iterable[str]) -> list[str]:
    """Each field whose value differs between evaluations, with each arm's values."""
    out = []
    for name in fields:
        by_arm: dict[str, set] = {}
        for (arm, _), record in values.items():
            shown = str(record[name]).replace("\n", "\\n") if name in record else "not recorded"  # one line each
            by_arm.setdefault(arm, set()).add(shown)
        distinct = set().union(*by_arm.values())
        if len(distinct - {"not recorded"}) > 1:
            shown = ", ".join(f"{arm} {'/'.join(sorted(v))}" for arm, v in by_arm.items())
            out.append(f"{name}: {shown}")
    return out


def protocol(inputs: Inputs) -> Grade:
    """The compared arms, their references and the base policy evaluated under one protocol: answers per item,
    temperature, top_p, max new tokens, and per benchmark the prompt template, the verifier and the items file's
    sha256 (each evaluation's manifest), and the answers per item the scores hold."""
    arms = [*inputs.config.compared_arms, BASE_ARM]
    scores = inputs.scores[inputs.scores["arm"].isin(arms)]
    samples = scores.groupby(["arm", "seed", "benchmark"], observed=True)["n_samples"].max()
    counted = {
        (arm, int(seed)): {f"{b} answers per item (scores)": int(n) for (_, _, b), n in group.items()}
        for (arm, seed), group in samples.groupby(level=["arm", "seed"], observed=True)
    }
    fields = sorted({name for record in counted.values() for name in record})
    base = "" if BASE_ARM in set(scores["arm"]) else " (no base policy among the scores)"
    evaluations = _scored(inputs, inputs.jobs.evaluations if inputs.jobs else {}, arms)
    if not evaluations:
        differ = _differences(counted, fields)
        if differ:
            return Grade(FAIL, f"{len(differ)} field(s) differ", _join(differ) + base)
        return Grade(
            NOT_AVAILABLE,
            "answers per item only",
            "no evaluation manifests (results from elsewhere): temperature, top_p, max new tokens, prompt template, "
            "verifier and benchmark files are not recorded" + base,
        )
    records = {run: {**counted.get(run, {}), **_evaluation_fields(m)} for run, m in evaluations.items()}
    recorded = sorted({name for record in records.values() for name in record})
    expected = [*SAMPLING_FIELDS, *(f"{b} {name}" for b in scores["benchmark"].unique() for name in BENCHMARK_FIELDS)]
    differ = _differences(records, recorded)
    missing = sorted(
        {f"{name} ({arm} seed {seed})" for (arm, seed), r in records.items() for name in expected if name not in r}
    )
    unevaluated = sorted(set(counted) - set(records))
    if differ:
        return Grade(FAIL, f"{len(differ)} field(s) differ", _join(differ) + base)
    if missing or unevaluated:
        lacking = [f"not recorded: {', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''}"] if missing else []
        lacking += [f"no evaluation manifest: {', '.join(f'{a} seed {s}' for a, s in unevaluated[:4])}"] * bool(
            unevaluated
        )
        return Grade(NOT_AVAILABLE, f"{len(missing) + len(unevaluated)} missing", _join(lacking) + base)
    return Grade(
        PASS,
        f"{len(recorded)} fields identical over {len(records)} evaluations",
        f"{', '.join(sorted({a for a, _ in records}))}: the same answers per item, sampling, prompt templates, "
        f"verifiers and items files" + base,
    )


def compute(inputs: Inputs) -> Grade:
    """Each claim's arm spent the compute of its reference (final ``analysis.curve_compute`` of the runs' ledgers,
    within :data:`COMPUTE_TOLERANCE`), or the two were compared at equal compute (``armlab curves``)."""
    claims, controls = inputs.claims(), inputs.controls()
    skipped = f"; planted control(s) not graded: {', '.join(controls)}" if controls else ""
    if not claims:
        return Grade(NOT_APPLICABLE, "", "every family is a planted control (comparisons[].control)")
    jobs = inputs.jobs
    if jobs is None or jobs.compute is None:
        where = "results from elsewhere" if jobs is None else jobs.source
        return Grade(
            NOT_AVAILABLE,
            "",
            f"no compute ledger (runs/<arm>/seed-<seed>/{LEDGER_FILE}) in {where}: the command backend and multi-"
            f"process TRL runs write none{skipped}",
        )
    spent = jobs.compute.groupby("arm")["value"].mean()
    band = jobs.compute_band
    lines, failed, ratios = [], [], []
    for comp, arm in claims:
        lacking = [a for a in (arm, comp.reference) if a not in spent.index]
        if lacking:
            return Grade(NOT_AVAILABLE, "", f"no compute ledger for {', '.join(lacking)} in {jobs.source}{skipped}")
        ratio = spent[arm] / spent[comp.reference] if spent[comp.reference] > 0 else np.inf
        ratios.append(ratio)
        text = f"{arm} {ratio:.3f}× {comp.reference}'s {jobs.compute_column}"
        if abs(ratio - 1) <= COMPUTE_TOLERANCE:
            lines.append(text)
        elif band is not None and ((band["family"] == comp.family) & (band["arm"] == arm)).any():
            lines.append(f"{text}, compared at equal compute (curves_summary/curve_compute_band.csv)")
        else:
            failed.append(f"{text}, and not compared at equal compute (armlab curves with a ledger)")
    worst = max(ratios, key=lambda r: abs(np.log(r)) if 0 < r < np.inf else np.inf)
    if failed:
        return Grade(FAIL, f"{worst:.3f}×", _join(failed) + skipped)
    return Grade(
        PASS, f"{worst:.3f}× at most", _join(lines) + f" (matched within ±{100 * COMPUTE_TOLERANCE:g}%)" + skipped
    )


def answer_format(inputs: Inputs) -> Grade:
    """Each claim's arm has the share of unparsed answers of its reference: the paired comparison of
    ``unparsed.csv`` (:mod:`armlab.analysis.samples.unparsed`) finds no difference; else its accuracy difference may be
    answer format, not reasoning (attempt inflation)."""
    claims, controls = inputs.claims(), inputs.controls()
    skipped = f"; planted control(s) not graded: {', '.join(controls)}" if controls else ""
    if not claims:
        return Grade(NOT_APPLICABLE, "", "every family is a planted control (comparisons[].control)")
    table = inputs.unparsed
    if table is None or not len(table):
        return Grade(
            NOT_AVAILABLE,
            "",
            "no per-answer statuses (evals/<arm>/seed-<seed>/answers.parquet): results from elsewhere, tasks of "
            "eval.lm_eval_tasks, or `armlab analyze` without --jobs" + skipped,
        )
    summary = table[table["level"] == "summary"].set_index(["family", "arm"])
    moved: list[str] = []
    shown: list[str] = []
    for comp, arm in claims:
        if (comp.family, arm) not in summary.index:
            return Grade(NOT_AVAILABLE, "", f"no per-answer statuses for {arm} or {comp.reference}" + skipped)
        r = summary.loc[(comp.family, arm)]
        text = (
            f"{arm} {100 * r.arm_rate:.2f}% vs {comp.reference} {100 * r.reference_rate:.2f}% unparsed, "
            f"Δ {100 * r.mean_diff:+.2f} points [{100 * r.decision_low:+.2f}, {100 * r.decision_high:+.2f}], "
            f"Holm p {r.p_holm:.3g}"
        )
        (moved if bool(r.differs) else shown).append(text)
    largest = summary.loc[[(c.family, a) for c, a in claims], "mean_diff"].abs().max()
    if moved:
        return Grade(FAIL, f"{len(moved)} arm(s) moved", _join(moved) + skipped)
    return Grade(PASS, f"largest |Δ| {100 * largest:.2f} points", _join(shown) + skipped)


CHECKPOINT_STEP = re.compile(r"step-0*(\d+)")


def _run_steps(manifest: dict) -> int | None:
    recipe = manifest.get("recipe")
    steps = recipe.get("steps") if isinstance(recipe, dict) else None
    return steps if isinstance(steps, int) and not isinstance(steps, bool) else None


def selection(inputs: Inputs) -> Grade:
    """Nothing chosen on the test items: every evaluated checkpoint is its run's last (a step-N checkpoint before
    the last step was picked), every configured seed is analysed (a seed left out may be one chosen on its score);
    a temperature chosen per arm shows in the protocol item."""
    compared = inputs.config.compared_arms
    flagged = []
    present = inputs.scores[["arm", "seed"]].drop_duplicates()
    if inputs.config.seeds:
        for arm in compared:
            missing = sorted(set(inputs.config.seeds) - set(present.loc[present["arm"] == arm, "seed"]))
            if missing:
                flagged.append(f"{arm}: seed(s) {', '.join(map(str, missing))} of the config not analysed")
    if inputs.dropped is not None and len(inputs.dropped):
        flagged.append(f"{len(inputs.dropped)} run(s) dropped from the analysis (dropped.csv)")
    jobs = inputs.jobs
    evaluations = _scored(inputs, jobs.evaluations if jobs else {}, compared)
    for (arm, seed), manifest in sorted(evaluations.items()):
        match = CHECKPOINT_STEP.search(str(manifest.get("checkpoint", "")))
        steps = _run_steps((jobs.runs if jobs else {}).get((arm, seed), {}))
        if match and (steps is None or int(match.group(1)) < steps):
            of = f" of {steps}" if steps is not None else ""
            flagged.append(f"{arm} seed {seed}: evaluated checkpoint step {int(match.group(1))}{of}, not its last")
    if flagged:
        return Grade(FAIL, f"{len(flagged)} flag(s)", _join(flagged))
    if not evaluations:
        return Grade(
            NOT_AVAILABLE,
            "",
            "no evaluation manifests (results from elsewhere): which checkpoint each run evaluated is not recorded",
        )
    return Grade(
        PASS,
        f"{len(evaluations)} evaluations of last checkpoints",
        "every evaluation is of its run's last checkpoint and every configured seed is analysed; a temperature "
        "chosen per arm shows in the protocol item",
    )


def _screen(table: pd.DataFrame | None, name: str, flag: str, what: str, feature: str) -> Grade:
    if table is None:
        return Grade(NOT_RUN, "", f"not run: {feature} (analysis/{name} not found)")
    if flag not in table.columns:
        return Grade(NOT_AVAILABLE, "", f"analysis/{name}: expected a column {flag!r}")
    hits = table[table[flag].astype(str).str.lower().isin(["true", "1"])]
    if len(hits):
        named = ", ".join(dict.fromkeys(f"{r.arm} ({r.family})" for r in hits.itertuples()))
        return Grade(FAIL, f"{len(hits)} of {len(table)} rows", f"{what}: {named}")
    return Grade(PASS, f"0 of {len(table)} rows", f"no {what.lower()} (analysis/{name})")


def grader_screen(table: pd.DataFrame | None) -> Grade:
    """No verdict changes under another reasonable verifier (``analysis/verifier_sensitivity.csv`` of ``armlab
    rescore``: a row per verifier, family, arm and measure, ``flip`` true where the verdict is not the configured
    verifier's)."""
    feature = "no analysis.verifiers configured (`armlab rescore RESULTS_DIR --verifier NAME` writes it)"
    return _screen(table, SENSITIVITY, "flip", "Verdicts that flip under another verifier", feature)


def grader(inputs: Inputs) -> Grade:
    """:func:`grader_screen` of the table beside the experiment's analysis, where one is there."""
    return grader_screen(inputs.jobs.verifier_sensitivity if inputs.jobs else None)


def contamination(inputs: Inputs) -> Grade:
    """No claim's arm gains more on a benchmark's items than on its procedural twin's (``contamination.csv`` of the
    analysis, :mod:`armlab.analysis.screens.contamination`: a row per family, arm and benchmark, ``flagged`` where the
    gain on the benchmark exceeds the twin's); the planted controls' rows are named, not graded (a planted leak must be
    flagged, an A/A arm must not)."""
    table = inputs.contamination
    if table is None or not len(table):
        return Grade(
            NOT_RUN,
            "",
            "no benchmark has a procedural twin (benchmarks.<name>.twin: true, eval.external.<name>.twin), or the "
            "runs are unpaired",
        )
    controls = {c.family for c in inputs.config.comparisons if c.control}
    hits = table[table["flagged"].astype(bool)]
    named = [f"{r.arm} ({r.family})" for r in hits.itertuples() if r.family not in controls]
    flagged = set(zip(hits["family"], hits["arm"]))
    shown = [
        f"{r.arm} ({r.family}{', planted leak' if pd.notna(r.planted_leak) else ''}) "
        + ("flagged" if (r.family, r.arm) in flagged else "not flagged")
        for r in table.drop_duplicates(["family", "arm"]).itertuples()
        if r.family in controls
    ]
    skipped = f"; planted control(s): {', '.join(shown)}" if shown else ""
    claims = table[~table["family"].isin(controls)]
    if not len(claims):
        return Grade(NOT_APPLICABLE, "", "every family is a planted control (comparisons[].control)" + skipped)
    if named:
        return Grade(
            FAIL,
            f"{len(named)} of {len(claims)} rows",
            "Gains that do not carry over to procedural twins: " + ", ".join(dict.fromkeys(named)) + skipped,
        )
    return Grade(PASS, f"0 of {len(claims)} rows", "every gain carries over to the procedural twins" + skipped)


@dataclass(frozen=True)
class Item:
    """One item of the card: what it checks, in a line, and the function that grades it."""

    check: str
    grade: Callable[[Inputs], Grade]
    # a screen that runs after the analysis (armlab rescore): its grade from the screen's table, which the report
    # reads again (:func:`with_screens`)
    screen: Callable[[pd.DataFrame | None], Grade] | None = None


# the card's items in their order: a new item is one function of the Inputs and one entry here
ITEMS: Registry[Item] = Registry(
    "report card item",
    {
        "seeds": Item("Seeds enough for the configured effect", seeds),
        "protocol": Item("Reference, arms and base evaluated under the identical protocol", protocol),
        "compute": Item("Compute matched, or compared at equal compute", compute),
        "answer_format": Item("Unparsed answers compared between arms (attempt inflation)", answer_format),
        "selection": Item("No checkpoint, seed or temperature chosen on the test items", selection),
        "grader": Item("Robust to the grader", grader, screen=grader_screen),
        "contamination": Item("Contamination screen", contamination),
    },
)


def with_screens(card: pd.DataFrame, **tables: pd.DataFrame | None) -> pd.DataFrame:
    """``card`` with each screen item named in ``tables`` graded again from its table (the item's ``screen``)."""
    card = card.copy()
    for item, table in tables.items():
        screen = ITEMS[item].screen
        if screen is None:
            raise KeyError(f"report card item {item!r} has no screen")
        found = screen(table)
        card.loc[card["item"] == item, ["status", "value", "reason"]] = [found.status, found.value, found.reason]
    return card


def grade(inputs: Inputs) -> pd.DataFrame:
    """Every item of :data:`ITEMS` graded: the rows of ``report_card.csv`` (:data:`COLUMNS`)."""
    rows = []
    for name, item in ITEMS.items():
        found = item.grade(inputs)
        rows.append({"item": name, "check": item.check, "status": found.status, "value": found.value,
                     "reason": found.reason})  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)
