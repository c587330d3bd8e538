"""Reading and validating the parts of an experiment config the analysis uses.

The analysis reads these top-level keys of a config (YAML or JSON) and ignores
the rest (``recipe``, ``arms``, ``seeds``, ...):

``experiment``
    name; the default input is ``results/<experiment>/scores.parquet``.
``comparisons``
    list of ``{family, reference, arms}``; each family is one Holm family.
``benchmarks`` (optional)
    ``{name: {domain: ...}}``; converters take domains from it, and tidy
    scores are checked against it. The tasks of ``eval.lm_eval_tasks``
    (``{name: {domain: ...}}``) are benchmarks too. Where they are given,
    subsets name only these benchmarks, and no benchmark or domain takes the
    name of a built-in summary, a statistic or a subset (its column would
    merge with that measure's).
``arms`` (optional)
    the workflow's arms; where given, rankings name only these arms (or
    ``base``), and the arms with a ``numerics`` key are numerics controls
    (:mod:`armlab.analysis.screens.numerics_noise`), each compared with the one
    reference it repeats.
``input`` (optional)
    where the scores come from; see :mod:`armlab.analysis.inputs` for the kinds.
``analysis`` (optional)
    the settings (below); every key is optional, unknown keys are an error.
``predictions`` (optional)
    preregistered predictions ``{family, arm, summary, direction, margin, source, claim}``
    (:mod:`armlab.analysis.predictions`); each must name a comparison and, where the config
    names its benchmarks, a measure the comparisons table will hold.

Each key of ``analysis:`` is a field of :class:`armlab.spec.Analysis`, where its type, range, default and meaning
are written (docs/settings.md, "analysis", is generated from it); :func:`parse_config` checks the section against
those ranges and the registries, and fills in the defaults.
"""

from __future__ import annotations

import json
import math
import re
import typing
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.predictions import Prediction, parse_predictions
from armlab.analysis.settings import Settings
from armlab.analysis.stats.sequential import Design
from armlab.configfile import (
    SEQUENTIAL_DEFAULTS,
    ConfigError,
    check_limit,
    check_name,
    check_text,
    limits_of,
    load_mapping,
    numerics_controls,
    parse_comparisons,
)
from armlab.contract import BASE_ARM, LEDGER
from armlab.limits import DEFAULT_LIMITS
from armlab.spec import Analysis, Comparison, SequentialDesign, Setting, plain, settings_of

SETTINGS = {setting.name: setting for setting in settings_of(Analysis)}
PAIRINGS = typing.get_args(SETTINGS["pairing"].type)
EQUIVALENCE_TESTS = typing.get_args(SETTINGS["equivalence_test"].type)
# the section's defaults as a config writes them (lists, not tuples): what an absent key reads as
DEFAULTS = {name: plain(setting.default) for name, setting in SETTINGS.items()}


@dataclass(frozen=True)
class Config:
    """What the analysis needs from an experiment config."""

    experiment: str
    comparisons: tuple
    benchmarks: dict | None  # benchmark -> domain
    input: dict | None
    settings: Settings
    source: str = "<config>"
    design: Design | None = None  # a sequential seed design (config ``seeds: {initial, wave, max, ...}``)
    predictions: tuple[Prediction, ...] = ()  # preregistered predictions (analysis.predictions)
    limits: Mapping[str, int] = field(default_factory=lambda: DEFAULT_LIMITS)  # the sizes in force (``limits:``)
    controls: Mapping[str, str] = field(default_factory=dict)  # numerics control -> the reference it repeats
    seeds: tuple = ()  # the config's seed list (none under a sequential design or for results from elsewhere)

    @property
    def measures(self) -> list[str] | None:
        """The measures the comparisons table will hold (:func:`compared_measures`); None without benchmarks."""
        return None if self.benchmarks is None else compared_measures(self.settings, self.benchmarks)

    @property
    def compared_arms(self) -> list[str]:
        """Arms that take part in some comparison, references included, in config order."""
        arms = []
        for comp in self.comparisons:
            for arm in (comp.reference, *comp.arms):
                if arm not in arms:
                    arms.append(arm)
        return arms


