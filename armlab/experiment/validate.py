"""The experiment's config validated whole, before any job (:func:`validate_config`, :func:`load_config`): the JSON
schema (``workflows/schemas/config.schema.yaml``, generated from :mod:`armlab.spec`) checks types and fills defaults
(as ``snakemake.utils.validate`` does, on the schema parsed once), then the rules that need the whole config: names
that become paths, arm references, duplicates, sizes against ``limits``, sampling, sequential designs, planted leaks;
the rules that read training's registries (task families, backends, the recipe's methods, the prompts and items its
jobs draw) are training's own (:mod:`armlab.training.checks`), called here in their place. Every error names the file
and the key and says what was expected.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import jsonschema
import yaml

from armlab.configfile import (
    SEQUENTIAL_DEFAULTS,
    ConfigError,
    check_finite,
    check_limit,
    check_name,
    check_text,
    limits_of,
    load_configs,
    parse_comparisons,
)
from armlab.contract import BASE_ARM, TWIN_SUFFIX, is_twin
from armlab.spec import ARM_KEYS, EVERY_ARM_KEYS, INT64_MAX
from armlab.training import checks as training_checks
from armlab.training.numerics_controls import check_controls
from armlab.training.recipe import resolve_arm

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflows" / "schemas" / "config.schema.yaml"
# the recipe and config sizes a `limits:` key caps (see armlab.limits.DEFAULT_LIMITS)
LIMITED_SIZES = {
    "recipe.steps": "steps",
    "recipe.group_size": "group_size",
    "recipe.prompts_per_step": "prompts_per_step",
    "recipe.updates_per_batch": "updates_per_batch",
    "recipe.max_new_tokens": "max_new_tokens",
    "base.steps": "base_steps",
    "data.pool_per_benchmark": "pool_per_benchmark",
    "eval.samples": "samples",
}
# the lowest sampling temperature (recipe.temperature, eval.temperature > 0): sampling divides float32 logits by it,
# which overflows to inf below about |logit| / 3.4e38 (1.5e-37 for a logit of 50), so that every sample of every job
# fails; long before that, sampling is greedy in all but name (odds of e^100 between logits 1e-4 apart at 1e-6)
MIN_TEMPERATURE = 1e-6


@functools.lru_cache(maxsize=1)
def _schema() -> dict:
    """The workflow's config schema, parsed once per process (parsing cost 0.1 s per validation); read only."""
    if not SCHEMA_PATH.is_file():  # an installed copy outside a checkout: the schema lives in the checkout's workflows/
        raise ConfigError(
            f"{SCHEMA_PATH}: not found; validating a whole experiment config needs armlab's checkout (the workflow's "
            "schema): run from a clone, installed with `make setup` or `pip install -e .`"
        )
    return yaml.safe_load(SCHEMA_PATH.read_text())


