"""Reading and validating the parts of an experiment config the analysis uses.

The analysis reads four top-level keys of a config (YAML or JSON) and ignores
the rest (``recipe``, ``arms``, ``seeds``, ...):

``experiment``
    name; the default input is ``results/<experiment>/scores.parquet``.
``comparisons``
    list of ``{family, reference, arms}``; each family is one Holm family.
``benchmarks`` (optional)
    ``{name: {domain: ...}}``; converters take domains from it, and tidy
    scores are checked against it.
``input`` (optional)
    where the scores come from; see :mod:`analysis.io` for the kinds.
``analysis`` (optional)
    the settings below; every key is optional, unknown keys are an error.

=====================  ============  ===============================================
key                    default       meaning
=====================  ============  ===============================================
alpha                  0.05          family-wise error rate for Holm; TOST level
confidence             0.95          level of the reported two-sided interval
resamples              10000         bootstrap resamples
ci_methods             [percentile,  interval methods over seeds, one row each in
                       bca]          comparisons.csv
item_bootstrap         false         add a crossed seeds x items percentile interval
                                     (needs per-item rows)
equivalence_margin     0.01          delta, in score units (0.01 = one point)
power                  0.8           target power for the MDE and seeds needed
power_effect           0.01          effect (score units) for ``seeds_needed``
bootstrap_seed         0             seed of every bootstrap/Monte-Carlo generator
exact_max_seeds        20            enumerate all sign patterns up to this many seeds
sign_flip_resamples    100000        Monte-Carlo sign patterns beyond that
per_benchmark          true          also compare on every single benchmark
subsets                {}            ``{name: [benchmarks]}`` (equal weights) or
                                     ``{name: {benchmark: weight}}``
rankings               null          ``{name: [arms]}``; default one per family
                                     (its reference and arms)
drop_incomplete        false         drop runs lacking benchmarks or items instead of
                                     failing; the outputs list what was dropped
=====================  ============  ===============================================
"""

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from analysis.errors import AnalysisInputError

CI_METHODS = ("percentile", "bca")

DEFAULTS = {
    "alpha": 0.05,
    "confidence": 0.95,
    "resamples": 10_000,
    "ci_methods": list(CI_METHODS),
    "item_bootstrap": False,
    "equivalence_margin": 0.01,
    "power": 0.8,
    "power_effect": 0.01,
    "bootstrap_seed": 0,
    "exact_max_seeds": 20,
    "sign_flip_resamples": 100_000,
    "per_benchmark": True,
    "subsets": {},
    "rankings": None,
    "drop_incomplete": False,
}


@dataclass(frozen=True)
class Comparison:
    """One comparison family: every arm is compared with ``reference``."""

    family: str
    reference: str
    arms: tuple


@dataclass(frozen=True)
class Settings:
    """Validated ``analysis:`` section (see the module docstring)."""

    alpha: float
    confidence: float
    resamples: int
    ci_methods: tuple
    item_bootstrap: bool
    equivalence_margin: float
    power: float
    power_effect: float
    bootstrap_seed: int
    exact_max_seeds: int
    sign_flip_resamples: int
    per_benchmark: bool
    subsets: dict  # name -> {benchmark: weight}, weights summing to 1
    rankings: dict | None  # name -> tuple of arms
    drop_incomplete: bool


@dataclass(frozen=True)
class Config:
    """What the analysis needs from an experiment config."""

    experiment: str
    comparisons: tuple
    benchmarks: dict | None  # benchmark -> domain
    input: dict | None
    settings: Settings
    source: str = "<config>"

    @property
    def compared_arms(self):
        """Arms that take part in some comparison, references included, in config order."""
        arms = []
        for comp in self.comparisons:
            for arm in (comp.reference, *comp.arms):
                if arm not in arms:
                    arms.append(arm)
        return arms


