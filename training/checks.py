"""What training checks of an experiment's config: the rules that read its registries (task families, backends,
estimators, data policies, policy losses, reasoning-gym). The experiment's validation
(:func:`armlab.experiment.validate.validate_config`: the schema and the rules of the whole config) calls each at its
place in the order of its checks; :func:`check` runs when the workflow starts, beyond that validation: the checkpoints
of runs made elsewhere (their backend's ``recorded.check_files``), the prompts of ``trl.reasoning_gym``, and that every
reasoning-gym draw a job makes is the same in every process. Every error is a one-line ``ConfigError`` naming
``source`` and the key.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from armlab.configfile import ConfigError, check_limit, check_template, limits_of
from armlab.contract import BUILTIN_BASE
from armlab.registry import Registry
from armlab.spec import ARM_KEYS, EVERY_ARM_KEYS, Recipe, method_spec
from armlab.training.backends import BACKENDS, arm_backend, backends_used
from armlab.training.data_policies import DATA_POLICIES
from armlab.training.estimators import ESTIMATORS
from armlab.training.losses import POLICY_LOSSES, SKIP, check_policy_loss, loss_spec
from armlab.training.reasoning_gym_tasks import check_reproducible, draws_of, training_pools
from armlab.training.recipe import resolve_arm
from armlab.training.tasks import TASKS, character_prompt_problem

# recipe field -> its registry, and the leading arguments of an entry that are not parameters
METHODS: dict[str, tuple[Registry, int]] = {
    "estimator": (ESTIMATORS, 2),
    "data_policy": (DATA_POLICIES, 2),
    "policy_loss": (POLICY_LOSSES, SKIP),
}


def check(config: dict, source: str) -> None:
    """What training checks of a validated config when the workflow starts (armlab.experiment.load): the checkpoints
    of runs made elsewhere, reasoning-gym's prompts and draws."""
    for name in backends_used(config):  # the checkpoints of runs made elsewhere, found and checked now
        recorded = BACKENDS[name].recorded
        if recorded is not None:
            try:
                recorded.check_files(config)
            except ValueError as err:
                raise ConfigError(f"{source}: {err}") from None
    check_training_prompts(config, source, character_level=config["trl"].get("model") in (None, BUILTIN_BASE))
    check_reproducible(draws_of(config, source))  # reasoning-gym's items are drawn anew in each job


def check_task_families(source: str, benchmarks: dict) -> None:
    """Each benchmark's task family (``benchmarks.<name>.task``, filled in) exists and takes its ``params``."""
    for name, spec in benchmarks.items():
        family = TASKS.entry(spec["task"], f"{source}: benchmarks.{name}.task", ConfigError)
        check_parameters(f"{source}: benchmarks.{name}.params", family.generate, spec["params"], skip=1)


def check_arm_backends(source: str, config: dict) -> None:
    """An arm's own ``backend:`` (training/backends/__init__.py ``arm_backend``): builtin or trl, beside a builtin or
    trl experiment, and a TRL arm beside builtin arms starts from the builtin base (``trl.model: builtin_base``), so
    that every arm trains the same base policy; the command backend runs whole experiments only. An arm takes the keys
    of its own backend only."""
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


def check_method_names(source: str, config: dict) -> None:
    """The recipe's methods (estimator, data policy, policy loss), and each arm's, name entries of their registries."""
    for field, (registry, _) in METHODS.items():
        if field in config["recipe"]:  # policy_loss has no schema default
            _check_method(source, f"recipe.{field}", config["recipe"][field], registry)
    for arm, overrides in config["arms"].items():
        for field, (registry, _) in METHODS.items():
            if field in overrides:
                _check_method(source, f"arms.{arm}.{field}", overrides[field], registry)


def _check_method(source: str, key: str, value, registry: Registry) -> None:
    registry.entry(method_spec(value)["name"], f"{source}: {key}", ConfigError)


def arm_checks(source: str, config: dict) -> Callable[[str, Recipe], None]:
    """The check of one arm's resolved recipe against training's registries: its length bonus beside its data policy,
    its methods' parameters (and a data policy built, a policy loss run once), its backend's own checks, and that the
    longest prompt plus its ``max_new_tokens`` fit ``model.max_len``. The training pools' domains and the longest
    prompt are the same for every arm: drawn once, here."""
    # the domains of the training pools: the benchmarks', and those reasoning-gym's prompts add (TRL only)
    drawn = config["trl"].get("reasoning_gym") or {}
    domains = sorted({spec["domain"] for spec in [*config["benchmarks"].values(), *drawn.values()]})
    longest_prompt = _longest_prompt(config)

    def check_arm(arm: str, recipe: Recipe) -> None:
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

    return check_arm


def check_evaluation_items(source: str, config: dict) -> None:
    """Every benchmark can supply its ``n_items`` distinct evaluation items, and its twin as many others (the draws
    the data job makes)."""
    from armlab.training.data import evaluation_items

    try:
        evaluation_items(config)
    except ValueError as err:
        raise ConfigError(f"{source}: {err}") from None


def check_base_batch(source: str, config: dict) -> None:
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
