"""What an experiment can decide, from its config alone: the plan printed before any seed is spent.

Per comparison family, with the configured seeds: the smallest Holm-adjusted p
any data could give its primary comparisons and its gatekept secondary cells
(:func:`armlab.analysis.stats.multiplicity.min_attainable_p` of the exact sign-flip test's
smallest p, the numbers the analysis reports as ``min_attainable_p``), the
fewest seeds with which a significant result is possible at all, whether the
equivalence test can ever conclude, and, given the sd of the paired
differences of the primary summary (``plan: {sd}`` or an earlier experiment's
scores), the minimum detectable effect and the seeds needed for
``analysis.power_effect`` at the level the analysis uses (alpha / k, the first
Holm step). The wall time of the runs comes from measured job times (the
manifests of an earlier experiment's runs and evaluations), per training step.

    armlab plan CONFIG [--seeds N] [--sd 0.012 | --sd-from SCORES] [--jobs RESULTS_DIR] [--cores 2]
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from armlab.analysis.config import Config, compared_measures
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.learning_curves.forecasts import MIN_POINTS, seen_through
from armlab.analysis.stats import multiplicity, resampling
from armlab.contract import PROBE
from armlab.spec import Plan, settings_of

if TYPE_CHECKING:
    from armlab.analysis.stats.sequential import Design

PLAN_KEYS = tuple(setting.name for setting in settings_of(Plan))  # armlab.spec.Plan: sd, effect
SEARCH_MAX_SEEDS = 64  # the fewest seeds that can reach alpha is looked for up to here


@dataclass(frozen=True)
class FamilyPlan:
    """One comparison family under a fixed number of seeds."""

    family: str
    arms: int  # k primary comparisons (one per arm against the reference)
    secondary: int | None  # m gatekept cells; None when the config names no benchmarks
    seeds: int
    min_p: float  # smallest Holm-adjusted p of a primary comparison, whatever the data
    min_p_secondary: float | None
    significance_from: int | None  # fewest seeds with min_p <= alpha; None beyond SEARCH_MAX_SEEDS
    equivalence_attainable: bool  # at the primary's first Holm step, alpha / k
    equivalence_attainable_secondary: bool | None  # at the secondary cells' first one behind the gate; None: unknown
    level: float  # the first Holm step, alpha / k: the level of the MDE and the seeds needed
    sd: float | None = None  # planned sd of the primary summary's paired differences (score units)
    effect: float | None = None  # the effect the seeds needed are for (score units)
    mde: float | None = None  # at ``seeds``, for ``sd``
    seeds_needed: float | None = None  # for ``effect`` at ``sd``


def plan_section(raw: dict, source: str) -> dict[str, float]:
    """The config's optional ``plan: {sd, effect}`` (score units, both positive); one-line errors."""
    section = raw.get("plan") or {}
    if not isinstance(section, dict):
        raise AnalysisInputError(f"{source}: plan: expected a mapping with sd and/or effect, got {section!r}")
    unknown = sorted(set(section) - set(PLAN_KEYS))
    if unknown:
        raise AnalysisInputError(f"{source}: plan: unknown key(s) {unknown}; known: {list(PLAN_KEYS)}")
    for key, value in section.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise AnalysisInputError(f"{source}: plan.{key}: expected a positive number (score units), got {value!r}")
    return {key: float(value) for key, value in section.items()}


def configured_seeds(raw: dict, config: Config) -> int | None:
    """Seeds per arm the config runs: its seed list, or a sequential design's maximum; None when unstated."""
    if config.design is not None:
        return config.design.max
    seeds = raw.get("seeds")
    return len(seeds) if isinstance(seeds, list) and seeds else None


def _design(config: Config) -> Design:
    """The config's sequential design, which the sequential plans need."""
    if config.design is None:
        raise AnalysisInputError(f"{config.source}: seeds: not a sequential design")
    return config.design


def _unpaired(config: Config) -> bool:
    return config.settings.pairing == "unpaired"


def _min_p(n: int, config: Config) -> float:
    """The smallest p of the deciding test: sign-flip on n seeds, or (unpaired) permutation of n runs per arm."""
    settings = config.settings
    other = n if _unpaired(config) else 0
    return float(
        resampling.min_pvalue(n, other, max_exact=settings.exact_max_seeds, resamples=settings.sign_flip_resamples)
    )


