"""Loading and validating experiment configs, and resolving arms into recipes.

The JSON schema (``workflows/schemas/config.schema.yaml``) checks types and fills
defaults through ``snakemake.utils.validate``; the checks that need the whole
config (arm references, registry names, duplicates) follow here. Every error
names the file and the key and says what was expected — before any job runs.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import yaml

from training.data_policies import DATA_POLICIES
from training.estimators import ESTIMATORS
from training.tasks import TASKS

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "workflows" / "schemas" / "config.schema.yaml"
BASE_ARM = "base"


class ConfigError(ValueError):
    """A config that cannot be run; the message names the file and the key."""


class _StrictLoader(yaml.SafeLoader):
    """A YAML loader that rejects duplicate keys instead of keeping the last one."""


def _construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(f"{loader.name}: line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                              f"(first at line {seen[key]}); names must be unique")
        seen[key] = key_node.start_mark.line + 1
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml_strict(path: str | Path) -> dict:
    """Load a YAML file, raising :class:`ConfigError` on duplicate keys or a non-mapping top level."""
    path = Path(path)
    with open(path) as f:
        loader = _StrictLoader(f)
        loader.name = str(path)
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def load_schema() -> dict:
    return yaml.safe_load(SCHEMA_PATH.read_text())


def method_spec(value) -> dict:
    """Normalise ``"name"`` or ``{"name": ..., **params}`` to the dict form."""
    return {"name": value} if isinstance(value, str) else dict(value)


def _check_method(source: str, key: str, value, registry: dict, kind: str) -> None:
    name = method_spec(value)["name"]
    if name not in registry:
        raise ConfigError(f"{source}: {key}: unknown {kind} {name!r}; expected one of {sorted(registry)}")


def _schema_error(source: str, err: jsonschema.ValidationError) -> ConfigError:
    key = ".".join(map(str, err.absolute_path)) or "(top level)"
    return ConfigError(f"{source}: {key}: {err.message}")


def validate_config(config: dict, source: str = "config") -> dict:
    """Validate ``config`` and return a copy with schema defaults filled in.

    ``source`` names the config file(s) in error messages.
    """
    from snakemake.utils import validate as snakemake_validate

    config = copy.deepcopy(config)
    schema = load_schema()
    try:
        jsonschema.Draft202012Validator(schema).validate(config)
    except jsonschema.ValidationError as err:
        raise _schema_error(source, jsonschema.exceptions.best_match([err])) from None
    snakemake_validate(config, str(SCHEMA_PATH), set_default=True)

    if len(set(config["seeds"])) != len(config["seeds"]):
        raise ConfigError(f"{source}: seeds: duplicate seeds in {config['seeds']}; each seed must appear once")
    for name, spec in config["benchmarks"].items():
        spec.setdefault("task", name)
        if spec["task"] not in TASKS:
            raise ConfigError(f"{source}: benchmarks.{name}.task: unknown task family {spec['task']!r}; "
                              f"expected one of {sorted(TASKS)}")

    recipe_schema = {"type": "object", "additionalProperties": False,
                     "properties": {k: {kk: vv for kk, vv in v.items() if kk != "default"}
                                    for k, v in schema["properties"]["recipe"]["properties"].items()},
                     "definitions": schema["definitions"]}
    if BASE_ARM in config["arms"]:
        raise ConfigError(f"{source}: arms.{BASE_ARM}: the name {BASE_ARM!r} is reserved for the base policy")
    for arm, overrides in config["arms"].items():
        config["arms"][arm] = overrides = overrides or {}
        errors = list(jsonschema.Draft202012Validator(recipe_schema).iter_errors(overrides))
        if errors:
            err = jsonschema.exceptions.best_match(errors)
            key = ".".join(["arms", arm, *map(str, err.absolute_path)])
            raise ConfigError(f"{source}: {key}: {err.message} (arm overrides take the recipe's keys: "
                              f"{sorted(recipe_schema['properties'])})")
    _check_method(source, "recipe.estimator", config["recipe"]["estimator"], ESTIMATORS, "estimator")
    _check_method(source, "recipe.data_policy", config["recipe"]["data_policy"], DATA_POLICIES, "data policy")
    for arm, overrides in config["arms"].items():
        if "estimator" in overrides:
            _check_method(source, f"arms.{arm}.estimator", overrides["estimator"], ESTIMATORS, "estimator")
        if "data_policy" in overrides:
            _check_method(source, f"arms.{arm}.data_policy", overrides["data_policy"], DATA_POLICIES, "data policy")

    families = set()
    for i, comparison in enumerate(config["comparisons"]):
        key = f"comparisons[{i}]"
        if comparison["family"] in families:
            raise ConfigError(f"{source}: {key}.family: duplicate family name {comparison['family']!r}")
        families.add(comparison["family"])
        for field, names in (("reference", [comparison["reference"]]), ("arms", comparison["arms"])):
            for name in names:
                if name not in config["arms"]:
                    raise ConfigError(f"{source}: {key}.{field}: arm {name!r} does not exist; "
                                      f"defined arms are {sorted(config['arms'])}")
        if len(set(comparison["arms"])) != len(comparison["arms"]):
            raise ConfigError(f"{source}: {key}.arms: duplicate arm names in {comparison['arms']}")
        if comparison["reference"] in comparison["arms"]:
            raise ConfigError(f"{source}: {key}.arms: the reference {comparison['reference']!r} "
                              f"cannot also be compared with itself")

    for arm in config["arms"]:
        recipe = resolve_arm(config, arm)
        for field in ("estimator", "data_policy"):
            try:
                _instantiate_check(field, recipe[field], sorted({b["domain"] for b in config["benchmarks"].values()}))
            except (TypeError, ValueError) as err:
                raise ConfigError(f"{source}: arms.{arm}.{field}: {err}") from None
        _check_backend(config, source, arm, recipe)
        need = _longest_prompt(config) + recipe["max_new_tokens"]
        if need > config["model"]["max_len"]:
            raise ConfigError(f"{source}: model.max_len: {config['model']['max_len']} is shorter than the longest "
                              f"prompt plus max_new_tokens of arm {arm!r} ({need})")
    return config


def _check_backend(config: dict, source: str, arm: str, recipe: dict) -> None:
    """Reject an arm the configured backend cannot express, naming the key (never ignore it silently)."""
    backend = config["backend"]
    if backend == "builtin":
        return
    if backend not in config:
        raise ConfigError(f"{source}: {backend}: backend {backend!r} needs a {backend!r} section")
    if backend == "trl":
        from training.backends.trl_backend import check_recipe

        try:
            check_recipe(recipe)
        except ValueError as err:
            raise ConfigError(f"{source}: arms.{arm}.{err} (backend: trl)") from None
        return
    from training.backends.command import check_arm

    try:
        check_arm(config["command"], recipe, config["arms"][arm])
    except ValueError as err:
        key = f"command.{err}" if str(err).startswith("template") else f"arms.{arm}.{err}"
        raise ConfigError(f"{source}: {key} (backend: command)") from None


def hf_base(config: dict) -> str | None:
    """The Hugging Face checkpoint evaluated as arm ``base`` for the trl/command backends (None: no base arm)."""
    return {"trl": config["trl"].get("model"), "command": config.get("command", {}).get("base_checkpoint")
            }.get(config["backend"])


def backend_gpus(config: dict, stage: str) -> int:
    """GPUs one training (``stage="train"``) or evaluation job of the configured backend asks the scheduler for."""
    if config["backend"] == "builtin":
        return 0
    return config[config["backend"]]["gpus" if stage == "train" else "eval_gpus"]


def _instantiate_check(field: str, spec: dict, domains: list[str]) -> None:
    """Build the method once so that bad parameters fail at validation, not in a job."""
    import inspect

    from training.data_policies import make_policy

    if field == "data_policy":
        make_policy(spec, domains)
    else:
        params = {k: v for k, v in spec.items() if k != "name"}
        inspect.signature(ESTIMATORS[spec["name"]]).bind(None, None, **params)


def _longest_prompt(config: dict) -> int:
    """An upper bound on prompt length, from a sample of each benchmark's generator."""
    import numpy as np

    rng = np.random.default_rng(0)
    longest = 0
    for spec in config["benchmarks"].values():
        family = TASKS[spec["task"]]
        longest = max(longest, *(len(family.generate(rng, **spec["params"])[0]) for _ in range(200)))
    return longest


