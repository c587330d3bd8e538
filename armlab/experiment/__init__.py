"""The experiment as a whole: its config validated at once, the locks it must run under, and the runs it plans.

Above training, evaluation and analysis (it reads all three's rules); the Snakefile calls :func:`load` before
any job and the rules read a :class:`~armlab.experiment.plan.RunPlan`. The results layout is
:mod:`armlab.layout`; the sequential design's lock and record of looks are :mod:`armlab.analysis.waves`, the
predictions' lock :mod:`armlab.analysis.predictions`, the records jobs keep of both :mod:`armlab.registration`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from armlab import layout, numerics, registration
from armlab.analysis import planning, predictions, waves
from armlab.analysis.config import parse_config as parse_analysis_config
from armlab.configfile import ConfigError, load_configs
from armlab.contract import BUILTIN_BASE
from armlab.evals.catalogue import check_external
from armlab.evals.engines import DEFAULT_PYTHON, check_engine, missing_engine
from armlab.evals.lm_eval_tasks import check_existing_tasks
from armlab.evals.rescore import check_verifiers
from armlab.training.backends import BACKENDS, backends_used
from armlab.training.numerics_controls import controls
from armlab.training.reasoning_gym_tasks import check_reproducible, draws_of


def load(config_files: Sequence[str | Path], overrides: Mapping | None = None) -> dict:
    """The experiment's config, validated whole before any job: ``config_files`` merged (later ones update earlier
    ones), then ``overrides``; its analysis and plan sections parsed; under a sequential design whose first wave
    started, the design unchanged since it was locked; every job so far run under the locks that exist now; and
    every locked prediction still a comparison of the config.

    Raises :class:`~armlab.configfile.ConfigError` or ``ValueError`` (one line, naming the file and key).
    """
    # here, not at the top: it puts torch in sys.modules to load on first use, and scipy.stats then loads it (3 s)
    # in every process that imports this package for something else (armlab rescore)
    from armlab.training.config import check_training_prompts, validate_config

    source = ", ".join(map(str, config_files))
    config = validate_config(load_configs(config_files, dict(overrides or {})), source=source)
    planning.plan_section(config, source)  # the analysis section fails now, not after training
    # files read and schemas checked now, not in the evaluation jobs
    used = backends_used(config)
    models = {BACKENDS[name].lm_eval_model for name in used}
    # the builtin policy, its export and TRL's tiny Qwen2 read characters (hf_export.char_tokenizer), not tokens
    characters = "armlab-builtin" in models or ("trl" in used and config["trl"].get("model") in (None, BUILTIN_BASE))
    for name in used:  # the checkpoints of runs made elsewhere, found and checked now
        recorded = BACKENDS[name].recorded
        if recorded is not None:
            try:
                recorded.check_files(config)
            except ValueError as err:
                raise ConfigError(f"{source}: {err}") from None
    check_external(config, source, character_level=characters)
    check_training_prompts(config, source, character_level=config["trl"].get("model") in (None, BUILTIN_BASE))
    check_reproducible(draws_of(config, source))  # reasoning-gym's items are drawn anew in each job
    check_engine(config, source, hugging_face="hf" in models)
    check_existing_tasks(config, source)
    check_verifiers(config["analysis"].get("verifiers") or [], f"{source}: analysis.verifiers", ConfigError)
    problem = numerics.machine_problem(config["numerics"])
    if problem:  # every job would refuse it
        raise ConfigError(f"{source}: {problem}")
    for arm, spec in controls(config).items():  # a control's jobs would refuse these
        problem = numerics.capability_problem(spec["capability"]) if "capability" in spec else None
        if problem:
            raise ConfigError(f"{source}: arms.{arm}.numerics.capability: {problem}")
        python = config["eval"].get("vllm_python", DEFAULT_PYTHON)
        why = missing_engine(python) if spec.get("engine") == "vllm" else None
        if why:
            raise ConfigError(f"{source}: arms.{arm}.numerics.engine: vllm: {why}")
    out = layout.experiment_dir(config["experiment"])
    analysis = parse_analysis_config(config, source=source)
    if analysis.design is not None:
        waves.check_lock(out, config)
    registration.against_locks(out)
    predictions.check_withdrawn(out, analysis)  # a locked prediction's comparison is still in the config
    return config
