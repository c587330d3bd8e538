"""The stage views (:func:`stage_config`): the part of the experiment's config each stage's jobs read. The workflow
writes each view to a file its jobs take as an input (the rules ``stage_config`` and ``arm_config`` of
workflows/rules/data.smk), so that editing one section of the config reruns only the jobs that read it: the data job
reads the benchmarks, a training job the common recipe, its own arm's overrides and its backend's section, an
evaluation job the eval section, the analysis its comparisons and settings. Keys are sorted: reordering a YAML file
reruns nothing.
"""

from __future__ import annotations

import json

from armlab.configfile import ConfigError
from armlab.training.backends import BACKENDS, arm_backend
from armlab.training.numerics_controls import applied, controls, numerics_of
from armlab.training.reasoning_gym_tasks import held_out

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