def _equivalence_attainable(n: int, config: Config, tests: int) -> bool:
    """The equivalence test's own answer on n seeds at the first step of a Holm over ``tests`` comparisons (the
    t-TOST can always conclude from 2 seeds)."""
    settings = config.settings
    if settings.equivalence_test == "t":
        return n >= 2
    test = functools.partial(resampling.permutation, np.zeros((1, n))) if _unpaired(config) else resampling.sign_flip
    flip = test(
        np.zeros((1, n)),
        alpha=settings.alpha / tests,
        margin=settings.equivalence_margin,
        max_exact=settings.exact_max_seeds,
        resamples=settings.sign_flip_resamples,
        rng=np.random.default_rng(settings.bootstrap_seed),
    )
    return bool(flip["equivalence_attainable"][0])


def plan_families(
    config: Config,
    seeds: int,
    *,
    sd: float | None = None,
    effect: float | None = None,
) -> list[FamilyPlan]:
    """The plan of every comparison family of ``config`` with ``seeds`` matched seeds per arm."""
    if seeds < 1:
        raise AnalysisInputError(f"{config.source}: seeds: expected at least one seed per arm, got {seeds}")
    settings, alpha = config.settings, config.settings.alpha
    # the secondary cells: every measure but the primary, per arm; unknown until read when no benchmarks are named
    measures = None if config.benchmarks is None else len(compared_measures(settings, config.benchmarks)) - 1
    plans = []
    for comparison in config.comparisons:
        k = len(comparison.arms)
        m = None if measures is None else k * measures
        min_p = float(multiplicity.min_attainable_p(_min_p(seeds, config), k))
        min_p_secondary = None if not m else float(multiplicity.min_attainable_p(_min_p(seeds, config), max(k, m)))
        reachable = (
            n for n in range(1, SEARCH_MAX_SEEDS + 1) if multiplicity.min_attainable_p(_min_p(n, config), k) <= alpha
        )
        planned = {}
        if sd is not None:
            from armlab.analysis.stats import power  # scipy.stats, only when there is an sd to plan with

            limits, size = settings.power_options(), effect or settings.power_effect
            planned = {
                "sd": sd,
                "effect": size,
                "mde": float(
                    power.minimum_detectable_effect(
                        sd, seeds, level=alpha / k, n_reference=seeds if _unpaired(config) else 0, **limits
                    )
                ),
                "seeds_needed": float(
                    power.seeds_needed(size, sd, level=alpha / k, unpaired=_unpaired(config), **limits)
                ),
            }
        plans.append(
            FamilyPlan(
                family=comparison.family,
                arms=k,
                secondary=m,
                seeds=seeds,
                min_p=min_p,
                min_p_secondary=min_p_secondary,
                significance_from=next(reachable, None),
                equivalence_attainable=_equivalence_attainable(seeds, config, k),
                equivalence_attainable_secondary=None if not m else _equivalence_attainable(seeds, config, max(k, m)),
                level=alpha / k,
                **planned,
            )
        )
    return plans


def sd_from_scores(config: Config, scores_path: Path | str) -> tuple[float, int]:
    """The pooled sd of the primary summary's paired differences in an earlier experiment's tidy scores.

    Pooled over the config's comparisons whose arms that experiment ran (variances averaged, weighted by
    degrees of freedom); returns the sd and its degrees of freedom. The file is read like the config's input
    file (its ``input.path`` replaced: a wide CSV of results from elsewhere) or, without one, as tidy scores.
    """
    from armlab.analysis import inputs
    from armlab.analysis.comparisons import summaries
    from armlab.analysis.inputs import tidy

    if config.input is not None and "path" in config.input:
        scores, _ = inputs.load_scores(replace(config, input={**config.input, "path": str(scores_path)}))
    else:
        scores = tidy.read_tidy(scores_path, config.limits)
    missing = sorted({"arm", "seed", "benchmark", "domain", "score"} - set(scores.columns))
    if missing:
        raise AnalysisInputError(
            f"{scores_path}: missing column(s) {missing}; expected tidy scores (docs/contracts.md) or a file in "
            f"the format of {config.source}'s input"
        )
    accuracy = summaries.benchmark_accuracy(scores)
    weights = summaries.summary_weights(summaries.benchmark_domains(scores))
    primary = summaries.summarize(accuracy, weights)[summaries.PRIMARY].unstack("arm")
    squares, df, used = 0.0, 0, []
    if _unpaired(config):  # the sd of runs within an arm, pooled over the compared arms that experiment ran
        for arm in config.compared_arms:
            runs = primary[arm].dropna() if arm in primary.columns else primary.iloc[:0, 0]
            if len(runs) >= 2:
                squares += float(runs.var(ddof=1)) * (len(runs) - 1)
                df += len(runs) - 1
    for comparison in [] if _unpaired(config) else config.comparisons:
        for arm in comparison.arms:
            if {arm, comparison.reference} <= set(primary.columns):
                diffs = (primary[arm] - primary[comparison.reference]).dropna()
                if len(diffs) >= 2:
                    squares += float(diffs.var(ddof=1)) * (len(diffs) - 1)
                    df += len(diffs) - 1
                    used.append(arm)
    if not df:
        raise AnalysisInputError(
            f"{scores_path}: no compared arm of {config.source} has two or more "
            f"{'runs' if _unpaired(config) else 'seeds matched with its reference'} there; expected scores of arms "
            f"{config.compared_arms}"
        )
    return math.sqrt(squares / df), df


