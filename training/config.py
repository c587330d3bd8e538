"""Loading and validating experiment configs, and resolving arms into recipes.

The JSON schema (``workflows/schemas/config.schema.yaml``) checks types and fills
defaults (as ``snakemake.utils.validate`` does, on the schema parsed once); the checks that need the whole
config (arm references, registry names, duplicates) follow here. Every error
names the file and the key and says what was expected — before any job runs.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
from pathlib import Path

import jsonschema
import yaml

from armlab.configfile import (
    SEQUENTIAL_DEFAULTS,
    ConfigError,
    check_finite,
    check_limit,
    check_name,
    check_template,
    check_text,
    limits_of,
    parse_comparisons,
)
from armlab.contract import BASE_ARM, BUILTIN_BASE, TWIN_SUFFIX, is_twin
from armlab.registry import Registry
from armlab.spec import ARM_KEYS, EVERY_ARM_KEYS, INT64_MAX, Recipe, method_spec
from armlab.training.backends import BACKENDS, arm_backend, backends_used
from armlab.training.data_policies import DATA_POLICIES
from armlab.training.estimators import ESTIMATORS
from armlab.training.losses import POLICY_LOSSES, SKIP, check_policy_loss, loss_spec
from armlab.training.numerics_controls import applied, check_controls, controls, numerics_of
from armlab.training.reasoning_gym_tasks import held_out, training_pools
from armlab.training.recipe import resolve_arm
from armlab.training.tasks import TASKS, character_prompt_problem

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "workflows" / "schemas" / "config.schema.yaml"
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
# the recipe's methods: registry, what an error calls one, how many inputs precede the parameters
# recipe field -> its registry, and the leading arguments of an entry that are not parameters
METHODS: dict[str, tuple[Registry, int]] = {
    "estimator": (ESTIMATORS, 2),
    "data_policy": (DATA_POLICIES, 2),
    "policy_loss": (POLICY_LOSSES, SKIP),
}
__all__ = ["ConfigError", "BASE_ARM", "validate_config", "load_config", "resolve_arm", "stage_config"]


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


def _check_method(source: str, key: str, value, registry: Registry) -> None:
    registry.entry(method_spec(value)["name"], f"{source}: {key}", ConfigError)


def _schema_error(source: str, err: jsonschema.ValidationError) -> ConfigError:
    key = ".".join(map(str, err.absolute_path)) or "(top level)"
    return ConfigError(f"{source}: {key}: {err.message}")


def validate_config(config: dict, source: str = "config") -> dict:
    """Validate ``config`` and return a copy with schema defaults filled in.

    ``source`` names the config file(s) in error messages. Everything a job
    would trip over later is checked here: names that become paths, every
    method and task parameter against its declared signature, sizes against
    ``limits``, and that each benchmark can supply its items.
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
        family = TASKS.entry(spec["task"], f"{source}: benchmarks.{name}.task", ConfigError)
        check_parameters(f"{source}: benchmarks.{name}.params", family.generate, spec["params"], skip=1)

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
    _check_arm_backends(source, config)
    for arm, overrides in config["arms"].items():
        backend = arm_backend(config, arm)
        foreign = [
            key for key in overrides if key in ARM_KEYS and key not in (*EVERY_ARM_KEYS, *BACKENDS[backend].arm_keys)
        ]
        if foreign:
            whose = " or ".join(
                "runs trained elsewhere (backend checkpoints)" if name == "checkpoints" else f"backend {name}"
                for name, spec in BACKENDS.items()
                if foreign[0] in spec.arm_keys
            )
            raise ConfigError(
                f"{source}: arms.{arm}.{foreign[0]}: only the arms of {whose} take it; this arm trains with the "
                f"{backend} backend"
            )
    for field, (registry, _) in METHODS.items():
        if field in config["recipe"]:  # policy_loss has no schema default
            _check_method(source, f"recipe.{field}", config["recipe"][field], registry)
    for arm, overrides in config["arms"].items():
        for field, (registry, _) in METHODS.items():
            if field in overrides:
                _check_method(source, f"arms.{arm}.{field}", overrides[field], registry)

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
    # the domains of the training pools: the benchmarks', and those reasoning-gym's prompts add (TRL only)
    drawn = config["trl"].get("reasoning_gym") or {}
    domains = sorted({spec["domain"] for spec in [*config["benchmarks"].values(), *drawn.values()]})
    longest_prompt = _longest_prompt(config)  # the same for every arm: drawn once
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
        if recipe.length_bonus and not DATA_POLICIES[recipe.data_policy["name"]].shaped_rewards:
            key = f"arms.{arm}.length_bonus" if "length_bonus" in config["arms"][arm] else "recipe.length_bonus"
            raise ConfigError(
                f"{source}: {key}: a length bonus makes rewards more than a 0/1 verdict, and data policy "
                f"{recipe.data_policy['name']!r} reads them as pass rates; it runs with "
                f"{[name for name, policy in DATA_POLICIES.items() if policy.shaped_rewards]}"
            )
        for field, (registry, skip) in METHODS.items():
            spec = loss_spec(recipe) if field == "policy_loss" else getattr(recipe, field)
            method = registry[spec["name"]]
            key = f"arms.{arm}.{field}" if field in config["arms"][arm] else f"recipe.{field}"
            params = {k: v for k, v in spec.items() if k != "name"}
            function = method.__init__ if inspect.isclass(method) else method
            check_parameters(f"{source}: {key}", function, params, skip=skip)
            try:
                _instantiate_check(field, spec, domains, recipe)
            except (TypeError, ValueError) as err:
                raise ConfigError(f"{source}: {key}: {err}") from None
        _check_backend(config, source, arm, recipe)
        need = longest_prompt + recipe.max_new_tokens
        if need > config["model"]["max_len"]:
            raise ConfigError(
                f"{source}: model.max_len: {config['model']['max_len']} is shorter than the longest "
                f"prompt plus max_new_tokens of arm {arm!r} ({need})"
            )
    _check_items_exist(source, config)
    _check_base_batch(source, config)
    return config