def _with_defaults(validator_class: type[jsonschema.protocols.Validator]) -> type[jsonschema.protocols.Validator]:
    """``validator_class`` that also fills in each missing property's schema ``default`` (a copy) as it validates.

    The jsonschema FAQ's way of applying defaults, which ``snakemake.utils.validate`` uses too; here on the schema
    parsed once.
    """
    check_properties = validator_class.VALIDATORS["properties"]

    def properties(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if "default" in subschema and name not in instance:
                    instance[name] = copy.deepcopy(subschema["default"])
        yield from check_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": properties})


_DefaultsValidator = _with_defaults(jsonschema.Draft202012Validator)


def _schema_error(source: str, err: jsonschema.ValidationError) -> ConfigError:
    key = ".".join(map(str, err.absolute_path)) or "(top level)"
    return ConfigError(f"{source}: {key}: {err.message}")


def validate_config(config: dict, source: str = "config") -> dict:
    """Validate ``config`` and return a copy with schema defaults filled in.

    ``source`` names the config file(s) in error messages. Everything a job
    would trip over later is checked here: names that become paths, every
    method and task parameter against its declared signature, sizes against
    ``limits``, and that each benchmark can supply its items (training's checks
    among them, :mod:`armlab.training.checks`).
    """
    config = copy.deepcopy(config)
    check_finite(source, config)
    check_text(source, config)
    _check_names(source, config)
    if isinstance(config.get("seeds"), dict):  # the schema's oneOf would only say "not valid under any"
        missing = [key for key in ("initial", "wave", "max") if key not in config["seeds"]]
        if missing:
            raise ConfigError(
                f"{source}: seeds: a sequential design needs initial, wave and max (missing {missing}); "
                f"or give a list of seeds"
            )
        for key in ("initial", "wave", "max", "start"):  # the schema takes 4.0 for an integer
            value = config["seeds"].get(key, 1)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"{source}: seeds.{key}: expected a whole number of seeds, got {value!r}")
    schema = _schema()
    try:
        jsonschema.Draft202012Validator(schema).validate(config)
    except jsonschema.ValidationError as err:
        raise _schema_error(source, jsonschema.exceptions.best_match([err])) from None
    _DefaultsValidator(schema).validate(config)  # valid: this only fills in the defaults
    limits = _check_sizes(source, config)

    _check_sampling(source, config["eval"])
    if isinstance(config["seeds"], list) and len(set(config["seeds"])) != len(config["seeds"]):
        raise ConfigError(f"{source}: seeds: duplicate seeds in {config['seeds']}; each seed must appear once")
    if isinstance(config["seeds"], list) and len(config["seeds"]) < 2 and config.get("comparisons"):
        raise ConfigError(
            f"{source}: seeds: {config['seeds']} cannot be compared (the analysis would refuse after every job ran): "
            f"a comparison needs at least 2 seeds per arm"
        )
    for name, spec in config["benchmarks"].items():
        spec.setdefault("task", name)
    training_checks.check_task_families(source, config["benchmarks"])

    recipe_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            k: {kk: vv for kk, vv in v.items() if kk != "default"}
            for k, v in schema["properties"]["recipe"]["properties"].items()
        },
        "definitions": schema["definitions"],
    }
    if BASE_ARM in config["arms"]:
        raise ConfigError(f"{source}: arms.{BASE_ARM}: the name {BASE_ARM!r} is reserved for the base policy")
    for arm, overrides in config["arms"].items():
        config["arms"][arm] = overrides = overrides or {}
        recipe_overrides = {k: v for k, v in overrides.items() if k not in ARM_KEYS}
        errors = list(jsonschema.Draft202012Validator(recipe_schema).iter_errors(recipe_overrides))
        if errors:
            best = jsonschema.exceptions.best_match(errors)
            key = ".".join(["arms", arm, *map(str, best.absolute_path)])
            raise ConfigError(
                f"{source}: {key}: {best.message} (arm overrides take the recipe's keys: "
                f"{sorted(recipe_schema['properties'])}, and {', '.join(EVERY_ARM_KEYS)})"
            )
    training_checks.check_arm_backends(source, config)
    training_checks.check_method_names(source, config)

    if config["comparisons"]:  # none is a valid workflow (no analysis to run); the analysis stage refuses it
        parse_comparisons(source, config["comparisons"], arms=config["arms"])
    check_controls(source, config)
    if isinstance(config["seeds"], dict):
        _check_sequential(source, config)
    _check_leaks(source, config)

    extra_tasks = sorted(set(config["eval"].get("lm_eval_tasks", {})) & set(config["benchmarks"]))
    if extra_tasks:
        raise ConfigError(
            f"{source}: eval.lm_eval_tasks.{extra_tasks[0]}: also a benchmark; the scores would hold two benchmarks "
            f"of that name"
        )
    check_arm = training_checks.arm_checks(source, config)
    for arm in config["arms"]:
        recipe = resolve_arm(config, arm)
        for key, limit in LIMITED_SIZES.items():
            section, field = key.split(".")
            if section == "recipe":
                check_limit(
                    source,
                    f"arms.{arm}.{field}" if field in config["arms"][arm] else key,
                    getattr(recipe, field),
                    limits,
                    limit,
                )
        _check_temperature(
            source,
            f"arms.{arm}.temperature" if "temperature" in config["arms"][arm] else "recipe.temperature",
            recipe.temperature,
        )
        if recipe.group_size < 2:
            key = f"arms.{arm}.group_size" if "group_size" in config["arms"][arm] else "recipe.group_size"
            raise ConfigError(
                f"{source}: {key}: {recipe.group_size} rollout per prompt; estimator "
                f"{recipe.estimator['name']!r} is group-relative (its baseline comes from the other "
                f"rollouts of the same prompt) and needs group_size >= 2"
            )
        check_arm(arm, recipe)
    training_checks.check_evaluation_items(source, config)
    training_checks.check_base_batch(source, config)
    return config


