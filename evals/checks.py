"""What the evaluation checks of a validated config when the workflow starts, before any job: the files and prompt
templates of ``eval.external``, the engine of Hugging Face checkpoints, lm-eval's own tasks and the verifiers
``analysis.verifiers`` names (each check is its module's: :mod:`~armlab.evals.catalogue`, :mod:`~armlab.evals.engines`,
:mod:`~armlab.evals.lm_eval_tasks`, :mod:`~armlab.evals.rescore`)."""

from __future__ import annotations

from armlab import spec
from armlab.configfile import ConfigError
from armlab.contract import BUILTIN_BASE
from armlab.evals.catalogue import check_external
from armlab.evals.engines import check_engine
from armlab.evals.lm_eval_tasks import check_existing_tasks
from armlab.evals.rescore import check_verifiers
from armlab.training.backends import BACKENDS, backends_used


def check(section: spec.Eval, config: dict, source: str) -> None:
    """Check the typed eval ``section`` of ``config`` (which the checks of the external benchmarks and tasks read
    whole: their domains, ``model.max_len``, ``limits``); one-line ``ConfigError`` naming ``source`` and the key."""
    used = backends_used(config)
    models = {BACKENDS[name].lm_eval_model for name in used}
    # the builtin policy, its export and TRL's tiny Qwen2 read characters (hf_export.char_tokenizer), not tokens
    characters = "armlab-builtin" in models or ("trl" in used and config["trl"].get("model") in (None, BUILTIN_BASE))
    check_external(config, source, character_level=characters)
    check_engine(section, source, hugging_face="hf" in models)
    check_existing_tasks(config, source)
    check_verifiers(config["analysis"].get("verifiers") or [], f"{source}: analysis.verifiers", ConfigError)