@dataclass(frozen=True)
class SequentialPlan:
    """What a sequential design's looks allow in one family, whatever the data."""

    family: str
    looks: tuple[int, ...]  # seeds per arm at each look
    first_difference: int | None  # 1-based look: the earliest that can declare a difference; None: no look can
    first_equivalence: int | None  # the same for equivalence within the design's margin


def sequential_plans(config: Config) -> list[SequentialPlan]:
    """The earliest look of each family that can decide, found by running the design's own test on the most
    decisive data: every arm's paired differences equal and positive (the most extreme sign-flip path, so no
    data could differ sooner) or all zero (as far from either margin as data can be)."""
    from armlab.analysis.stats import sequential

    design = _design(config)

    def first(arms: tuple[str, ...], value: float, decision: str) -> int | None:
        records = sequential.run_family(dict.fromkeys(arms, np.full(design.max, value)), design)
        decided = [r.look for r in records if r.decision == decision]
        return min(decided) if decided else None

    return [
        SequentialPlan(
            c.family, design.looks, first(c.arms, 1.0, sequential.DIFFERS), first(c.arms, 0.0, sequential.EQUIVALENT)
        )
        for c in config.comparisons
    ]


def describe_sequential(config: Config, plans: list[SequentialPlan]) -> list[str]:
    """One console line per family of a sequential design: its looks and the earliest that can decide."""
    design = _design(config)

    def at(look: int | None) -> str:
        return "no look" if look is None else f"look {look} ({design.looks[look - 1]} seeds)"

    return [
        f"armlab plan: sequential family {p.family}: looks at {', '.join(map(str, p.looks))} seeds "
        f"({design.spending} spending); a difference can be declared from {at(p.first_difference)}, equivalence "
        f"within ±{100 * design.margin:g} point(s) from {at(p.first_equivalence)}"
        for p in plans
    ]


@dataclass(frozen=True)
class WallTime:
    """Job time of the planned runs from measured per-step training and evaluation times."""

    job_minutes: float  # every planned training and evaluation job, one after another
    cores: int
    measured_runs: int  # the earlier runs the times come from; 0: from a probe (``armlab probe``)
    probe_steps: int = 0  # the steps per arm the probe timed

    @property
    def wall_minutes(self) -> float:
        """A lower bound: the jobs spread evenly over the cores, each as fast as when measured."""
        return self.job_minutes / self.cores