def load_config(path: Path | str, overrides: Iterable[str] = ()) -> Config:
    """Read a YAML or JSON config, apply ``key.sub=value`` overrides, validate.

    Override values are parsed as YAML, so ``analysis.resamples=2000`` gives an
    int and ``analysis.ci_methods=[bca]`` a list.
    """
    return parse_config(load_raw(path, overrides), source=str(path))


def load_raw(path: Path | str, overrides: Iterable[str] = ()) -> dict:
    """The config file as plain data (includes resolved) with ``key.sub=value`` overrides applied, not validated."""
    try:
        raw = load_mapping(Path(path))
    except ConfigError as exc:
        raise AnalysisInputError(str(exc)) from None
    return apply_overrides(raw if raw is not None else {}, overrides, source=str(path))


def apply_overrides(raw: dict, overrides: Iterable[str], source: str = "<config>") -> dict:
    """Return a copy of ``raw`` with each ``dotted.key=value`` set (value parsed as YAML)."""
    raw = json.loads(json.dumps(raw))  # deep copy of plain data
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise AnalysisInputError(f"--set {item!r}: expected KEY=VALUE, e.g. input.path=runs.csv")
        node = raw
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise AnalysisInputError(f"{source}: --set {key}: {part!r} is not a mapping")
            node = child
        node[parts[-1]] = yaml.safe_load(value)
    return raw


def parse_config(raw: dict, source: str = "<config>", settings: Settings | None = None) -> Config:
    """Validate a config already loaded as plain data; return a :class:`Config`. With ``settings`` (those an
    analysis recorded), they stand for the config's ``analysis:`` section, in the design's test too."""
    if not isinstance(raw, dict):
        raise AnalysisInputError(f"{source}: expected a mapping at the top level")
    experiment = raw.get("experiment")
    if not isinstance(experiment, str) or not experiment:
        raise AnalysisInputError(f"{source}: experiment: expected a non-empty string, got {experiment!r}")
    comparisons = _parse_comparisons(raw.get("comparisons"), source)
    input_spec = raw.get("input")
    if input_spec is not None and not (isinstance(input_spec, dict) and input_spec.get("kind")):
        raise AnalysisInputError(f"{source}: input: expected a mapping with a 'kind' (tidy, wide_csv, lmeval or verl)")
    section = raw.get("analysis") or {}
    for key in ("pass_k", "maj_k"):  # the workflow's eval section says which k
        if isinstance(section, dict) and section.get(key) is None and isinstance(raw.get("eval"), dict):
            section = {**section, key: raw["eval"].get(key)}
    settings = settings or _parse_settings(section, source)
    benchmarks = _parse_benchmarks(raw.get("benchmarks"), raw.get("eval"), settings, source)
    try:
        check_text(source, raw)  # the loader checked the file; not the --set values nor a config given as data
        check_name(source, "experiment", experiment)
        limits = limits_of(source, raw)
        for key in ("resamples", "sign_flip_resamples", "exact_max_seeds"):
            check_limit(source, f"analysis.{key}", getattr(settings, key), limits, key)
    except ConfigError as exc:
        raise AnalysisInputError(str(exc)) from None
    design = _parse_design(raw.get("seeds"), settings, source)
    if design is not None and settings.pairing == "unpaired":
        raise AnalysisInputError(
            f"{source}: analysis.pairing: unpaired cannot run a sequential design (seeds: {{initial, wave, max}}), "
            f"whose looks pair the arms by seed; give a seed list"
        )
    if isinstance(raw.get("arms"), dict):
        _check_ranked_arms(settings, [*raw["arms"], BASE_ARM], source)
    compared = [{"reference": c.reference, "arms": list(c.arms)} for c in comparisons]
    try:
        controls = numerics_controls(source, raw.get("arms"), compared)
    except ConfigError as exc:
        raise AnalysisInputError(str(exc)) from None
    predictions = parse_predictions(raw.get("predictions"), comparisons, settings.equivalence_margin, source)
    if benchmarks is not None:
        _check_subset_benchmarks(settings, benchmarks, source)
        _check_predicted_measures(predictions, settings, benchmarks, source)
    seeds = raw.get("seeds")
    listed = tuple(seeds) if isinstance(seeds, list) and all(isinstance(s, int) for s in seeds) else ()
    return Config(
        experiment,
        comparisons,
        benchmarks,
        input_spec,
        settings,
        source,
        design,
        predictions,
        limits,
        controls=controls,
        seeds=listed,
    )