def resolve_arm(config: dict, arm: str) -> dict:
    """The recipe of ``arm``: the common recipe with the arm's overrides, methods in dict form."""
    recipe = {**config["recipe"], **(config["arms"][arm] or {})}
    recipe["estimator"] = method_spec(recipe["estimator"])
    recipe["data_policy"] = method_spec(recipe["data_policy"])
    return recipe


STAGE_KEYS = {
    "data": ("experiment", "data", "benchmarks"),
    "base": ("experiment", "threads", "data", "benchmarks", "model", "base"),
    "train": ("experiment", "threads", "data", "benchmarks", "model", "base", "recipe"),
    "eval": ("experiment", "threads", "benchmarks", "eval"),
    "analysis": ("experiment", "seeds", "benchmarks", "comparisons", "analysis"),
}


def stage_config(config: dict, stage: str, arm: str | None = None) -> dict:
    """The part of ``config`` one stage reads, so that editing one section reruns only the jobs it affects.

    A training view holds the common recipe and the overrides of its own arm only.
    """
    view = {key: config[key] for key in STAGE_KEYS[stage]}
    if stage == "train":
        view["arms"] = {arm: config["arms"][arm]}
    if stage in ("train", "eval") and config["backend"] != "builtin":
        view["backend"] = config["backend"]
        view[config["backend"]] = config[config["backend"]]
    # canonical key order: reordering a YAML file is not a change that should rerun anything
    return json.loads(json.dumps(view, sort_keys=True))


def load_config(paths: list[str | Path], overrides: dict | None = None) -> dict:
    """Load config file(s) (later ones update earlier ones), apply ``overrides``, validate."""
    config: dict = {}
    for path in paths:
        config.update(load_yaml_strict(path))
    config.update(overrides or {})
    return validate_config(config, source=", ".join(map(str, paths)))
