"""An arm's recipe: the common ``recipe`` with the arm's overrides, methods in their dict form."""

from __future__ import annotations


def method_spec(value) -> dict:
    """Normalise ``"name"`` or ``{"name": ..., **params}`` to the dict form."""
    return {"name": value} if isinstance(value, str) else dict(value)


def resolve_arm(config: dict, arm: str) -> dict:
    """The recipe of ``arm``: the common recipe with the arm's overrides, methods in dict form."""
    recipe = {**config["recipe"], **(config["arms"][arm] or {})}
    recipe["estimator"] = method_spec(recipe["estimator"])
    recipe["data_policy"] = method_spec(recipe["data_policy"])
    return recipe