def load_config(path, overrides=()):
    """Read a YAML or JSON config, apply ``key.sub=value`` overrides, validate.

    Override values are parsed as YAML, so ``analysis.resamples=2000`` gives an
    int and ``analysis.ci_methods=[bca]`` a list.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise AnalysisInputError(f"{path}: cannot read config ({exc.strerror})") from None
    try:
        raw = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise AnalysisInputError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from None
    raw = apply_overrides(raw if raw is not None else {}, overrides, source=str(path))
    return parse_config(raw, source=str(path))


def apply_overrides(raw, overrides, source="<config>"):
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


def parse_config(raw, source="<config>"):
    """Validate a config already loaded as plain data; return a :class:`Config`."""
    if not isinstance(raw, dict):
        raise AnalysisInputError(f"{source}: expected a mapping at the top level")
    experiment = raw.get("experiment")
    if not isinstance(experiment, str) or not experiment:
        raise AnalysisInputError(f"{source}: experiment: expected a non-empty string, got {experiment!r}")
    comparisons = _parse_comparisons(raw.get("comparisons"), source)
    benchmarks = _parse_benchmarks(raw.get("benchmarks"), source)
    input_spec = raw.get("input")
    if input_spec is not None and not (isinstance(input_spec, dict) and input_spec.get("kind")):
        raise AnalysisInputError(f"{source}: input: expected a mapping with a 'kind' (tidy, lmeval or wide_csv)")
    settings = _parse_settings(raw.get("analysis") or {}, source)
    return Config(experiment, comparisons, benchmarks, input_spec, settings, source)


def _parse_comparisons(value, source):
    if not isinstance(value, list) or not value:
        raise AnalysisInputError(f"{source}: comparisons: expected a non-empty list of {{family, reference, arms}}")
    out, families = [], set()
    for i, comp in enumerate(value):
        where = f"{source}: comparisons[{i}]"
        if not isinstance(comp, dict) or set(comp) != {"family", "reference", "arms"}:
            raise AnalysisInputError(f"{where}: expected exactly the keys family, reference, arms; got {comp!r}")
        arms = comp["arms"]
        if not isinstance(arms, list) or not arms or not all(isinstance(a, str) for a in arms):
            raise AnalysisInputError(f"{where}.arms: expected a non-empty list of arm names")
        if len(set(arms)) != len(arms) or comp["reference"] in arms:
            raise AnalysisInputError(f"{where}.arms: arms repeat or include the reference {comp['reference']!r}")
        if comp["family"] in families:
            raise AnalysisInputError(f"{where}.family: {comp['family']!r} appears twice; a family is one Holm family")
        families.add(comp["family"])
        out.append(Comparison(str(comp["family"]), str(comp["reference"]), tuple(arms)))
    return tuple(out)


def _parse_benchmarks(value, source):
    if value is None:
        return None
    if not isinstance(value, dict) or not value:
        raise AnalysisInputError(f"{source}: benchmarks: expected a mapping benchmark -> {{domain: ...}}")
    out = {}
    for name, spec in value.items():
        domain = spec.get("domain") if isinstance(spec, dict) else None
        if not isinstance(domain, str) or not domain:
            raise AnalysisInputError(f"{source}: benchmarks.{name}.domain: expected a string")
        out[str(name)] = domain
    return out


def _parse_settings(section, source):
    if not isinstance(section, dict):
        raise AnalysisInputError(f"{source}: analysis: expected a mapping")
    unknown = sorted(set(section) - set(DEFAULTS))
    if unknown:
        raise AnalysisInputError(f"{source}: analysis: unknown key(s) {unknown}; known: {sorted(DEFAULTS)}")
    s = {**DEFAULTS, **section}

    def fail(key, expected):
        raise AnalysisInputError(f"{source}: analysis.{key}: expected {expected}, got {s[key]!r}")

    def number(key, low, high):
        v = s[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not low < v < high:
            fail(key, f"a number in ({low}, {high})")
        return float(v)

    def integer(key, low):
        v = s[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            fail(key, f"an integer >= {low}")
        return v

    def flag(key):
        if not isinstance(s[key], bool):
            fail(key, "true or false")
        return s[key]

    methods = s["ci_methods"]
    if not isinstance(methods, list) or not methods or not set(methods) <= set(CI_METHODS):
        fail("ci_methods", f"a non-empty list drawn from {list(CI_METHODS)}")
    return Settings(
        alpha=number("alpha", 0, 0.5),
        confidence=number("confidence", 0, 1),
        resamples=integer("resamples", 100),
        ci_methods=tuple(dict.fromkeys(methods)),
        item_bootstrap=flag("item_bootstrap"),
        equivalence_margin=number("equivalence_margin", 0, float("inf")),
        power=number("power", 0, 1),
        power_effect=number("power_effect", 0, float("inf")),
        bootstrap_seed=integer("bootstrap_seed", 0),
        exact_max_seeds=integer("exact_max_seeds", 1),
        sign_flip_resamples=integer("sign_flip_resamples", 100),
        per_benchmark=flag("per_benchmark"),
        subsets=_parse_subsets(s["subsets"], source),
        rankings=_parse_rankings(s["rankings"], source),
        drop_incomplete=flag("drop_incomplete"),
    )


def _parse_subsets(value, source):
    if not isinstance(value, dict):
        raise AnalysisInputError(f"{source}: analysis.subsets: expected a mapping name -> benchmarks")
    out = {}
    for name, spec in value.items():
        where = f"{source}: analysis.subsets.{name}"
        if name in ("domain_balanced", "flat"):
            raise AnalysisInputError(f"{where}: the name is reserved for a built-in summary")
        weights = dict.fromkeys(spec, 1.0) if isinstance(spec, list) else spec
        if not isinstance(weights, dict) or not weights or any(
            isinstance(w, bool) or not isinstance(w, (int, float)) or w <= 0 for w in weights.values()
        ):
            raise AnalysisInputError(f"{where}: expected a list of benchmarks or a mapping benchmark -> positive weight")
        total = float(sum(weights.values()))
        out[str(name)] = {str(b): w / total for b, w in weights.items()}
    return out


def _parse_rankings(value, source):
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(arms, list) and len(arms) >= 2 for arms in value.values()
    ):
        raise AnalysisInputError(f"{source}: analysis.rankings: expected a mapping name -> list of >= 2 arms")
    return {str(k): tuple(v) for k, v in value.items()}
