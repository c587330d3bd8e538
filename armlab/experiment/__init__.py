"""The experiment as a whole: its config validated at once, the locks it must run under, and the runs it plans.

Above training, evaluation and analysis (it reads all three's rules); the Snakefile calls :func:`load` before
any job and the rules read a :class:`~armlab.experiment.plan.RunPlan`. The results layout is
:mod:`armlab.layout`; the sequential design's lock and the predictions' lock are :mod:`armlab.experiment.locks`,
the sequential looks' controller and record of looks :mod:`armlab.experiment.sequential`, the records jobs keep of
both :mod:`armlab.registration`; what each stage checks at the start is its ``checks`` module
(:mod:`armlab.training.checks`, :mod:`armlab.evals.checks`, :mod:`armlab.analysis.checks`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from armlab import numerics, spec
from armlab.analysis.checks import check as check_analysis
from armlab.configfile import ConfigError, load_configs
from armlab.evals.checks import check as check_evaluation
from armlab.evals.engines import missing_engine
from armlab.experiment import locks
from armlab.training.numerics_controls import controls


def load(config_files: Sequence[str | Path], overrides: Mapping | None = None) -> dict:
    """The experiment's config, validated whole before any job: ``config_files`` merged (later ones update earlier
    ones), then ``overrides``; checked against the schema (generated from :mod:`armlab.spec`) and the rules of the
    whole config, then by each stage's own ``check``: the analysis's (its plan and analysis sections), the
    experiment's locks (the sequential design's lock, the locks every job so far ran under, the locked predictions:
    :func:`armlab.experiment.locks.check`), the evaluation's (the
    files of external benchmarks, the engine, lm-eval's tasks; given the typed eval section) and training's (the
    checkpoints of runs made elsewhere, reasoning-gym's prompts and draws); and the machine's numerics, the
    numerics controls' included.

    Raises :class:`~armlab.configfile.ConfigError` or ``ValueError`` (one line, naming the file and key).
    """
    # here, not at the top: it puts torch in sys.modules to load on first use, and scipy.stats then loads it (3 s)
    # in every process that imports this package for something else (armlab rescore)
    from armlab.experiment.validate import validate_config
    from armlab.training.checks import check as check_training

    source = ", ".join(map(str, config_files))
    config = validate_config(load_configs(config_files, dict(overrides or {})), source=source)
    analysis = check_analysis(config, source)  # cheap and file-free first: the analysis section fails now
    locks.check(config, analysis)
    evaluation = spec.parse(spec.Eval, config["eval"])
    check_evaluation(evaluation, config, source)
    check_training(config, source)
    problem = numerics.machine_problem(config["numerics"])
    if problem:  # every job would refuse it
        raise ConfigError(f"{source}: {problem}")
    for arm, control in controls(config).items():  # a numerics control's jobs would refuse these
        problem = numerics.capability_problem(control["capability"]) if "capability" in control else None
        if problem:
            raise ConfigError(f"{source}: arms.{arm}.numerics.capability: {problem}")
        why = missing_engine(evaluation.vllm_python) if control.get("engine") == "vllm" else None
        if why:
            raise ConfigError(f"{source}: arms.{arm}.numerics.engine: vllm: {why}")
    return config
