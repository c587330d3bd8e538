"""Numerics controls: arms that differ from their comparison's reference in numerics only (``arms.<arm>.numerics``).

A control runs its reference's recipe and backend at the same seeds, with the same random streams (every stream is
keyed by the experiment and the seed, never by the arm: common random numbers), under other numerics: the kernels of
another CPU generation (``capability``), other torch threads in training and evaluation (``threads``), another
evaluation batch size (``eval_batch_size``), the other engine for a Hugging Face checkpoint's answers (``engine``).
Its paired difference from the reference is then what numerics alone do to a result: an A/A control that the
analysis reads as the numerics component of the variance (armlab.analysis.screens.numerics_noise).

The dtype is not among them. A lower precision (bfloat16) is not another rounding order of the same computation
but another computation, 8 bits of mantissa against 24: its difference has a direction (a bias), so an arm run in it
is a treatment to compare, not a control whose difference from its reference is noise; and the builtin policy
trains and samples in float32 only.

The jobs read a control's numerics from its stage views (:func:`applied`): its training view and its own evaluation
view hold them in the keys every job reads (``threads``, ``capability``, ``eval.batch_size``, ``eval.engine``), so
changing them reruns that arm's jobs and no other.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from armlab import numerics
from armlab.configfile import ConfigError, numerics_controls
from armlab.spec import Eval, default_of
from armlab.training.backends import BACKENDS, arm_backend
from armlab.training.recipe import resolve_arm

# the fields that only the evaluation reads; the others change training too
EVAL_FIELDS = ("eval_batch_size", "engine")


def numerics_of(config: Mapping, arm: str) -> dict:
    """The numerics ``arm`` declares (``arms.<arm>.numerics``), empty for an arm that is not a control."""
    return dict((config["arms"].get(arm) or {}).get(numerics.ARM_KEY) or {})


def controls(config: Mapping) -> dict[str, dict]:
    """Every numerics control of a validated config: arm -> its numerics."""
    return {arm: spec for arm in config["arms"] if (spec := numerics_of(config, arm))}


def applied(view: dict, spec: Mapping, stage: str) -> dict:
    """A stage view (``train`` or ``eval``) with a control's numerics in the keys its jobs read: ``threads``,
    ``capability`` (armlab.numerics.start), and in the evaluation's ``eval.batch_size`` and ``eval.engine``."""
    view = copy.deepcopy(view)
    for field in ("threads", "capability"):
        if field in spec:
            view[field] = spec[field]
    if stage == "eval":
        for field, key in (("eval_batch_size", "batch_size"), ("engine", "engine")):
            if field in spec:
                view["eval"][key] = spec[field]
    return view


def check_controls(source: str, config: dict) -> None:
    """Every numerics control is compared with one reference (not a control) and differs from it in numerics only;
    each field changes something. One line naming the key, before any job."""
    specs = controls(config)
    if specs and isinstance(config["seeds"], dict):
        arm = next(iter(specs))
        raise ConfigError(
            f"{source}: arms.{arm}.numerics: a numerics control pairs with its reference at every seed, and a "
            f"sequential design (seeds: {{initial, wave, max}}) gives the arms seeds look by look; give a seed list"
        )
    for arm, reference in numerics_controls(source, config["arms"], config["comparisons"] or []).items():
        _check_same_run(source, config, arm, reference)
        _check_fields(source, config, arm, specs[arm])


def _check_same_run(source: str, config: dict, arm: str, reference: str) -> None:
    """The control trains and is evaluated as its reference is, but for its numerics: recipe and backend equal."""
    differ = f"may differ from its reference {reference!r} in numerics only"
    if arm_backend(config, arm) != arm_backend(config, reference):
        raise ConfigError(
            f"{source}: arms.{arm}.backend: numerics control {arm!r} {differ}; it trains with "
            f"{arm_backend(config, arm)} and {reference!r} with {arm_backend(config, reference)}"
        )
    # an arm key that changes what it trains on, outside its recipe (a planted leak: training/data.py arm_pools)
    leak = (config["arms"][arm] or {}).get("leak"), (config["arms"][reference] or {}).get("leak")
    if leak[0] != leak[1]:
        raise ConfigError(
            f"{source}: arms.{arm if leak[0] else reference}.leak: numerics control {arm!r} {differ}; a planted leak "
            "changes what it trains on"
        )
    mine, theirs = resolve_arm(config, arm).as_dict(), resolve_arm(config, reference).as_dict()
    for field in dict.fromkeys([*mine, *theirs]):
        if mine.get(field) != theirs.get(field):
            where = arm if field in config["arms"][arm] else reference
            raise ConfigError(
                f"{source}: arms.{where}.{field}: numerics control {arm!r} {differ}; {field} is "
                f"{mine.get(field)!r} in {arm!r} and {theirs.get(field)!r} in {reference!r}"
            )


def _check_fields(source: str, config: dict, arm: str, spec: Mapping) -> None:
    """Each field changes the numerics (a control equal to its reference repeats it bit for bit), and the arm's
    backend can express it."""
    key = f"arms.{arm}.numerics"
    backend = BACKENDS[arm_backend(config, arm)]
    own = {
        "threads": config["threads"],
        "eval_batch_size": config["eval"]["batch_size"],
        "engine": config["eval"].get("engine", default_of(Eval, "engine")),
    }
    for field, value in spec.items():
        if field in own and value == own[field]:
            raise ConfigError(
                f"{source}: {key}.{field}: {value!r} is the experiment's own, so the control would repeat its "
                f"reference bit for bit; give another value or drop the field"
            )
    if "engine" in spec and backend.lm_eval_model != "hf":
        raise ConfigError(
            f"{source}: {key}.engine: an engine generates the answers of Hugging Face checkpoints (backends trl and "
            f"command), and {arm!r}'s models are the {arm_backend(config, arm)} policy, served by "
            f"{backend.lm_eval_model}; drop it"
        )
    pinned = sorted(set(spec) - set(EVAL_FIELDS))
    if pinned and not backend.sets_numerics:
        raise ConfigError(
            f"{source}: {key}.{pinned[0]}: armlab does not set the threads and kernels of the "
            f"{arm_backend(config, arm)} backend's training; its controls change the evaluation only "
            f"({', '.join(EVAL_FIELDS)})"
        )