def wall_time(raw: dict, seeds: int, results_dir: Path | str, cores: int) -> WallTime | None:
    """Job time of ``seeds`` runs of every arm of ``raw`` at the per-step times measured in ``results_dir``.

    Per arm: mean training minutes per step (:func:`armlab.analysis.samples.sampled.job_minutes`, over each run's recipe
    steps) times the arm's planned steps, plus its mean evaluation minutes, times ``seeds``. Without a measured
    training run (with its step count) and evaluation of every arm, the times of ``armlab probe``
    (``probe.json``: seconds per step of every arm, one evaluation) where it has every arm; else None.
    """
    from armlab.analysis.samples.sampled import job_minutes

    recipe, arms = raw.get("recipe"), raw.get("arms")
    if not isinstance(recipe, dict) or not isinstance(arms, dict):
        return None
    steps = {arm: {**recipe, **(o if isinstance(o, dict) else {})}.get("steps") for arm, o in arms.items()}
    if not all(isinstance(n, int) for n in steps.values()):
        return None
    measured = job_minutes(results_dir)
    measured = measured.assign(per_step=measured["train_minutes"] / measured["train_steps"])
    per_arm = measured.groupby("arm")
    per_step, evaluation = per_arm["per_step"].mean().to_dict(), per_arm["eval_minutes"].mean().to_dict()
    runs, probe_steps = int(measured["per_step"].notna().sum()), 0
    if any(np.isnan(per_step.get(arm, np.nan)) or np.isnan(evaluation.get(arm, np.nan)) for arm in arms):
        probed = _read_probe(Path(results_dir) / PROBE)
        if probed is None or set(arms) - set(probed["arms"]):
            return None
        per_step = {arm: t["seconds_per_step"] / 60 for arm, t in probed["arms"].items()}
        evaluation = dict.fromkeys(arms, probed["eval_seconds"] / 60)
        runs, probe_steps = 0, probed["probe_steps"]
    minutes = sum(seeds * (per_step[arm] * steps[arm] + evaluation[arm]) for arm in arms)
    return WallTime(minutes, cores, runs, probe_steps)


