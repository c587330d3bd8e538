"""What the analysis checks of a validated workflow config when the workflow starts, before any job: its ``plan``
and ``analysis`` sections and predictions (they fail now, not after training). The locks the config must run under
are the experiment's (:func:`armlab.experiment.locks.check`)."""

from __future__ import annotations

from armlab.analysis.config import Config, parse_config
from armlab.analysis.design import planning


def check(config: dict, source: str) -> Config:
    """The analysis's view of ``config`` (its typed settings); one-line errors naming ``source`` and the key."""
    planning.plan_section(config, source)
    return parse_config(config, source=source)
