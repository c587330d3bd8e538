"""The jobs an experiment's config asks for, and where each reads and writes: what the workflow's rules are made of.

One :class:`RunPlan` per validated config; ``workflows/rules/common.smk`` builds it and the rules read its fields
and call its methods (Snakemake supplies only the wildcards and, under a sequential design, the runs known so far).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from armlab import layout
from armlab.analysis.config import parse_config as parse_analysis_config
from armlab.configfile import ConfigError
from armlab.contract import BASE_ARM
from armlab.files import MANIFEST
from armlab.training.backends import BACKENDS, Backend, arm_backend, backends_used, job_resources
from armlab.training.numerics_controls import controls
from armlab.training.recipe import kept_checkpoint_steps, resolve_arm

Run = tuple[str, int]


class RunPlan:
    """The runs (arm, seed) of a validated config, the backend of each arm, the base policy, and every job's paths."""

    def __init__(self, config: dict) -> None:
        self.config = config
        self.out = layout.experiment_dir(config["experiment"])
        self.analysis = parse_analysis_config(config)
        self.sequential = self.analysis.design is not None
        # under a sequential design the runs are known look by look (workflows/rules/sequential.smk)
        self.fixed_runs: list[Run] = (
            [] if self.sequential else [(arm, seed) for arm in config["arms"] for seed in config["seeds"]]
        )
        # the backend that trains each arm (its registry entry, armlab.training.backends): the arm's own `backend:`
        # key, else the experiment's; one train rule per backend used
        self.arm_backends = {arm: arm_backend(config, arm) for arm in config["arms"]}
        self.used_backends = backends_used(config)
        # the base policy is evaluated once, as arm "base" with seed 0. The builtin backend trains it; the others
        # have one only when their section names a Hugging Face checkpoint (trl.model, ...). With arms of both
        # builtin and trl (trl.model: builtin_base) it is the builtin base, scored by armlab-builtin: the TRL arms
        # start from its export, whose greedy scores are the same (tests/training/backends/test_hf_export.py)
        self.base_backend_name = "builtin" if "builtin" in self.used_backends else self.used_backends[0]
        self.base_backend = BACKENDS[self.base_backend_name]
        self.hf_base = self.base_backend.base_checkpoint(config)
        # trl.model: builtin_base: the builtin base policy is exported to a Hugging Face checkpoint (rule
        # export_base), every run starts from the export, and (TRL arms only) arm base is the export
        self.exports_base = self.base_backend.exports_base(config)
        self.has_base = self.base_backend.trains_base or self.exports_base or self.hf_base is not None
        # a backend whose runs were made elsewhere records the base checkpoint too (rule record_base, into the run
        # folder of arm base, seed 0), reading the limits in the first arm's view
        self.records_base = self.base_backend.recorded is not None and self.hf_base is not None
        # whether some arm is trained here (else the recipe's steps and checkpoints are not the runs')
        self.trains = any(BACKENDS[name].recorded is None for name in self.used_backends)
        self.base_record_config = f"{self.out}/config/train/{next(iter(config['arms']))}.json"
        # a sampled evaluation of the base varies with its sampling stream like every arm's: it is evaluated at each
        # seed the arms run (the arms' streams, so each comparison with it pairs by seed, docs/statistics.md §10);
        # a greedy one gives the same answers at every seed, so once (seed 0)
        self.base_per_seed = self.has_base and config["eval"]["temperature"] > 0
        # what a training job of each backend reads besides its config (its train rule's inputs, as --<name>)
        self.reads = {name: BACKENDS[name].reads_for(config) for name in self.used_backends}
        self.read_paths = {
            "data": f"{self.out}/data",
            "base": f"{self.out}/base/policy.pt",
            "hf_base": f"{self.out}/base_hf/model",
        }
        self.job_threads = config["threads"]  # torch threads of one job; the scheduler reserves as many cores
        # the numerics controls (training/numerics_controls.py): arm -> its numerics; each has its own evaluation view
        self.controls = controls(config)
        # the local files of eval.external benchmarks: inputs of the task configs, so that an edited file reruns them
        external = config["eval"].get("external") or {}
        self.external_files = [spec["path"] for spec in external.values() if spec["source"] == "file"]
        # analysis.verifiers: rule rescore re-grades the stored answers after the analysis; the report reads its table
        self.rescore_outputs = {
            "sensitivity": f"{self.out}/{layout.GRADER_SENSITIVITY}",
            "manifest": f"{self.out}/{layout.RESCORED}/manifest.json",
        }
        self.rescored = [self.rescore_outputs["sensitivity"]] if self.analysis.settings.verifiers else []
        self.train_resources = {name: job_resources(config, "train", name) for name in self.used_backends}
        self.eval_resources = {name: job_resources(config, "eval", name) for name in self.used_backends}

    # -------------------------------------------------------------------------------------------- paths of runs

    def job_dir(self, stage: str, arm: object = "{arm}", seed: object = "{seed}") -> str:
        """Run (arm, seed)'s folder in ``stage``; by default the rules' pattern with wildcards {arm} and {seed}."""
        return layout.job_dir(self.out, stage, arm, seed)

    def job_log(self, stage: str, arm: object = "{arm}", seed: object = "{seed}") -> str:
        """Run (arm, seed)'s log of its ``stage`` job; by default the rules' pattern."""
        return layout.job_log(self.out, stage, arm, seed)

    def base_runs(self, runs: Iterable[Run]) -> list[Run]:
        """The base policy's evaluations beside ``runs``: one at each of their seeds when sampled, else one at
        seed 0; none without a base policy."""
        if not self.has_base:
            return []
        seeds = sorted({int(seed) for _, seed in runs}) if self.base_per_seed else [0]
        return [(BASE_ARM, seed) for seed in seeds]

    def per_run(
        self, stage: str, name: str, runs: Iterable[Run], evaluated: bool = False, backends: Sequence[str] | None = None
    ) -> list[str]:
        """File ``name`` of ``stage`` for every run in ``runs`` (only the arms that ``backends`` train, when given),
        and of the base policy's evaluations (:meth:`base_runs`) first when ``evaluated``."""
        runs = list(runs)
        return [
            f"{self.job_dir(stage, arm, seed)}/{name}"
            for arm, seed in (self.base_runs(runs) if evaluated else []) + runs
            if backends is None or self.arm_backends[arm] in backends
        ]

    def run_outputs(
        self, backend: Backend, arm: object = "{arm}", seed: object = "{seed}"
    ) -> dict[str, tuple[str, bool]]:
        """A train rule's outputs: ``{name: (path pattern, whether it is a directory)}`` of ``backend``'s files (by
        default the pattern with wildcards; arm base's for rule record_base)."""
        run_dir = self.job_dir("runs", arm, seed)
        return {name: (f"{run_dir}/{path}", name in backend.directories) for name, path in backend.outputs.items()}

    # ------------------------------------------------------------------------------------------ the evaluations

    def backend_of(self, arm: str) -> Backend:
        """The backend that made ``arm``'s models (arm base: the base policy's backend)."""
        return self.base_backend if arm == BASE_ARM else BACKENDS[self.arm_backends[arm]]

    def eval_resource(self, key: str) -> object | Callable[[str], object]:
        """An evaluation job's resource ``key``: a constant when one backend trains every arm, else a function of
        the arm (the backend of its arm; arm base: the base's backend)."""
        if len(self.used_backends) == 1:
            return self.eval_resources[self.used_backends[0]][key]
        return lambda arm: self.eval_resources[self.base_backend_name if arm == BASE_ARM else self.arm_backends[arm]][
            key
        ]

    def checkpoint_of(self, arm: str, seed: object) -> str | list:
        """What the evaluation of (arm, seed) reads: the checkpoint file, or the run's manifest naming its
        checkpoint; for arm base the exported or trained base policy (nothing: a Hugging Face checkpoint)."""
        if arm == BASE_ARM:
            if self.exports_base:
                return f"{self.out}/base_hf/manifest.json"
            if self.records_base:
                return f"{self.job_dir('runs', BASE_ARM, 0)}/manifest.json"
            return self.read_paths["base"] if self.base_backend.trains_base else []
        backend = BACKENDS[self.arm_backends[arm]]
        run_dir = self.job_dir("runs", arm, seed)
        return f"{run_dir}/{backend.checkpoint}" if backend.checkpoint else f"{run_dir}/manifest.json"

    def checkpoint_args(self, arm: str, checkpoint: str) -> str:
        """The evaluation's flags naming the lm-eval model and ``checkpoint`` (what :meth:`checkpoint_of` gave;
        see armlab.evals.run): those of the backend that made the arm's models."""
        backend = self.backend_of(arm)
        model = f"--model {backend.lm_eval_model}"
        if arm == BASE_ARM and (self.exports_base or self.records_base):
            return f"{model} --run-manifest {checkpoint}"
        if arm == BASE_ARM and not backend.trains_base:
            hf_base = self.hf_base
            if hf_base is None:  # no base policy (has_base is False): nothing to evaluate
                raise ConfigError(f"backend {self.base_backend_name} names no base checkpoint to evaluate")
            return f"{model} --hf-checkpoint {shlex.quote(hf_base)}"
        return f"{model} --{'checkpoint' if backend.checkpoint else 'run-manifest'} {checkpoint}"

    def recorded(self, arm: str) -> bool:
        """Whether ``arm``'s runs (arm base: the base checkpoint) were made elsewhere and recorded: its evaluations
        read the record as an ancient input, rerun when the record's checkpoints change (:meth:`changed_records`),
        not when a description in the arm's view does."""
        return self.backend_of(arm).recorded is not None and (arm != BASE_ARM or self.records_base)

    def arms_pattern(self, backend_name: str) -> str:
        """A wildcard constraint matching exactly the arms that ``backend_name`` trains (anchored, names escaped)."""
        return _alternatives(arm for arm, name in self.arm_backends.items() if name == backend_name)

    # ---------------------------------------------------------------------------------------- numerics controls

    def eval_config(self, arm: str) -> str:
        """The evaluation view the evaluations of ``arm`` read: a numerics control's own (its numerics applied, so
        that changing them reruns its evaluations alone), else the experiment's."""
        return f"{self.out}/config/eval/{arm}.json" if arm in self.controls else f"{self.out}/config/eval.json"

    def threads_of(self, arm: str) -> int:
        """torch threads of ``arm``'s training and evaluation jobs, the cores the scheduler reserves for each: a
        numerics control's own, else the experiment's."""
        return self.controls.get(arm, {}).get("threads", self.job_threads)

    def controls_pattern(self) -> str:
        """A wildcard constraint matching exactly the numerics controls (anchored, names escaped)."""
        return _alternatives(self.controls)

    # ------------------------------------------------------------------------------------- accuracy over training

    def kept_models(self, arm: str) -> int:
        """How many models a run of ``arm`` keeps: its checkpoints before the last step, and the final model (a
        run made elsewhere: the most any of its seeds has)."""
        recorded = BACKENDS[self.arm_backends[arm]].recorded
        if recorded is not None:
            return recorded.kept_models(self.config, arm)
        return len(kept_checkpoint_steps(resolve_arm(self.config, arm))) + 1

    def curve_manifests(self, runs: Iterable[Run]) -> list[str]:
        """Every run's checkpoint evaluation; an arm whose backend keeps no checkpoints is refused by name."""
        for arm, name in self.arm_backends.items():
            if not BACKENDS[name].keeps_checkpoints(self.config):
                raise ConfigError(
                    f"arms.{arm}: backend {name} keeps no intermediate checkpoints, so it has no curve"
                    + (" (name them with checkpoints.steps)" if BACKENDS[name].recorded is not None else "")
                )
        return self.per_run("curves", "manifest.json", runs)

    # ---------------------------------------------------------------------------------------- repairs of results

    def changed_records(self) -> list[tuple[str, list[Path]]]:
        """Why each record of runs made elsewhere (and of the base checkpoint) no longer holds, and the files to
        remove so that the workflow records and evaluates again what changed: a record whose checkpoints changed on
        disk (with the evaluation and curve made from it), one whose step log changed (with its curve), an
        evaluation or a curve whose checkpoints' sha256 are not those the record names (made from an earlier
        record). Only files that exist are listed; nothing outside the experiment's folder."""
        found = []
        for arm, seed in ([(BASE_ARM, 0)] if self.has_base else []) + self.fixed_runs:
            if not self.recorded(arm):
                continue
            backend, run_dir = self.backend_of(arm), Path(self.job_dir("runs", arm, seed))
            record = [run_dir / name for name in backend.outputs.values()]
            # the evaluations made from the record: the base checkpoint's at every seed it is evaluated at
            evaluations = self.base_runs(self.fixed_runs) if arm == BASE_ARM else [(arm, seed)]
            curve = [
                Path(self.job_dir("curves", evaluated_arm, evaluated_seed)) / name
                for evaluated_arm, evaluated_seed in evaluations
                for name in ("scores.parquet", "manifest.json")
            ]
            change = backend.recorded.changed(self.config, arm, seed, run_dir)  # type: ignore[union-attr]
            if change is not None:
                reason, checkpoints_changed = change
                found.append((reason, record + (self.results_built_on(run_dir) if checkpoints_changed else curve)))
                continue
            for evaluated_arm, evaluated_seed in evaluations:
                evaluation = self.job_dir("evals", evaluated_arm, evaluated_seed)
                for stage, outputs in (("evals", self.results_built_on(evaluation)), ("curves", [])):
                    job = Path(self.job_dir(stage, evaluated_arm, evaluated_seed))
                    evaluated, recorded = _sha256s(job / MANIFEST, stage), _sha256s(run_dir / MANIFEST, stage)
                    if evaluated is not None and recorded is not None and evaluated != recorded:
                        reason = f"{job}: evaluated checkpoints other than {run_dir} records now"
                        found.append((reason, [job / "scores.parquet", job / MANIFEST, *outputs]))
        return [(reason, [path for path in paths if path.is_file()]) for reason, paths in found]

    def results_built_on(self, job_dir: str | Path) -> list[Path]:
        """The results made from a job's outputs, up to scores.parquet (the evaluation's and the curve's for a
        training job); removed with a damaged output, they lead Snakemake back through the evaluation to the job.

        A missing intermediate file alone reruns nothing while the results made from it are in place.
        """
        job = Path(job_dir).relative_to(self.out).parts
        if job[0] not in ("base", "base_hf", "runs", "evals"):
            return []
        built = [Path(self.out) / "scores.parquet"]
        if job[0] != "evals":
            arm, seed = (BASE_ARM, 0) if job[0] in ("base", "base_hf") else layout.run_of(Path(*job[1:3]))
            if arm == BASE_ARM:  # every evaluation of the base policy (trained, exported or recorded)
                design = self.analysis.design
                seeds = range(design.start, design.start + design.max) if design else self.config["seeds"]
                jobs = self.base_runs(("", seed) for seed in seeds)
            else:
                jobs = [(arm, int(seed))]
            built += [
                Path(self.job_dir(stage, arm, seed)) / name
                for arm, seed in jobs
                for stage in ("evals", "curves")
                for name in ("scores.parquet", "manifest.json")
            ]
        return built


def _alternatives(names: Iterable[str]) -> str:
    """A regular expression matching exactly one of ``names`` (escaped), as a group."""
    return "(?:" + "|".join(re.escape(name) for name in names) + ")"


def _sha256s(manifest: Path, stage: str = "evals") -> list | None:
    """The checkpoints' sha256 a manifest names: an evaluation's one, a curve's in step order; a run record's final
    one (``stage`` evals) or all (curves). None where the manifest is not there or names none."""
    try:
        record = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    if isinstance(record.get("checkpoints"), list) and stage == "curves":
        return [model.get("sha256") for model in record["checkpoints"] if isinstance(model, dict)]
    return [record["checkpoint_sha256"]] if "checkpoint_sha256" in record else None