def _read_probe(path: Path) -> dict | None:
    """``armlab probe``'s times (armlab/experiment/probe.py), None when absent; a malformed file is a one-line error."""
    if not path.is_file():
        return None
    from armlab.files import BadFile, read_json

    try:
        found = read_json(path, "probe")
        arms = found["arms"]
        ok = all(t["seconds_per_step"] > 0 for t in arms.values()) and found["eval_seconds"] > 0
        ok = ok and isinstance(found["probe_steps"], int) and found["probe_steps"] > 0
    except (BadFile, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise AnalysisInputError(
            f"{path}: expected armlab probe's times: probe_steps, eval_seconds and arms -> seconds_per_step "
            f"(rerun armlab probe)"
        )
    return found


def _points(value: float | None) -> str:
    return (
        "none (no seed count reaches the level)" if value is None or math.isinf(value) else f"{100 * value:.3g} points"
    )


def _minutes(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def _seed_count(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.0f}"


def describe(config: Config, plans: list[FamilyPlan], *, sd_source: str = "", wall: WallTime | None = None) -> str:
    """The plan as console lines: one per family, then a loud warning when nothing can be significant."""
    settings, alpha = config.settings, config.settings.alpha
    lines = []
    unit, spread = ("runs per arm (unpaired)", "an sd of runs") if _unpaired(config) else ("seeds", "a paired sd")
    for p in plans:
        text = (
            f"armlab plan: family {p.family}: {p.arms} arm(s) x {p.seeds} {unit}: smallest Holm p {p.min_p:.3g} "
            f"({'can reach' if p.min_p <= alpha else 'can NOT reach'} alpha = {alpha:g})"
        )
        if p.min_p_secondary is not None:
            text += (
                f", its {p.secondary} secondary cell(s) {p.min_p_secondary:.3g} "
                f"({'can reach' if p.min_p_secondary <= alpha else 'can NOT reach'} alpha)"
            )
        text += (
            f"; equivalence within ±{100 * settings.equivalence_margin:g} point(s) "
            f"{'attainable' if p.equivalence_attainable else 'not attainable'}"
        )
        if p.equivalence_attainable_secondary is not None:
            text += f" ({'and' if p.equivalence_attainable_secondary else 'but NOT'} for the secondary cells)"
        if p.sd is not None:
            if p.effect is None:  # plan_families sets both or neither
                raise AnalysisInputError(f"family {p.family}: a planned sd without the effect it is for")
            text += (
                f"; at {spread} of {100 * p.sd:.3g} points{sd_source}: detectable effect {_points(p.mde)}, "
                f"{unit.split()[0]} for {100 * (p.effect):g} points {_seed_count(p.seeds_needed)}"
            )
        lines.append(text)
    # a family of numerics controls measures the numerics noise (armlab.analysis.screens.numerics_noise), whatever its p
    controls = {c.family for c in config.comparisons if set(c.arms) <= set(config.controls)}
    blocked = [p for p in plans if p.min_p > alpha and p.family not in controls]
    if blocked:
        fewest = [p.significance_from for p in blocked]
        reached = [n for n in fewest if n is not None]
        needed = f"at least {max(reached)} seeds" if None not in fewest else f"more than {SEARCH_MAX_SEEDS} seeds"
        lines.append(
            f"armlab plan: WARNING: with {blocked[0].seeds} seeds nothing in family "
            f"{', '.join(p.family for p in blocked)} "
            f"can be significant at alpha = {alpha:g}, whatever the data ({needed} needed): the compute would buy "
            f"descriptive numbers only. Add seeds, or use a sequential design (seeds: {{initial, wave, max}}, "
            f"config/experiments/sequential.yaml), which adds seeds only while a comparison is open."
        )
    if wall is not None:
        origin = (
            f"{wall.measured_runs} earlier run(s)"
            if wall.measured_runs
            else f"armlab probe ({wall.probe_steps} step(s) per arm)"
        )
        bound = "at least" if wall.measured_runs else "about"  # a probe's few steps include start-up
        lines.append(
            f"armlab plan: {_minutes(wall.job_minutes)} job-minutes of training and evaluation at the times of "
            f"{origin}: {bound} {_minutes(wall.wall_minutes)} min on {wall.cores} core(s)"
        )
    return "\n".join(lines)


def curve_plan(raw: dict, config: Config) -> str | None:
    """What ``learning_curves`` can forecast with the recipe's checkpoints: per forecast fraction, the trained
    checkpoints a saturating fit would see (:mod:`armlab.analysis.learning_curves.forecasts` needs 3); None without a
    recipe."""
    recipe = raw.get("recipe")
    if not isinstance(recipe, dict) or not {"steps", "checkpoint_every"} <= set(recipe):
        return None
    steps, every = recipe["steps"], recipe["checkpoint_every"]
    if not (isinstance(steps, int) and isinstance(every, int) and steps > 0 and every > 0):
        return None
    seen = {f: int(seen_through(f, steps) // every) for f in config.settings.curve_fractions}
    text = (
        f"armlab plan: learning_curves: a checkpoint every {every} of {steps} steps; the forecasts of the final "
        f"difference from f = {', '.join(f'{f:g}' for f in seen)} of training fit "
        f"{', '.join(str(n) for n in seen.values())} trained checkpoint(s)"
    )
    short = [f for f, n in seen.items() if n < MIN_POINTS]
    if short:
        densest = max(1, int(seen_through(min(short), steps) // MIN_POINTS))
        text += (
            f"; a fit needs {MIN_POINTS}, so f = {', '.join(f'{f:g}' for f in short)} will have no forecast "
            f"(recipe.checkpoint_every: {densest} or less gives every fraction one)"
        )
    return text


def plan_text(
    raw: dict,
    config: Config,
    *,
    seeds: int | None = None,
    sd: float | None = None,
    sd_from: Path | str | None = None,
    jobs: Path | str | None = None,
    cores: int = 2,
) -> str:
    """The whole plan of a config for the console: ``armlab plan`` and every workflow start and dry run.

    ``raw`` is the config as plain data (seeds, recipe, arms, plan); ``config`` its analysis view. The sd is
    ``sd``, else measured in the scores ``sd_from``, else ``plan.sd``; job times come from the results
    folder ``jobs`` (default: the experiment's own, ``results/<experiment>``).
    """
    section = plan_section(raw, config.source)
    n = seeds if seeds is not None else configured_seeds(raw, config)
    if n is None:
        raise AnalysisInputError(
            f"{config.source}: seeds: the config names no seed list; give the seeds per arm (armlab plan --seeds N)"
        )
    origin = ""
    if sd is not None:
        origin = " (given)"
    elif sd_from is not None:
        sd, df = sd_from_scores(config, sd_from)
        origin = f" (measured in {sd_from}, {df} degrees of freedom)"
    elif "sd" in section:
        sd, origin = section["sd"], " (plan.sd)"
    lines = []
    if config.design is not None:
        lines += describe_sequential(config, sequential_plans(config))
        lines.append(f"armlab plan: a sequential design: the fixed-design numbers at its maximum of {n} seeds")
    jobs = Path(jobs if jobs is not None else Path("results") / config.experiment)
    wall = wall_time(raw, n, jobs, cores) if jobs.is_dir() else None
    plans = plan_families(config, n, sd=sd, effect=section.get("effect"))
    lines.append(describe(config, plans, sd_source=origin, wall=wall))
    curves = curve_plan(raw, config)
    if curves:
        lines.append(curves)
    if wall is None and isinstance(raw.get("arms"), dict):
        lines.append(
            f"armlab plan: wall time: no measured job time of every arm in {jobs} (armlab probe {config.source} "
            f"measures them)"
        )
    return "\n".join(lines)