def compared_measures(settings: Settings, benchmarks: dict[str, str]) -> list[str]:
    """The measures the comparisons table will hold: summaries, statistics, pass@k (k > 1), maj@k, benchmarks, and
    each benchmark's pass@k (k > 1) and maj@k.

    A summary or benchmark that weighs the benchmarks exactly as an earlier one does is left out, as the
    analysis leaves it out (:func:`armlab.analysis.comparisons.summaries.twin_measures`).
    """
    from armlab.analysis.comparisons.summaries import BUILT_IN
    from armlab.analysis.samples.sampled import majority_name, measure_name, per_benchmark_measures

    measures = [*BUILT_IN, *settings.subsets, *settings.statistics]
    measures += [measure_name(k) for k in settings.pass_k if k > 1]  # pass@1 is the primary summary itself
    measures += [majority_name(k) for k in settings.maj_k]
    measures += list(benchmarks) if settings.per_benchmark else []
    measures += per_benchmark_measures(list(benchmarks), settings)
    twins = measure_twins(settings, benchmarks)
    return [m for m in measures if m not in twins]


def measure_twins(settings: Settings, benchmarks: dict[str, str]) -> dict[str, str]:
    """The configured summaries and benchmarks that are another measure under a second name: name -> that measure."""
    import numpy as np
    import pandas as pd

    from armlab.analysis.comparisons.summaries import summary_weights, twin_measures

    weights = summary_weights(pd.Series(benchmarks, dtype=object), settings.subsets)
    if settings.per_benchmark:
        names = list(benchmarks)
        weights = pd.concat([weights, pd.DataFrame(np.eye(len(names)), index=names, columns=names)])
    return twin_measures(weights)


def _check_subset_benchmarks(settings: Settings, benchmarks: dict[str, str], source: str) -> None:
    """Subsets weigh the config's benchmarks only (the analysis would find out after training)."""
    for name, weights in settings.subsets.items():
        unknown = sorted(set(weights) - set(benchmarks))
        if unknown:
            raise AnalysisInputError(
                f"{source}: analysis.subsets.{name}: unknown benchmark(s) {unknown}; known: {list(benchmarks)}"
            )


def _check_ranked_arms(settings: Settings, arms: list[str], source: str) -> None:
    """Every ranked arm exists (the workflow knows its arms at start; the analysis would find out after training)."""
    for name, ranked in (settings.rankings or {}).items():
        unknown = [arm for arm in ranked if arm not in arms]
        if unknown:
            raise AnalysisInputError(
                f"{source}: analysis.rankings.{name}: arm(s) {unknown} do not exist; defined arms are {arms}"
            )


def _check_predicted_measures(
    predictions: tuple[Prediction, ...], settings: Settings, benchmarks: dict[str, str], source: str
) -> None:
    if not predictions:
        return
    measures, twins = compared_measures(settings, benchmarks), measure_twins(settings, benchmarks)
    for i, prediction in enumerate(predictions):
        if prediction.summary in twins:
            raise AnalysisInputError(
                f"{source}: predictions[{i}].summary: {prediction.summary!r} weighs the benchmarks exactly as "
                f"{twins[prediction.summary]!r} does, so the analysis tests it once, as {twins[prediction.summary]!r}; "
                f"predict on that"
            )
        if prediction.summary not in measures:
            raise AnalysisInputError(
                f"{source}: predictions[{i}].summary: {prediction.summary!r} is not a compared measure; "
                f"known: {measures}"
            )


