"""An arm's recipe: the common ``recipe`` with the arm's overrides, as the typed, frozen :class:`armlab.spec.Recipe`
(whose fields hold each key's meaning, range and default)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from armlab.spec import ARM_KEYS, Recipe


def resolve_arm(config: Mapping[str, Any], arm: str) -> Recipe:
    """The recipe of ``arm`` in a validated config: the common recipe with the arm's overrides (not its ARM_KEYS)."""
    overrides = config["arms"][arm] or {}
    return Recipe.from_dict({**config["recipe"], **{k: v for k, v in overrides.items() if k not in ARM_KEYS}})


def kept_checkpoint_steps(recipe: Recipe) -> range:
    """The steps at which a run keeps an intermediate checkpoint: every ``checkpoint_every`` before the last (the last
    step's model is the run's final one), in every backend."""
    return range(recipe.checkpoint_every, recipe.steps, recipe.checkpoint_every)


def list_methods(registry: Mapping[str, Any], skip: int) -> list[dict[str, Any]]:
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
