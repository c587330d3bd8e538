"""Training backends: what turns (recipe, arm, seed) into a checkpoint, in one registry (as lm-eval's models).

Each backend declares how its part of the config is checked, the Hugging Face checkpoint evaluated as its
base arm, the GPUs and resources a job asks for, its training entry point, what a run writes, and the lm-eval
model that scores its checkpoints; the workflow (``workflows/rules/``), the config validation and the
evaluation read these and never branch on the name. Adding a backend is one module with its ``main`` (the
command line of :func:`armlab.training.utils.run_arguments`), one :data:`BACKENDS` entry, its config section (a
dataclass of :mod:`armlab.spec`, a field of its ``Experiment``; then ``python -m armlab.spec --write``), and one
test. See docs/architecture.md, "Backends".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from armlab.contract import BUILTIN_BASE
from armlab.registry import Registry
from armlab.spec import ARM_KEYS, Checkpoints, Recipe, default_of
from armlab.training.backends import checkpoints


@dataclass(frozen=True)
class RecordedRuns:
    """How a backend whose runs were made elsewhere finds them (its run job records checkpoints, trains nothing)."""

    check_files: Callable[
        [dict], None
    ]  # every run's and the base's files, before any job: raise ValueError("key: why")
    # why a run's record (in its folder) no longer matches the files on disk, and whether its checkpoints changed
    # (else only what the evaluations do not read); None: it matches
    changed: Callable[[dict, str, int, Path], tuple[str, bool] | None]
    kept_models: Callable[[dict, str], int]  # the most checkpoints a run of the arm has (its curve job's runtime)


@dataclass(frozen=True)
class Backend:
    """One training backend, as the workflow, the validation and the evaluation see it."""

    train_module: str  # run as `python -m <train_module> --config C --arm A --seed S [--data D] [--base B] --out O`
    reads: tuple[str, ...]  # workflow inputs the trainer takes besides its config: "data", "base" (the base policy)
    outputs: dict[str, str]  # rule output name -> path in the run directory
    lm_eval_model: str  # the lm-eval model (registry name) that scores its checkpoints
    checkpoint: str | None  # the file evaluation reads in the run directory; None: the manifest names it
    check: Callable[[dict, Recipe, str], None] = lambda config, recipe, arm: None  # raise ValueError("key: why")
    section: str | None = None  # the config section with its settings (gpus, eval_gpus, mem_mb, runtime, ...)
    base_checkpoint: Callable[[dict], str | None] = lambda config: None  # a HF checkpoint evaluated as arm "base"
    # the workflow trains the builtin base policy, exports it to a HF checkpoint (rule export_base), the trainer
    # starts from it (read "hf_base") and arm "base" is that checkpoint, scored by lm_eval_model
    exports_base: Callable[[dict], bool] = lambda config: False
    directories: tuple[str, ...] = ()  # the outputs that are directories (a Hugging Face checkpoint)
    step_logs: bool = False  # its steps.parquet has the builtin trainer's columns (the report's training curves)
    # its runs keep intermediate checkpoints under the config: checkpoints/step-NNNNNN[.pt] every
    # recipe.checkpoint_every, or those a record names (evals/curves.py)
    keeps_checkpoints: Callable[[dict], bool] = lambda config: False
    arm_keys: tuple[
        str, ...
    ] = ()  # an arm's keys besides its recipe overrides and backend (training/recipe.py ARM_KEYS)
    # the part of its section that a stage's view ("train" or "eval") holds; None: all of it
    section_view: Callable[[dict, str], dict] | None = None
    # its runs were made elsewhere: the run job records their checkpoints, the base checkpoint is recorded too (rule
    # record_base), and a record that no longer matches its files is removed at the workflow's start
    recorded: RecordedRuns | None = None
    # its trainer sets torch's threads and kernels (armlab.numerics.start): not a command's, nor a record of runs
    # made elsewhere
    sets_numerics: bool = True
    # an arm may name it in its own `backend:` key (arm_backend), in an experiment whose backend is one such too
    per_arm: bool = False
    train_resources: dict = field(default_factory=lambda: {"mem_mb": 2000, "runtime": 120})
    eval_resources: dict = field(default_factory=lambda: {"mem_mb": 16000, "runtime": 240})

    @property
    def trains_base(self) -> bool:
        """The workflow trains the base policy for this backend (rule base_policy) and evaluates it as arm base."""
        return "base" in self.reads

    def reads_for(self, config: dict) -> tuple[str, ...]:
        """The workflow inputs of a training job under ``config``: ``reads``, and "hf_base" when it exports the base."""
        return self.reads + (("hf_base",) if self.exports_base(config) else ())


def _trl_builtin_base(config: dict) -> bool:
    return config["trl"].get("model") == BUILTIN_BASE


def _check_trl_model(config: dict) -> None:
    """``trl.model`` is ``builtin_base`` or a local Hugging Face checkpoint; nothing is fetched from a hub."""
    from pathlib import Path

    model = config["trl"].get("model")
    if model is not None and model != BUILTIN_BASE and not (Path(model) / "config.json").is_file():
        raise ValueError(
            f"trl.model: {model!r} is neither {BUILTIN_BASE!r} (the builtin base policy, exported) nor a local "
            f"Hugging Face checkpoint (a directory with config.json); nothing is fetched from a hub"
        )


def _check_trl(config: dict, recipe: Recipe, arm: str) -> None:
    from armlab.training.backends.trl_backend import check_recipe

    _check_trl_model(config)
    try:
        check_recipe(recipe)
    except ValueError as err:
        raise ValueError(f"arms.{arm}.{err} (backend: trl)") from None


def _check_command(config: dict, recipe: Recipe, arm: str) -> None:
    from armlab.training.backends.command import check_arm

    try:
        check_arm(config["command"], recipe, {k: v for k, v in config["arms"][arm].items() if k not in ARM_KEYS})
    except ValueError as err:
        key = (
            f"command.{err}"
            if str(err).startswith(("template", "checkpoint", "estimator_fields"))
            else f"arms.{arm}.{err}"
        )
        raise ValueError(f"{key} (backend: command)") from None


BACKENDS: Registry[Backend] = Registry(
    "backend",
    {
        # armlab's own GRPO loop on the tiny CPU policy (training/train.py), scored by the armlab-builtin lm-eval model
        "builtin": Backend(
            train_module="armlab.training.train",
            reads=("data", "base"),
            outputs={"policy": "policy.pt", "steps": "steps.parquet", "manifest": "manifest.json"},
            per_arm=True,
            lm_eval_model="armlab-builtin",
            checkpoint="policy.pt",
            step_logs=True,
            keeps_checkpoints=lambda config: True,
            arm_keys=("leak",),
            eval_resources={"mem_mb": 2000, "runtime": 30},
        ),
        # TRL's GRPOTrainer on a Hugging Face causal LM (training/backends/trl_backend.py)
        "trl": Backend(
            train_module="armlab.training.backends.trl_backend",
            reads=("data",),
            outputs={"model": "model", "steps": "steps.parquet", "manifest": "manifest.json"},
            directories=("model",),
            per_arm=True,
            lm_eval_model="hf",
            checkpoint=None,
            check=_check_trl,
            section="trl",
            base_checkpoint=lambda config: None if _trl_builtin_base(config) else config["trl"].get("model"),
            exports_base=_trl_builtin_base,
            keeps_checkpoints=lambda config: True,
        ),
        # a user's trainer (verl, OpenRLHF, ...) run from a command template (training/backends/command.py)
        "command": Backend(
            train_module="armlab.training.backends.command",
            reads=(),
            sets_numerics=False,
            outputs={"manifest": "manifest.json"},
            lm_eval_model="hf",
            checkpoint=None,
            check=_check_command,
            section="command",
            base_checkpoint=lambda config: config["command"].get("base_checkpoint"),
        ),
        # runs trained elsewhere: their checkpoints found by pattern, checked and recorded, nothing trained
        # (training/backends/checkpoints.py; the run job is armlab/experiment/record_checkpoints.py, which reads step
        # logs with armlab steps' readers, a layer above training)
        "checkpoints": Backend(
            train_module="armlab.experiment.record_checkpoints",
            reads=(),
            outputs={"manifest": "manifest.json", "record": checkpoints.RECORD},
            lm_eval_model="hf",
            checkpoint=None,
            check=checkpoints.check_arm,
            section="checkpoints",
            base_checkpoint=lambda config: config["checkpoints"].get("base"),
            keeps_checkpoints=lambda config: "steps" in config["checkpoints"],
            arm_keys=checkpoints.ARM_OWN_KEYS,
            sets_numerics=False,
            section_view=checkpoints.run_section,
            recorded=RecordedRuns(checkpoints.check_files, checkpoints.changed, checkpoints.kept_models),
            # its recording job's runtime unless checkpoints.runtime says (the spec's default, not filled in)
            train_resources={"mem_mb": 1000, "runtime": default_of(Checkpoints, "runtime")},
        ),
    },
)


def arm_backend(config: dict, arm: str) -> str:
    """The backend's name that trains ``arm``: its own ``backend:`` key, else the experiment's ``backend``."""
    return (config["arms"][arm] or {}).get("backend", config["backend"])


def backends_used(config: dict) -> list[str]:
    """The backends that train the experiment's arms, each once, in arm order (the experiment's when it has none)."""
    return list(dict.fromkeys(arm_backend(config, arm) for arm in config["arms"])) or [config["backend"]]


def backend_of(config: dict, arm: str | None = None) -> Backend:
    """The registry entry of the experiment's backend, or, with ``arm``, of the backend that trains that arm."""
    return BACKENDS[config["backend"] if arm is None else arm_backend(config, arm)]


def job_resources(config: dict, stage: str, backend_name: str | None = None) -> dict:
    """``mem_mb``, ``runtime`` (minutes) and ``gpu`` of one training (``stage="train"``) or evaluation job of the
    experiment's backend, or of ``backend_name`` (an arm's backend)."""
    backend = BACKENDS[backend_name or config["backend"]]
    resources = dict(backend.train_resources if stage == "train" else backend.eval_resources)
    settings = config[backend.section] if backend.section else {}
    if stage == "train":
        resources.update({key: settings[key] for key in ("mem_mb", "runtime") if key in settings})
    resources["gpu"] = settings.get("gpus" if stage == "train" else "eval_gpus", 0)
    return resources
