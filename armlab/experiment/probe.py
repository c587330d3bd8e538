"""Measure what a config's jobs cost on this machine before running them: the wall time ``armlab plan`` prints.

Builds the experiment's data and base policy in a scratch folder, times ``probe_steps`` training steps of
every arm (seed 1) and one evaluation, and returns the seconds per step and per evaluation. ``armlab probe``
writes them to ``results/<experiment>/probe.json``, where :func:`armlab.analysis.design.planning.wall_time` reads them
when no earlier runs of every arm have manifests. An estimate: the few timed steps include each job's start-up
(more than a long run pays per step), and jobs that share the machine run somewhat slower than one alone.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path


def probe(config: dict, probe_steps: int, progress=print) -> dict:
    """``{probe_steps, setup_seconds, eval_seconds, arms: {arm: {seconds_per_step, steps}}}`` for ``config``."""
    from armlab.evals.lm_eval_tasks import write_task_configs
    from armlab.evals.run import evaluate
    from armlab.experiment.stages import stage_config
    from armlab.training import base, data
    from armlab.training.recipe import resolve_arm
    from armlab.training.train import train

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        start = time.perf_counter()
        progress("armlab probe: building the data and the base policy")
        data.write(stage_config(config, "data"), root / "data")
        base.train_base(stage_config(config, "base"), root / "data", root / "base")
        setup = time.perf_counter() - start
        eval_config = stage_config(config, "eval")
        write_task_configs(eval_config, root / "data", root / "tasks")
        start = time.perf_counter()
        evaluate(eval_config, root / "tasks", root / "base" / "policy.pt", "base", 0, root / "eval")
        eval_seconds = time.perf_counter() - start
        arms = {}
        for i, arm in enumerate(config["arms"], 1):
            progress(f"armlab probe: {i}/{len(config['arms'])} {arm}, {probe_steps} steps")
            trial = json.loads(json.dumps(stage_config(config, "train", arm)))
            trial["arms"][arm] = {
                **trial["arms"][arm],
                "steps": probe_steps,
                "checkpoint_every": probe_steps,
                "log_every": probe_steps,
            }
            start = time.perf_counter()
            train(trial, arm, 1, root / "data", root / "base" / "policy.pt", root / "runs" / arm)
            seconds = (time.perf_counter() - start) / probe_steps
            arms[arm] = {"seconds_per_step": seconds, "steps": resolve_arm(config, arm).steps}
    return {"probe_steps": probe_steps, "setup_seconds": setup, "eval_seconds": eval_seconds, "arms": arms}
