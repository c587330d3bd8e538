"""What training checks of a validated config when the workflow starts, beyond
:func:`~armlab.training.config.validate_config` (the schema and the rules of the whole config): the checkpoints of
runs made elsewhere (their backend's ``recorded.check_files``), the prompts of ``trl.reasoning_gym``, and that every
reasoning-gym draw a job makes is the same in every process."""

from __future__ import annotations

from armlab.configfile import ConfigError
from armlab.contract import BUILTIN_BASE
from armlab.training.backends import BACKENDS, backends_used
from armlab.training.config import check_training_prompts
from armlab.training.reasoning_gym_tasks import check_reproducible, draws_of


def check(config: dict, source: str) -> None:
    """One-line ``ConfigError`` naming ``source`` and the key."""
    for name in backends_used(config):  # the checkpoints of runs made elsewhere, found and checked now
        recorded = BACKENDS[name].recorded
        if recorded is not None:
            try:
                recorded.check_files(config)
            except ValueError as err:
                raise ConfigError(f"{source}: {err}") from None
    check_training_prompts(config, source, character_level=config["trl"].get("model") in (None, BUILTIN_BASE))
    check_reproducible(draws_of(config, source))  # reasoning-gym's items are drawn anew in each job