def _parse_design(seeds: object, settings: Settings, source: str) -> Design | None:
    """The sequential design of ``seeds: {initial, wave, max, start, spending, margin}``; None for a seed list."""
    if not isinstance(seeds, dict):
        return None
    unknown = sorted(set(seeds) - {setting.name for setting in settings_of(SequentialDesign)})
    if unknown:
        raise AnalysisInputError(f"{source}: seeds: unknown key(s) {unknown} of a sequential design")
    for key in ("initial", "wave", "max"):
        if not isinstance(seeds.get(key), int) or isinstance(seeds.get(key), bool) or seeds[key] < 1:
            raise AnalysisInputError(f"{source}: seeds.{key}: expected a positive integer, got {seeds.get(key)!r}")
    margin = seeds.get("margin")
    if margin is not None and not (isinstance(margin, (int, float)) and not isinstance(margin, bool) and margin > 0):
        raise AnalysisInputError(f"{source}: seeds.margin: expected a positive number or null, got {margin!r}")
    try:
        return Design(
            initial=seeds["initial"],
            wave=seeds["wave"],
            max=seeds["max"],
            spending=seeds.get("spending", SEQUENTIAL_DEFAULTS["spending"]),
            start=seeds.get("start", SEQUENTIAL_DEFAULTS["start"]),
            alpha=settings.alpha,
            margin=float(margin if margin is not None else settings.equivalence_margin),
            confidence=settings.confidence,
            max_exact=settings.exact_max_seeds,
            resamples=settings.sign_flip_resamples,
            seed=settings.bootstrap_seed,
        )
    except AnalysisInputError as exc:
        raise AnalysisInputError(f"{source}: {exc}") from None


def _parse_comparisons(value: object, source: str) -> tuple[Comparison, ...]:
    try:
        checked = parse_comparisons(source, value)  # ``value`` itself, once valid
    except ConfigError as exc:
        raise AnalysisInputError(str(exc)) from None
    return tuple(
        Comparison(c["family"], c["reference"], tuple(c["arms"]), bool(c.get("control", False))) for c in checked
    )


def _parse_benchmarks(
    value: dict | None, evaluation: dict | None, settings: Settings, source: str
) -> dict[str, str] | None:
    """Benchmark -> domain of ``benchmarks`` and of the evaluation's ``lm_eval_tasks`` and ``external`` benchmarks; None
    without benchmarks.

    No benchmark or domain is named like a built-in summary or a statistic, nor a benchmark like a subset: its
    column would merge with that measure's."""
    from armlab.analysis.comparisons.summaries import BUILT_IN
    from armlab.analysis.stats.statistics import STATISTICS

    built_in = {**dict.fromkeys(BUILT_IN, "a built-in summary"), **dict.fromkeys(STATISTICS, "a statistic")}
    measures = {**built_in, **dict.fromkeys(settings.subsets, "a subset of analysis.subsets")}
    if value is None:
        return None
    if not isinstance(value, dict) or not value:
        raise AnalysisInputError(f"{source}: benchmarks: expected a mapping benchmark -> {{domain: ...}}")
    tasks = evaluation.get("lm_eval_tasks") if isinstance(evaluation, dict) else None
    external = evaluation.get("external") if isinstance(evaluation, dict) else None
    out = {}
    for section, entries in (
        ("benchmarks", value),
        ("eval.lm_eval_tasks", tasks or {}),
        ("eval.external", external or {}),
    ):
        for name, spec in entries.items():
            domain = spec.get("domain") if isinstance(spec, dict) else None
            if not isinstance(domain, str) or not domain:
                raise AnalysisInputError(f"{source}: {section}.{name}.domain: expected a string")
            for key, taken, reserved in ((name, name, measures), (f"{name}.domain", domain, built_in)):
                if taken in reserved:
                    raise AnalysisInputError(
                        f"{source}: {section}.{key}: {taken!r} is the name of {reserved[taken]}, whose column it "
                        f"would merge with; expected another name"
                    )
            out[str(name)] = domain
    return out