def _check_names(source: str, config: dict) -> None:
    """Names that become paths or wildcards (experiment, arms, benchmarks, lm-eval tasks and external benchmarks
    with their domains) follow one pattern; an arm, Snakemake's wildcard, does not end in a repeat Snakemake refuses."""
    from snakemake.io import PeriodicityDetector

    if "experiment" in config:
        check_name(source, "experiment", config["experiment"])
    sections = {
        "arms": config.get("arms"),
        "benchmarks": config.get("benchmarks"),
        "eval.lm_eval_tasks": config["eval"].get("lm_eval_tasks") if isinstance(config.get("eval"), dict) else None,
        "eval.external": config["eval"].get("external") if isinstance(config.get("eval"), dict) else None,
        "trl.reasoning_gym": config["trl"].get("reasoning_gym") if isinstance(config.get("trl"), dict) else None,
    }
    for section, entries in sections.items():
        for name, spec in entries.items() if isinstance(entries, dict) else ():
            check_name(source, f"{section}.{name}", name)
            if section != "arms" and is_twin(name):
                raise ConfigError(
                    f"{source}: {section}.{name}: names ending in {TWIN_SUFFIX!r} are the procedural twins' "
                    f"(benchmarks.<name>.twin); rename it"
                )
            if section != "arms" and isinstance(spec, dict) and "domain" in spec:
                check_name(source, f"{section}.{name}.domain", spec["domain"])
    for arm in config["arms"] if isinstance(config.get("arms"), dict) else ():
        repeat = PeriodicityDetector().is_periodic(arm)
        if repeat is not None:
            raise ConfigError(
                f"{source}: arms.{arm}: ends in {repeat!r} repeated 20 or more times, which Snakemake refuses in a "
                f"wildcard (PeriodicWildcardError, its guard against endless recursion); expected a name without it"
            )
    for i, comparison in enumerate(config.get("comparisons") or []):
        if isinstance(comparison, dict):
            if "reference" in comparison:
                check_name(source, f"comparisons[{i}].reference", comparison["reference"])
            for j, arm in enumerate(comparison.get("arms") or []):
                check_name(source, f"comparisons[{i}].arms[{j}]", arm)
    for i, seed in enumerate(config["seeds"] if isinstance(config.get("seeds"), list) else []):
        if isinstance(seed, int) and not isinstance(seed, bool) and not 0 <= seed <= INT64_MAX:
            raise ConfigError(f"{source}: seeds[{i}]: {seed} is outside 0 .. 2**63-1; seeds are non-negative int64")


def _check_sequential(source: str, config: dict) -> None:
    """A sequential design: its counts agree, and every arm is decided by some comparison (else no look stops it)."""
    seeds = config["seeds"]
    for key, value in {**SEQUENTIAL_DEFAULTS, "margin": None}.items():  # margin None: analysis.equivalence_margin
        seeds.setdefault(key, value)
    if seeds["initial"] > seeds["max"]:
        raise ConfigError(f"{source}: seeds.initial: {seeds['initial']} is above seeds.max ({seeds['max']})")
    if seeds["start"] + seeds["max"] - 1 > INT64_MAX:
        raise ConfigError(f"{source}: seeds.start: seeds {seeds['start']} .. + {seeds['max']} pass 2**63-1")
    compared = {a for c in config["comparisons"] or [] for a in (c["reference"], *c["arms"])}
    alone = [arm for arm in config["arms"] if arm not in compared]
    if alone:
        raise ConfigError(
            f"{source}: seeds: a sequential design gives seeds to the arms its comparisons still need, but arm(s) "
            f"{alone} are in no comparison; add them to one or use a fixed seed list"
        )


def _check_temperature(source: str, key: str, temperature: float) -> None:
    """A sampling ``temperature`` (0 is greedy) is 0 or at least :data:`MIN_TEMPERATURE`."""
    if 0 < temperature < MIN_TEMPERATURE:
        raise ConfigError(
            f"{source}: {key}: {temperature} is below the minimum of {MIN_TEMPERATURE}; sampling divides "
            f"float32 logits by it, which overflows near |logit| / 3.4e38 and fails every job, and below the "
            f"minimum it is greedy in all but name: set {'0 (greedy) or ' if key == 'eval.temperature' else ''}"
            f"at least {MIN_TEMPERATURE}"
        )


