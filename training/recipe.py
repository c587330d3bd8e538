"""An arm's recipe: the common ``recipe`` with the arm's overrides, as a typed, frozen :class:`Recipe`."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

# keys of an arm that are not recipe overrides: ``backend`` (training/backends/__init__.py ``arm_backend``) says which
# backend trains the arm and ``numerics`` (training/numerics_controls.py) under which numerics, not how: every arm
# takes them; ``description`` and ``claims`` (the recipe a run trained elsewhere claims) are for the report, and
# ``leak`` plants evaluation items in a control arm's training pool (training/data.py ``arm_pools``), on the arms of a
# backend that takes them (its ``arm_keys``); the recipe every backend reads never holds any of them
EVERY_ARM_KEYS = ("backend", "numerics")
ARM_KEYS = (*EVERY_ARM_KEYS, "description", "claims", "leak")

# a method (estimator, data policy, policy loss) in its dict form, read-only: {"name": ..., **params}
Method = Mapping[str, Any]
METHOD_FIELDS = ("estimator", "data_policy", "policy_loss")  # the recipe's fields that hold one


@dataclass(frozen=True)
class Recipe:
    """How one arm trains, read by every backend: the common ``recipe`` with the arm's overrides.

    Each field's meaning, range and default are written once, in the ``recipe`` section of the config schema
    (workflows/schemas/config.schema.yaml), which fills the defaults before a Recipe is made; a test holds the
    fields equal to the schema's properties. The two fields without a schema default are None when the config leaves
    them out (policy loss ``ppo_clip``, training/losses.py ``loss_spec``; no length bonus), so that such a recipe is
    recorded exactly as before the keys existed.
    """

    steps: int
    prompts_per_step: int
    group_size: int
    lr: float
    weight_decay: float
    clip: float
    kl_coef: float
    temperature: float
    max_new_tokens: int
    updates_per_batch: int
    loss_agg: str
    ratio_level: str
    reward_noise: float
    stream: int
    grad_clip: float
    checkpoint_every: int
    log_every: int
    estimator: Method
    data_policy: Method
    policy_loss: Method | None = None
    length_bonus: float | None = None

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any]) -> Recipe:
        """The recipe of a validated config's ``fields``; methods may be given as a name or in dict form."""
        methods = {k: method_spec(v) for k, v in fields.items() if k in METHOD_FIELDS and v is not None}
        return cls(**{**fields, **methods})

    def as_dict(self) -> dict[str, Any]:
        """The recipe as a manifest records it (and a command template reads it): methods as dicts, the keys the
        config left out absent."""
        return {
            field.name: dict(value) if isinstance(value, Mapping) else value
            for field in dataclasses.fields(self)
            if (value := getattr(self, field.name)) is not None
        }

    def replace(self, **changes: Any) -> Recipe:
        """A copy with ``changes`` (methods may be given as a name or in dict form)."""
        return Recipe.from_dict({**self.as_dict(), **changes})


def method_spec(value: str | Mapping[str, Any]) -> Method:
    """Normalise ``"name"`` or ``{"name": ..., **params}`` to the read-only dict form."""
    return MappingProxyType({"name": value} if isinstance(value, str) else dict(value))


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