def _parse_settings(section: dict, source: str) -> Settings:
    if not isinstance(section, dict):
        raise AnalysisInputError(f"{source}: analysis: expected a mapping")
    unknown = sorted(set(section) - set(DEFAULTS))
    if unknown:
        raise AnalysisInputError(f"{source}: analysis: unknown key(s) {unknown}; known: {sorted(DEFAULTS)}")
    s = {**DEFAULTS, **section}

    def fail(key: str, expected: str) -> NoReturn:
        raise AnalysisInputError(f"{source}: analysis.{key}: expected {expected}, got {s[key]!r}")

    def number(key: str, low: float, high: float) -> float:
        v = s[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not low < v < high:
            fail(key, f"a number in ({low}, {high})")
        return float(v)

    def integer(key: str, low: int) -> int:
        v = s[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            fail(key, f"an integer >= {low}")
        return v

    def flag(key: str) -> bool:
        if not isinstance(s[key], bool):
            fail(key, "true or false")
        return s[key]

    def choices(key: str, allowed: Collection[str], empty: bool = False) -> tuple[str, ...]:
        listed = isinstance(s[key], list) and (empty or s[key])
        if not listed or not all(isinstance(m, str) and m in allowed for m in s[key]):
            fail(key, f"a {'' if empty else 'non-empty '}list drawn from {sorted(allowed)}")
        return tuple(dict.fromkeys(s[key]))

    from armlab.analysis.stats import intervals  # the registries import scipy: only once a config is parsed

    if s["equivalence_test"] not in EQUIVALENCE_TESTS:
        fail("equivalence_test", " or ".join(EQUIVALENCE_TESTS))
    if s["pairing"] not in PAIRINGS:
        fail("pairing", f"one of {list(PAIRINGS)}")
    if s["pairing"] == "unpaired":
        # the other intervals and tests are of paired differences; an unpaired row must not borrow them
        paired_only = {"ci_methods": [], "equivalence_test": "sign_flip", "item_bootstrap": False}
        for key, allowed in paired_only.items():
            if s[key] != allowed:
                fail(key, f"{allowed!r} with analysis.pairing: unpaired (the other choices pair runs by seed)")
        if flag("common_seeds_only"):
            fail("common_seeds_only", "false with analysis.pairing: unpaired (unpaired runs need no common seeds)")

    def simple(setting: Setting) -> Any:
        """A flag, a whole number at least its minimum, or a number within its bounds (or None, its default)."""
        bounds = setting.keywords
        if setting.type is bool:
            return flag(setting.name)
        if setting.type is int:
            return integer(setting.name, bounds["minimum"])
        if s[setting.name] is None and setting.default is None:
            return None
        return number(setting.name, bounds["exclusiveMinimum"], bounds.get("exclusiveMaximum", math.inf))

    # the settings a type and range do not say all of: drawn from a registry, named, or lists with their own rules
    parsers: dict[str, Callable[[], Any]] = {
        "ci_methods": lambda: choices("ci_methods", intervals.SEED_METHODS, empty=True),
        "crossed_methods": lambda: choices("crossed_methods", intervals.CROSSED_METHODS),
        "equivalence_test": lambda: s["equivalence_test"],
        "pairing": lambda: s["pairing"],
        "subsets": lambda: _parse_subsets(s["subsets"], source),
        "statistics": lambda: _parse_statistics(s["statistics"], source),
        "rankings": lambda: _parse_rankings(s["rankings"], source),
        "pass_k": lambda: _parse_ks(s["pass_k"], "pass_k", source),
        "maj_k": lambda: _parse_ks(s["maj_k"], "maj_k", source),
        "curve_compute": lambda: _parse_curve_compute(s["curve_compute"], source),
        "curve_budgets": lambda: _parse_curve_budgets(s["curve_budgets"], source),
        "curve_fractions": lambda: _parse_curve_fractions(s["curve_fractions"], source),
        "verifiers": lambda: _parse_names(s["verifiers"], "verifiers", source),
    }
    return Settings(**{name: parsers[name]() if name in parsers else simple(x) for name, x in SETTINGS.items()})


def _parse_names(value: object, key: str, source: str) -> tuple[str, ...]:
    """A list of distinct names (the registry that knows them checks them where it is loaded)."""
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value) or len(set(value)) < len(value):
        raise AnalysisInputError(f"{source}: analysis.{key}: expected a list of distinct names, got {value!r}")
    return tuple(value)


def _parse_curve_fractions(value: object, source: str) -> tuple[float, ...]:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(f, (int, float)) and not isinstance(f, bool) and 0 < f < 1 for f in value)
        or sorted(set(value)) != value
    ):
        raise AnalysisInputError(
            f"{source}: analysis.curve_fractions: expected a non-empty increasing list of numbers in (0, 1), "
            f"got {value!r}"
        )
    return tuple(float(f) for f in value)