def _check_sampling(source: str, spec: dict) -> None:
    """The evaluation's sampling keys agree: k > 1 answers need a temperature, pass@k at most k answers."""
    _check_temperature(source, "eval.temperature", spec["temperature"])
    if spec["samples"] > 1 and spec["temperature"] == 0:
        raise ConfigError(
            f"{source}: eval.samples: {spec['samples']} answers per item at eval.temperature 0 would be "
            f"{spec['samples']} copies of the greedy answer; set eval.temperature > 0 (e.g. 1.0) or samples: 1"
        )
    if spec["top_p"] < 1 and spec["temperature"] == 0:
        raise ConfigError(f"{source}: eval.top_p: {spec['top_p']} needs sampling; set eval.temperature > 0")
    if spec.get("maj_k") and spec.get("lm_eval_tasks"):
        raise ConfigError(
            f"{source}: eval.maj_k: maj@k counts the votes of each answer, but the tasks of eval.lm_eval_tasks "
            f"{sorted(spec['lm_eval_tasks'])} are scored by their metric alone; drop them or maj_k"
        )
    for key in ("pass_k", "maj_k"):
        above = [k for k in spec.get(key, []) if k > spec["samples"]]
        if above:
            raise ConfigError(
                f"{source}: eval.{key}: {above} above eval.samples ({spec['samples']}); {key.replace('_', '@')} needs "
                f"at least k answers per item"
            )


def _check_sizes(source: str, config: dict) -> dict:
    """Sizes outside the recipe against the limits in force; returns the limits (arms are checked later)."""
    limits = limits_of(source, config)
    for key, limit in LIMITED_SIZES.items():
        section, field = key.split(".")
        if section != "recipe":
            check_limit(source, key, config[section][field], limits, limit)
    for name, spec in config["benchmarks"].items():
        check_limit(source, f"benchmarks.{name}.n_items", spec["n_items"], limits, "n_items")
    if isinstance(config["seeds"], dict):
        check_limit(source, "seeds.max", config["seeds"]["max"], limits, "seeds")
    else:
        check_limit(source, "seeds", len(config["seeds"]), limits, "seeds")
    return limits


def _check_leaks(source: str, config: dict) -> None:
    """A planted leak (``arms.<arm>.leak``) is never switched on silently: its arm is compared, in families marked
    ``control: true`` only, is no family's reference, leaks at least one item of every benchmark, and some benchmark
    has a twin for the contamination screen to see it by."""
    leaky = {arm: spec["leak"] for arm, spec in config["arms"].items() if "leak" in spec}
    twinned = [name for name, spec in config["benchmarks"].items() if spec.get("twin")]
    for arm, leak in leaky.items():
        key = f"{source}: arms.{arm}.leak"
        families = [c for c in config["comparisons"] if arm in c["arms"]]
        claims = [c["family"] for c in families if not c.get("control")]
        if not families or claims:
            where = f"in family {claims[0]!r}, which is not" if claims else "in no comparison; it must be"
            raise ConfigError(
                f"{key}: a leak is for planted controls only: the arm is compared {where} marked `control: true` "
                f"(comparisons[].control), so its verdicts would read as a claim"
            )
        referenced = [c["family"] for c in config["comparisons"] if c["reference"] == arm]
        if referenced:
            raise ConfigError(f"{key}: the reference of family {referenced[0]!r}; a leaky arm is never a reference")
        for name, spec in config["benchmarks"].items():
            if round(leak["share"] * spec["n_items"]) < 1:
                raise ConfigError(
                    f"{key}.share: {leak['share']:g} of benchmark {name}'s {spec['n_items']} items leaks none; "
                    f"expected a share above {0.5 / spec['n_items']:g}"
                )
        if not twinned:
            raise ConfigError(
                f"{key}: no benchmark has a twin (benchmarks.<name>.twin: true), so the contamination screen "
                f"cannot see the leak it plants"
            )


def load_config(paths: list[str | Path], overrides: dict | None = None) -> dict:
    """Load config file(s) strictly (later ones update earlier ones recursively, as Snakemake merges
    several --configfile), replace top-level keys by ``overrides``, validate."""
    config = {**load_configs(paths), **(overrides or {})}
    return validate_config(config, source=", ".join(map(str, paths)))