def _check_base_batch(source: str, config: dict) -> None:
    """The base policy (trained where a builtin arm or ``trl.model: builtin_base`` needs it) draws each batch of
    ``base.batch_size`` distinct prompts from the training pools: they must hold that many."""
    used = backends_used(config)
    if "builtin" not in used and not ("trl" in used and config["trl"].get("model") == BUILTIN_BASE):
        return
    pool, benchmarks, batch = (
        config["data"]["pool_per_benchmark"],
        len(config["benchmarks"]),
        config["base"]["batch_size"],
    )
    if pool * benchmarks < batch:
        raise ConfigError(
            f"{source}: data.pool_per_benchmark: {pool} prompts x {benchmarks} benchmark(s) = {pool * benchmarks}, "
            f"fewer than base.batch_size {batch}, the distinct prompts of each batch of the base policy; raise "
            f"data.pool_per_benchmark or lower base.batch_size"
        )


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


_TYPE_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def check_parameters(where: str, function, params: dict, skip: int) -> None:
    """Check ``params`` by name and type against ``function``'s declared keyword parameters.

    The first ``skip`` positional parameters are the method's inputs, not config. The type
    is the annotation, else the default's type; a bool never passes for a number.
    """
    signature = inspect.signature(function, eval_str=True)
    declared = {
        p.name: p
        for p in list(signature.parameters.values())[skip:]
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    for name, value in params.items():
        if name not in declared:
            raise ConfigError(f"{where}.{name}: unknown parameter; expected one of {sorted(declared) or 'none'}")
        parameter = declared[name]
        kind = parameter.annotation if parameter.annotation in _TYPE_NAMES else type(parameter.default)
        if kind not in _TYPE_NAMES:
            continue
        ok = (
            isinstance(value, bool)
            if kind is bool
            else not isinstance(value, bool) and isinstance(value, (int, float) if kind is float else kind)
        )
        if not ok:
            raise ConfigError(f"{where}.{name}: expected {_TYPE_NAMES[kind]}, got {value!r}")


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


def _check_items_exist(source: str, config: dict) -> None:
    """Every benchmark can supply its ``n_items`` distinct evaluation items, and its twin as many others (the draws
    the data job makes)."""
    from armlab.training.data import evaluation_items

    try:
        evaluation_items(config)
    except ValueError as err:
        raise ConfigError(f"{source}: {err}") from None


def _check_arm_backends(source: str, config: dict) -> None:
    """An arm's own ``backend:`` (training/backends/__init__.py ``arm_backend``): builtin or trl, beside a builtin or
    trl experiment, and a TRL arm beside builtin arms starts from the builtin base (``trl.model: builtin_base``), so
    that every arm trains the same base policy; the command backend runs whole experiments only."""
    BACKENDS.entry(config["backend"], f"{source}: backend", ConfigError)
    own = {arm: spec["backend"] for arm, spec in config["arms"].items() if "backend" in spec}
    for arm, name in own.items():
        BACKENDS.entry(name, f"{source}: arms.{arm}.backend", ConfigError)
        if not BACKENDS[name].per_arm or not BACKENDS[config["backend"]].per_arm:
            raise ConfigError(
                f"{source}: arms.{arm}.backend: an arm's own backend is one of "
                f"{[other for other, backend in BACKENDS.items() if backend.per_arm]} in an "
                f"experiment whose backend is one of them (got {name!r} in a {config['backend']!r} experiment); the "
                f"command backend runs whole experiments: set the top-level backend instead"
            )
    used = backends_used(config)
    if "trl" in used and "builtin" in used:
        model = config.get("trl", {}).get("model")
        if model != BUILTIN_BASE:
            trl_arm = next(arm for arm in config["arms"] if arm_backend(config, arm) == "trl")
            key = f"arms.{trl_arm}.backend" if trl_arm in own else "trl.model"
            raise ConfigError(
                f"{source}: {key}: TRL arm {trl_arm!r} beside builtin arms must start from the builtin arms' base "
                f"policy: set trl.model: {BUILTIN_BASE} (got {model!r})"
            )


def _check_backend(config: dict, source: str, arm: str, recipe: Recipe) -> None:
    """Reject an arm its backend (the arm's own, else the experiment's) cannot express, naming the key (never ignore
    it silently)."""
    backend = arm_backend(config, arm)
    section = BACKENDS[backend].section
    if section and section not in config:
        raise ConfigError(f"{source}: {section}: backend {backend!r} needs a {section!r} section")
    try:
        BACKENDS[backend].check(config, recipe, arm)
    except ValueError as err:
        raise ConfigError(f"{source}: {err}") from None


def _instantiate_check(field: str, spec: dict, domains: list[str], recipe: Recipe) -> None:
    """Build a data policy, or run a policy loss on a dummy batch, once, so that their range checks (and the loss's
    combination with ``ratio_level`` and ``loss_agg``) fail at validation, not in a job."""
    from armlab.training.data_policies import make_data_policy

    if field == "data_policy":
        make_data_policy(spec, domains)
    if field == "policy_loss":
        check_policy_loss(recipe)


def _longest_prompt(config: dict) -> int:
    """An upper bound on prompt length, from a sample of each benchmark's generator."""
    import numpy as np

    rng = np.random.default_rng(0)
    longest = 0
    for spec in config["benchmarks"].values():
        family = TASKS[spec["task"]]
        longest = max(longest, *(len(family.generate(rng, **spec["params"])[0]) for _ in range(200)))
    return longest


STAGE_KEYS = {
    "data": ("experiment", "data", "benchmarks"),
    "base": ("experiment", "threads", "numerics", "data", "benchmarks", "model", "base"),
    "train": ("experiment", "threads", "numerics", "data", "benchmarks", "model", "base", "recipe"),
    "eval": ("experiment", "threads", "numerics", "benchmarks", "eval"),
    "analysis": ("experiment", "seeds", "benchmarks", "comparisons", "predictions", "analysis", "limits", "eval"),
}


def stage_config(config: dict, stage: str, arm: str | None = None) -> dict:
    """The part of ``config`` one stage reads, so that editing one section reruns only the jobs it affects.

    A training view holds the common recipe and the overrides of its own arm only, and the section of the backend
    that trains the arm (an arm's own ``backend: trl`` brings the ``trl`` section into its view alone). The training
    view of a numerics control, and its own evaluation view (``arm`` given), hold its numerics where the jobs read
    them (training/numerics_controls.py ``applied``); the analysis view of an experiment with controls holds the
    arms, whose ``numerics`` keys name the controls (a config without them stages exactly as before).
    """
    view = {key: config[key] for key in STAGE_KEYS[stage]}
    if stage == "analysis" and controls(config):
        view["arms"] = config["arms"]
    # the backend that trains the arm (its own backend: key, else the experiment's); the evaluation's, the experiment's
    backend = config["backend"]
    if stage == "train":
        if arm is None:
            raise ConfigError("stage_config: a training view is the view of one arm; name the arm")
        view["arms"] = {arm: config["arms"][arm]}
        backend = arm_backend(config, arm)
    section, section_view = BACKENDS[backend].section, BACKENDS[backend].section_view
    if stage in ("train", "eval") and section:  # the builtin backend has no section: its views stay as they were
        view["backend"] = backend
        view[section] = config[section] if section_view is None else section_view(config, stage)
        if stage == "train" and config[section].get("reasoning_gym"):
            # the evaluation's reasoning-gym benchmarks, whose questions the training prompts leave out
            view["eval"] = {"external": held_out(config)}
    if stage in ("train", "eval") and arm is not None and numerics_of(config, arm):
        view = applied(view, numerics_of(config, arm), stage)
    # canonical key order: reordering a YAML file is not a change that should rerun anything
    return json.loads(json.dumps(view, sort_keys=True))


def load_config(paths: list[str | Path], overrides: dict | None = None) -> dict:
    """Load config file(s) strictly (later ones update earlier ones recursively, as Snakemake merges
    several --configfile), replace top-level keys by ``overrides``, validate."""
    from armlab.configfile import load_configs

    config = {**load_configs(paths), **(overrides or {})}
    return validate_config(config, source=", ".join(map(str, paths)))


def check_training_prompts(config: dict, source: str = "config", character_level: bool = False) -> None:
    """``trl.reasoning_gym`` can supply its prompts before any job: every arm trains with TRL (the builtin trainer
    draws armlab's pools only, so its arms would train on other prompts), names are not armlab's benchmarks',
    templates name only ``{question}``, and each pool fills (:func:`training_pools`). ``character_level``: TRL
    starts from a model of armlab's characters (its tiny Qwen2 or the builtin base's export), so every prompt must
    be in its characters and fit ``model.max_len`` with every arm's ``max_new_tokens``."""
    specs = (config.get("trl") or {}).get("reasoning_gym") or {}
    if not specs:
        return
    others = [arm for arm in config["arms"] if arm_backend(config, arm) != "trl"]
    if others:
        raise ConfigError(
            f"{source}: trl.reasoning_gym: arm {others[0]!r} trains with the {arm_backend(config, others[0])} "
            f"backend, which draws armlab's own prompts only; its arms and TRL's would train on different prompts "
            f"(train every arm with backend: trl)"
        )
    for name, spec in specs.items():
        where = f"{source}: trl.reasoning_gym.{name}"
        check_limit(
            source,
            f"trl.reasoning_gym.{name}.n_items",
            spec.get("n_items", 0),
            limits_of(source, config),
            "pool_per_benchmark",
        )
        if name in config["benchmarks"]:
            raise ConfigError(f"{where}: also in benchmarks; the pools' prompt ids would clash (rename it)")
        check_template(spec.get("prompt"), f"{where}.prompt", longest=limits_of(source, config)["prompt_chars"])
    pools = training_pools(config, source)
    if not character_level:
        return
    new = max(resolve_arm(config, arm).max_new_tokens for arm in config["arms"])
    for item in (item for pool in pools.values() for item in pool):
        problem = character_prompt_problem(item["prompt"], config["model"]["max_len"], new, "max_new_tokens")
        if problem:
            raise ConfigError(
                f"{source}: trl.reasoning_gym.{item['benchmark']}: prompt {item['id']}: {problem}; TRL starts from "
                f"a character-level model: name a Hugging Face checkpoint with its own tokenizer in trl.model"
            )
