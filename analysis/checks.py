"""What the analysis checks of a validated workflow config when the workflow starts, before any job: its ``plan``
and ``analysis`` sections and predictions (they fail now, not after training), a started sequential design's lock,
that every job so far ran under the locks that exist now, and that every locked prediction is still a comparison of
the config."""

from __future__ import annotations

from armlab import layout, registration
from armlab.analysis import predictions, waves
from armlab.analysis.config import Config, parse_config
from armlab.analysis.design import planning


def check(config: dict, source: str) -> Config:
    """The analysis's view of ``config`` (its typed settings); one-line errors naming ``source`` and the key."""
    planning.plan_section(config, source)
    analysis = parse_config(config, source=source)
    out = layout.experiment_dir(config["experiment"])
    if analysis.design is not None:
        waves.check_lock(out, config)
    registration.against_locks(out)
    predictions.check_withdrawn(out, analysis)  # a locked prediction's comparison is still in the config
    return analysis