def _parse_curve_compute(value: object, source: str) -> str | None:
    if value is not None and not (isinstance(value, str) and value in LEDGER):
        raise AnalysisInputError(
            f"{source}: analysis.curve_compute: expected null or one of {list(LEDGER)}, got {value!r}"
        )
    return value


def _parse_curve_budgets(value: object, source: str) -> tuple[float, ...] | None:
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(b, (int, float)) and not isinstance(b, bool) and 0 < b < math.inf for b in value)
        or sorted(set(value)) != value
    ):
        raise AnalysisInputError(
            f"{source}: analysis.curve_budgets: expected null or an increasing list of positive numbers, got {value!r}"
        )
    return tuple(float(b) for b in value)


def _parse_ks(value: list[int] | None, key: str, source: str) -> tuple[int, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in value):
        raise AnalysisInputError(f"{source}: analysis.{key}: expected a list of integers >= 1, got {value!r}")
    return tuple(sorted(set(value)))


def _parse_subsets(value: dict, source: str) -> dict[str, dict[str, float]]:
    # lazily: summaries imports armlab.analysis.inputs, which imports this module
    from armlab.analysis.comparisons.summaries import BUILT_IN
    from armlab.analysis.stats.statistics import STATISTICS

    if not isinstance(value, dict):
        raise AnalysisInputError(f"{source}: analysis.subsets: expected a mapping name -> benchmarks")
    out = {}
    for name, spec in value.items():
        where = f"{source}: analysis.subsets.{name}"
        if name in BUILT_IN:
            raise AnalysisInputError(f"{where}: the name is reserved for a built-in summary")
        if str(name) in STATISTICS or re.fullmatch(r"(pass|maj)@\d+", str(name)):
            raise AnalysisInputError(f"{where}: the name is reserved for a measure (a statistic, a pass@k or a maj@k)")
        if str(name) in out:
            raise AnalysisInputError(f"{where}: a second subset of that name (YAML keys {name!r} and '{name}'?)")
        weights = dict.fromkeys(spec, 1.0) if isinstance(spec, list) else spec
        if (
            not isinstance(weights, dict)
            or not weights
            or any(isinstance(w, bool) or not isinstance(w, (int, float)) or w <= 0 for w in weights.values())
        ):
            raise AnalysisInputError(
                f"{where}: expected a list of benchmarks or a mapping benchmark -> positive weight"
            )
        total = float(sum(weights.values()))
        out[str(name)] = {str(b): w / total for b, w in weights.items()}
    return out


def _parse_statistics(value: list[str] | dict, source: str) -> dict[str, dict[str, float]]:
    """``[names]`` or ``{name: {parameter: number}}`` -> ``{name: parameters}``, defaults filled in."""
    from armlab.analysis.stats import statistics

    where = f"{source}: analysis.statistics"
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        value = dict.fromkeys(value)
    if not isinstance(value, dict):
        raise AnalysisInputError(
            f"{where}: expected a list of statistic names or a mapping name -> parameters; "
            f"known: {sorted(statistics.STATISTICS)}"
        )
    out = {}
    for name, params in value.items():
        defaults = statistics.parameters(statistics.lookup(name, where))
        params = {} if params is None else params
        if not isinstance(params, dict) or set(params) - set(defaults):
            raise AnalysisInputError(
                f"{where}.{name}: expected a mapping of parameters drawn from {sorted(defaults)}, got {params!r}"
            )
        for key, number in params.items():
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
                raise AnalysisInputError(f"{where}.{name}.{key}: expected a number, got {number!r}")
        out[str(name)] = {**defaults, **{k: float(v) for k, v in params.items()}}
    return out


def _parse_rankings(value: dict | None, source: str) -> dict[str, tuple[str, ...]] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(arms, list)
        and len(arms) >= 2
        and all(isinstance(arm, str) for arm in arms)
        and len(set(arms)) == len(arms)
        for arms in value.values()
    ):
        raise AnalysisInputError(
            f"{source}: analysis.rankings: expected a mapping name -> list of >= 2 arms, each named once, got {value!r}"
        )
    return {str(k): tuple(v) for k, v in value.items()}
