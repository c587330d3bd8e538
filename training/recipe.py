"""An arm's recipe: the common ``recipe`` with the arm's overrides, methods in their dict form."""

from __future__ import annotations

import inspect

# keys of an arm that are not recipe overrides: ``backend`` (training/backends/__init__.py ``arm_backend``) says which
# backend trains the arm, not how; the recipe every backend reads never holds it
ARM_KEYS = ("backend",)


def method_spec(value) -> dict:
    """Normalise ``"name"`` or ``{"name": ..., **params}`` to the dict form."""
    return {"name": value} if isinstance(value, str) else dict(value)


def resolve_arm(config: dict, arm: str) -> dict:
    """The recipe of ``arm``: the common recipe with the arm's overrides (not its ``backend``), methods in dict form.

    ``policy_loss`` has no schema default (absent means ``ppo_clip``, training/losses.py ``loss_spec``), so that a
    config without it stages, hashes and records its recipe exactly as before the key existed.
    """
    recipe = {**config["recipe"], **{k: v for k, v in (config["arms"][arm] or {}).items() if k not in ARM_KEYS}}
    recipe["estimator"] = method_spec(recipe["estimator"])
    recipe["data_policy"] = method_spec(recipe["data_policy"])
    if "policy_loss" in recipe:
        recipe["policy_loss"] = method_spec(recipe["policy_loss"])
    return recipe


def kept_checkpoint_steps(recipe: dict) -> range:
    """The steps at which a run keeps an intermediate checkpoint: every ``checkpoint_every`` before the last (the last
    step's model is the run's final one), in every backend."""
    return range(recipe["checkpoint_every"], recipe["steps"], recipe["checkpoint_every"])


def list_methods(registry: dict, skip: int) -> list[dict]:
    """Name, one-line description and parameters (with defaults) of every method of ``registry``.

    A method is a function whose first ``skip`` parameters are its inputs, or a class whose ``__init__`` takes
    ``self`` and ``skip - 1`` inputs; its docstring's first line is its description.
    """
    listing = []
    for name, method in registry.items():
        function = method.__init__ if inspect.isclass(method) else method
        params = {p.name: p.default for p in list(inspect.signature(function).parameters.values())[skip:]}
        listing.append({"name": name, "description": method.__doc__.splitlines()[0], "params": params})
    return listing
