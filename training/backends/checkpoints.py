"""The checkpoints backend: runs trained elsewhere (verl, OpenRLHF, TRL …), evaluated without training anything.

Each (arm, seed) is a Hugging Face model folder that ``checkpoints.pattern`` names (``{arm}`` and ``{seed}`` filled
in; ``*`` and ``?`` match within one folder name), and its intermediate checkpoints are the folders that
``checkpoints.steps`` matches with ``{step}`` a whole number. Before any job every run's folders are found and
checked (:func:`check_files`): exactly one final checkpoint per run, a Hugging Face model folder (``config.json``
with a ``model_type``, weights, every shard an index names, a tokenizer), nothing but regular files and folders
below it (a FIFO, a device, a dangling link or a loop of links is refused), within ``limits.checkpoint_files`` and
``limits.checkpoint_bytes``. Each refusal is one line naming the (arm, seed) and the path.

The run job (:mod:`armlab.experiment.record_checkpoints`) hashes every file (streamed) and writes the run's record,
``checkpoints.json`` (:func:`hashed`: each model's step, folder, files with their size, sha256 and the
``os.stat`` identity they were hashed at, and the model's own sha256 over its files), beside the run manifest the
evaluation reads. Nothing is ever written inside the checkpoints' folders. The evaluation checks every file
against the record before it loads the model (:func:`recorded_models`), and at the workflow's start a record whose
files changed since (another size, modification or change time, another folder matching, other steps) is found by
:func:`changed` and removed with the evaluations made from it, so that the changed checkpoint is recorded and
evaluated again.
"""

from __future__ import annotations

import dataclasses
import errno
import glob
import hashlib
import json
import os
import re
import stat
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from armlab.configfile import limits_of
from armlab.contract import BASE_ARM
from armlab.files import BadFile, file_kind, file_sha256, read_json, regular_file, verify_manifest
from armlab.layout import CHECKPOINT_RECORD
from armlab.training.recipe import ARM_KEYS, METHOD_FIELDS, Recipe

RECORD = CHECKPOINT_RECORD  # the run's record of its checkpoints, beside its manifest
# the placeholders each pattern takes (all of them required)
PLACEHOLDERS = {"pattern": ("arm", "seed"), "steps": ("arm", "seed", "step"), "step_log.pattern": ("arm", "seed")}
WEIGHTS = ("*.safetensors", "pytorch_model*.bin")  # what transformers and vLLM load a Hugging Face model from
INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")  # a sharded model's map of its shards
TOKENIZERS = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
# the keys of the section the run job reads (its training view), and the limits it reads the run's files within
RUN_KEYS = ("pattern", "steps", "final_step", "step_log")
LIMITS = ("checkpoint_bytes", "checkpoint_files", "input_file_bytes", "json_file_bytes", "input_line_bytes")
ARM_OWN_KEYS = ("description", "claims")  # an arm's keys in a checkpoints experiment: for the report only


@dataclass(frozen=True)
class Model:
    """One checkpoint of a run: its step (None: unknown, a run without intermediate checkpoints), its folder (links
    resolved), and its files: relative POSIX path -> ``[size, st_mtime_ns, st_ctime_ns]``."""

    step: int | None
    path: Path
    files: dict[str, list[int]]


@dataclass(frozen=True)
class RecordedModel:
    """A checkpoint as a run's record names it, its files checked against their sha256."""

    step: int | None
    path: Path
    sha256: str


# ----------------------------------------------------------------------------------------------- the config


def check_section(section: Mapping) -> None:
    """The patterns of ``checkpoints`` name their placeholders and nothing else: ``ValueError`` naming the key."""
    if "pattern" not in section and "steps" not in section:
        raise ValueError("checkpoints: give pattern (each run's final checkpoint), steps (its checkpoints), or both")
    if "final_step" in section and not ("steps" in section and "pattern" in section):
        raise ValueError(
            "checkpoints.final_step: the step of the final checkpoint (pattern) among the intermediate ones (steps); "
            "give both pattern and steps, or drop it"
        )
    for key, names in PLACEHOLDERS.items():
        text = section.get("step_log", {}).get("pattern") if key == "step_log.pattern" else section.get(key)
        if text is None:
            continue
        try:
            fields = [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]
        except ValueError:
            fields = ["{"]
        unknown = sorted(set(fields) - set(names))
        missing = [name for name in names if name not in fields]
        if unknown or missing or "[" in text or "]" in text or "{{" in text or "}}" in text:
            raise ValueError(
                f"checkpoints.{key}: {text!r}: expected a path with the placeholders "
                f"{', '.join('{' + n + '}' for n in names)} (each at least once) and no other braces or [ ]; "
                f"* and ? match within a folder name"
            )


def check_arm(config: dict, recipe: Recipe, arm: str) -> None:
    """An arm of a checkpoints experiment is a plain name (a description and the recipe its runs claim, for the
    report), its seeds a list, its patterns well-formed (:func:`check_section`): ``ValueError`` naming the key."""
    check_section(config["checkpoints"])
    if isinstance(config["seeds"], dict):
        raise ValueError(
            "seeds: a sequential design adds seeds look by look, but the checkpoints backend evaluates runs that "
            "are already trained; list their seeds"
        )
    spec = config["arms"][arm]
    for key in spec:
        if key not in ARM_KEYS:
            raise ValueError(
                f"arms.{arm}.{key}: the checkpoints backend trains nothing, so an arm overrides no recipe key; write "
                f"what its runs were trained with under arms.{arm}.claims (shown in the report)"
            )
    if not isinstance(spec.get("description", ""), str):
        raise ValueError(f"arms.{arm}.description: expected text, got {spec['description']!r}")
    claims = spec.get("claims", {})
    if not isinstance(claims, dict):
        raise ValueError(f"arms.{arm}.claims: expected a mapping of recipe keys to values, got {claims!r}")
    keys = sorted(field.name for field in dataclasses.fields(Recipe))
    for key, value in claims.items():
        if key not in keys:
            raise ValueError(f"arms.{arm}.claims.{key}: not a recipe key; expected one of {keys}")
        scalar = isinstance(value, (str, int, float, bool))
        if not (scalar or (key in METHOD_FIELDS and isinstance(value, dict) and "name" in value)):
            raise ValueError(f"arms.{arm}.claims.{key}: expected a value of the recipe key, got {value!r}")


def run_section(config: dict, stage: str) -> dict:
    """The part of ``checkpoints`` a stage's view holds: the run job's patterns and limits (not the base, which
    rule record_base is given, so that a new base records no run again), and the evaluation's ``streams_of``."""
    section = config["checkpoints"]
    if stage == "eval":
        return {key: section[key] for key in ("streams_of",) if key in section}
    limits = limits_of("config", config)
    return {key: section[key] for key in RUN_KEYS if key in section} | {"limits": {k: limits[k] for k in LIMITS}}


# ------------------------------------------------------------------------------------------ finding checkpoints


def _run(arm: str, seed: int) -> str:
    return f"({arm}, seed {seed})"


def _filled(pattern: str, arm: str, seed: int) -> str:
    return pattern.replace("{arm}", arm).replace("{seed}", str(seed))


PLACEHOLDER_REGEX = {"arm": "[^/]+", "seed": r"\d+", "step": r"\d+"}


def _regex(pattern: str) -> re.Pattern:
    """``pattern`` as a regular expression: ``*`` and ``?`` within a folder name; each placeholder captured by its
    name ({arm} a name, {seed} and {step} whole numbers; a second occurrence repeats the first)."""
    pieces, named = [], set()
    for piece in re.split(r"(\{arm\}|\{seed\}|\{step\}|\*|\?)", pattern):
        name = piece[1:-1] if piece.startswith("{") and piece[1:-1] in PLACEHOLDER_REGEX else None
        if name:
            pieces.append(f"(?P={name})" if name in named else f"(?P<{name}>{PLACEHOLDER_REGEX[name]})")
            named.add(name)
        else:
            pieces.append({"*": "[^/]*", "?": "[^/]"}.get(piece, re.escape(piece)))
    return re.compile("".join(pieces))


def _matches(pattern: str) -> list[str]:
    """The paths a pattern matches, its placeholders any folder name (a path without wildcards: itself, where it
    exists or is a link)."""
    return sorted(glob.glob(re.sub(r"\{(arm|seed|step)\}", "*", pattern)))


def _elsewhere(pattern: str, arm: str) -> str:
    """What a pattern finds on disk for other runs, said when it finds nothing for one: the seeds of its arm, else
    the arms there."""
    regex = _regex(pattern)
    found = [match for path in _matches(pattern) if (match := regex.fullmatch(path))]
    seeds = sorted({int(m["seed"]) for m in found if m["arm"] == arm})
    if seeds:
        return f"; on disk for arm {arm}: seed(s) {', '.join(map(str, seeds[:10]))}"
    arms = sorted({m["arm"] for m in found})
    return f"; on disk: arm(s) {', '.join(arms[:10])}" if arms else "; it matches no run on disk"


def step_paths(section: Mapping, arm: str, seed: int) -> list[tuple[int | None, str]]:
    """(step, path) of the run's checkpoints in step order, the final one last, from the patterns alone (no file
    is read): ``ValueError`` naming the key, the run and the path when a pattern finds no folder, two folders for
    the final checkpoint or for one step, or the final checkpoint's step is unknown."""
    steps: dict[int, str] = {}
    if "steps" in section:
        pattern = _filled(section["steps"], arm, seed)
        regex = _regex(pattern)
        for path in _matches(pattern):
            match = regex.fullmatch(path)
            if match:
                step = int(match["step"])
                if step in steps:
                    raise ValueError(
                        f"checkpoints.steps: run {_run(arm, seed)}: {steps[step]} and {path} are both step {step}; "
                        f"expected one checkpoint per step"
                    )
                steps[step] = path
        if not steps:
            raise ValueError(
                f"checkpoints.steps: run {_run(arm, seed)}: {pattern}: matches no checkpoint"
                f"{_elsewhere(section['steps'], arm)}"
            )
    if "pattern" not in section:  # the final checkpoint is the last step's
        return sorted(steps.items())
    pattern = _filled(section["pattern"], arm, seed)
    found = _matches(pattern)
    if not found:
        raise ValueError(
            f"checkpoints.pattern: run {_run(arm, seed)}: {pattern}: no checkpoint there"
            f"{_elsewhere(section['pattern'], arm)}"
        )
    if len(found) > 1:
        raise ValueError(
            f"checkpoints.pattern: run {_run(arm, seed)}: {pattern}: {len(found)} folders match ({found[0]}, "
            f"{found[1]}{', …' if len(found) > 2 else ''}); expected one final checkpoint per run"
        )
    final = found[0]
    same = [step for step, path in steps.items() if os.path.realpath(path) == os.path.realpath(final)]
    final_step = same[0] if same else section.get("final_step")
    if steps and final_step is None:
        raise ValueError(
            f"checkpoints.final_step: run {_run(arm, seed)}: the final checkpoint {final} is none of "
            f"checkpoints.steps' matches, so its step is unknown; give it"
        )
    if final_step in steps and not same:
        raise ValueError(
            f"checkpoints.final_step: run {_run(arm, seed)}: step {final_step} is also {steps[final_step]}; expected "
            f"the final checkpoint's own step"
        )
    return [*sorted((s, p) for s, p in steps.items() if s != final_step), (final_step, final)]


def _stat(path: Path) -> os.stat_result:
    """``os.stat`` of ``path`` (links followed), or ``ValueError`` saying why it cannot be read."""
    try:
        return os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError(f"{path}: a loop of symbolic links") from None
        if os.path.islink(path):
            raise ValueError(f"{path}: a symbolic link to {os.readlink(path)}, which does not exist") from None
        raise ValueError(f"{path}: cannot read it ({exc.strerror})") from None


def model_files(folder: Path, limits: Mapping[str, int]) -> dict[str, list[int]]:
    """Every file below ``folder`` (links followed): relative POSIX path -> [size, mtime_ns, ctime_ns].

    ``ValueError`` naming the path for a folder that is missing or a file, a FIFO, device or socket, a dangling link,
    a loop of links, more than ``limits["checkpoint_files"]`` files or ``limits["checkpoint_bytes"]`` bytes in all.
    """
    info = _stat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise ValueError(f"{folder}: is {file_kind(info.st_mode)}; expected a Hugging Face model folder")
    files: dict[str, list[int]] = {}
    total, seen, pending = 0, {(info.st_dev, info.st_ino)}, [folder]
    while pending:
        current = pending.pop()
        try:
            names = sorted(os.listdir(current))
        except OSError as exc:
            raise ValueError(f"{current}: cannot list it ({exc.strerror})") from None
        for name in names:
            path = current / name
            info = _stat(path)
            if stat.S_ISDIR(info.st_mode):
                if (info.st_dev, info.st_ino) in seen:
                    raise ValueError(f"{path}: a link back to a folder already read (a loop of symbolic links)")
                seen.add((info.st_dev, info.st_ino))
                pending.append(path)
                continue
            if not stat.S_ISREG(info.st_mode):
                raise ValueError(f"{path}: is {file_kind(info.st_mode)} where a file of the model should be")
            files[path.relative_to(folder).as_posix()] = [info.st_size, info.st_mtime_ns, info.st_ctime_ns]
            total += info.st_size
            if len(files) > limits["checkpoint_files"]:
                raise ValueError(
                    f"{folder}: more than {limits['checkpoint_files']} files, above limits.checkpoint_files; "
                    f"expected one model's folder (raise the limit in the config if it is one)"
                )
            if total > limits["checkpoint_bytes"]:
                raise ValueError(
                    f"{folder}: more than {limits['checkpoint_bytes']} bytes, above limits.checkpoint_bytes; "
                    f"expected one model's folder (raise the limit in the config if it is one)"
                )
    return dict(sorted(files.items()))


def check_model(folder: Path, files: Mapping[str, list[int]]) -> None:
    """``folder`` (with ``files``, :func:`model_files`) is a Hugging Face model transformers and vLLM load:
    ``config.json`` with a ``model_type``, weights, every shard its index names, a tokenizer."""
    if "config.json" not in files:
        raise ValueError(f"{folder}: no config.json; expected a Hugging Face model folder (config, weights, tokenizer)")
    try:
        config = read_json(folder / "config.json", "config.json")
    except BadFile as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(config, dict) or not isinstance(config.get("model_type"), str):
        raise ValueError(f"{folder / 'config.json'}: no model_type; expected a Hugging Face model's config")
    top = [name for name in files if "/" not in name]
    if not any(Path(name).match(pattern) for name in top for pattern in WEIGHTS):
        raise ValueError(
            f"{folder}: no weights ({', '.join(WEIGHTS)}); a trainer's own checkpoint (FSDP or DeepSpeed shards) "
            f"must first be converted to a Hugging Face model"
        )
    for index in (name for name in INDEXES if name in files):
        try:
            shards = read_json(folder / index, index).get("weight_map", {}).values()
        except (BadFile, AttributeError):
            raise ValueError(f"{folder / index}: expected a JSON object with a weight_map") from None
        missing = sorted(set(map(str, shards)) - set(files))
        if missing:
            raise ValueError(f"{folder / index}: names shard {missing[0]}, which is not in the folder")
    if not any(name in files for name in TOKENIZERS):
        raise ValueError(
            f"{folder}: no tokenizer ({', '.join(TOKENIZERS)}); the evaluation loads it from the checkpoint, so "
            f"copy the tokenizer's files of the model the run started from"
        )


def locate(section: Mapping, arm: str, seed: int, limits: Mapping[str, int]) -> list[Model]:
    """The run's checkpoints (:func:`step_paths`), each checked (:func:`model_files`, :func:`check_model`)."""
    paths = step_paths(section, arm, seed)
    models = []
    for number, (step, path) in enumerate(paths, 1):
        key = "pattern" if number == len(paths) and "pattern" in section else "steps"
        models.append(_checked(Path(path), step, limits, f"checkpoints.{key}: run {_run(arm, seed)}"))
    return models


def _checked(path: Path, step: int | None, limits: Mapping[str, int], where: str) -> Model:
    try:
        files = model_files(path, limits)
        check_model(path, files)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    return Model(step, Path(os.path.realpath(path)), files)


def base_model(config: dict, limits: Mapping[str, int]) -> Model:
    """The base checkpoint (``checkpoints.base``), checked."""
    return _checked(Path(config["checkpoints"]["base"]), None, limits, f"checkpoints.base: arm {BASE_ARM}")


def step_log_path(section: Mapping, arm: str, seed: int) -> Path | None:
    """The run's step log (``checkpoints.step_log.pattern`` filled in), or None without one."""
    log = section.get("step_log")
    return Path(_filled(log["pattern"], arm, seed)) if log else None


def check_files(config: dict) -> None:
    """Every run's checkpoints (:func:`locate`) and step log, and the base checkpoint, found and checked before any
    job: ``ValueError`` naming the key, the run and the path."""
    section, limits = config["checkpoints"], limits_of("config", config)
    for arm in config["arms"]:
        for seed in config["seeds"]:
            locate(section, arm, seed, limits)
            log = step_log_path(section, arm, seed)
            if log is not None:
                try:
                    regular_file(log, "step log", "input_file_bytes", limits)
                except BadFile as exc:
                    raise ValueError(f"checkpoints.step_log.pattern: run {_run(arm, seed)}: {exc}") from None
    if "base" in section:
        base_model(config, limits)


def kept_models(config: dict, arm: str) -> int:
    """The most checkpoints a run of ``arm`` has (its curve job evaluates each)."""
    return max(len(step_paths(config["checkpoints"], arm, seed)) for seed in config["seeds"])


# ------------------------------------------------------------------------------------------- the record


def model_sha256(files: Mapping[str, Mapping]) -> str:
    """A model's sha256: of each file's relative path, size and sha256, one line per file in path order, so that
    two folders with the same files have the same one wherever they are."""
    lines = "".join(f"{name}\0{files[name]['bytes']}\0{files[name]['sha256']}\n" for name in sorted(files))
    return hashlib.sha256(lines.encode()).hexdigest()


def hashed(model: Model) -> dict:
    """The record of ``model``: its step and folder, each file's size, sha256 (read in blocks of 1 MiB, never whole)
    and the stat it was hashed at, the model's size and its sha256 (:func:`model_sha256`). ``ValueError`` where a file
    changed while it was hashed."""
    files = {}
    for name, identity in model.files.items():
        path = model.path / name
        digest = file_sha256(path)
        after = _stat(path)
        if [after.st_size, after.st_mtime_ns, after.st_ctime_ns] != identity:
            raise ValueError(f"{path}: changed while it was hashed; expected a checkpoint no trainer writes any more")
        files[name] = {"bytes": identity[0], "sha256": digest, "stat": identity}
    return {
        "step": model.step,
        "path": str(model.path),
        "sha256": model_sha256(files),
        "bytes": sum(entry["bytes"] for entry in files.values()),
        "files": files,
    }


def is_record(manifest: Mapping) -> bool:
    """Whether a run manifest is a record of checkpoints made elsewhere (this backend's), not of a trained run."""
    return RECORD in (manifest.get("files") or {})


def _read_record(path: Path) -> dict:
    """A record's ``models`` (each with step, path, sha256, files) and ``step_log``; :class:`BadFile` otherwise."""
    record = read_json(path, "checkpoint record")
    try:
        models = record["models"]
        valid = bool(models) and all(
            isinstance(model["path"], str)
            and isinstance(model["sha256"], str)
            and "step" in model
            and all({"sha256", "stat"} <= set(entry) for entry in model["files"].values())
            for model in models
        )
    except (KeyError, TypeError, AttributeError):
        valid = False
    if not valid:
        raise BadFile(f"{path}: not a checkpoint record (models with their step, path, sha256 and files)")
    return record


def recorded_models(run_manifest: str | Path) -> list[RecordedModel]:
    """The checkpoints a run's record names, in step order with the final one last, every file checked against its
    recorded sha256 first: :class:`BadFile` naming the first that is missing or differs."""
    run_manifest = Path(run_manifest)
    verify_manifest(run_manifest, [RECORD])
    record_path = run_manifest.parent / RECORD
    models = []
    for model in _read_record(record_path)["models"]:
        folder = Path(model["path"])
        for name, entry in model["files"].items():
            path = folder / name
            if not path.is_file():
                raise BadFile(f"{path}: missing, but {record_path} records it")
            if file_sha256(path) != entry["sha256"]:
                raise BadFile(
                    f"{path}: sha256 does not match {entry['sha256'][:12]}… recorded in {record_path}: changed since "
                    f"it was recorded (the workflow's next start records and evaluates it again)"
                )
        models.append(RecordedModel(model["step"], folder, model["sha256"]))
    return models


def _difference(recorded: list[dict], current: list[Model]) -> str | None:
    """Where ``current`` differs from the ``recorded`` models: steps, folders, files or their stat."""
    steps = ([m["step"] for m in recorded], [m.step for m in current])
    if steps[0] != steps[1]:
        return f"its checkpoints are at steps {steps[1]} now, {steps[0]} when recorded"
    for then, now in zip(recorded, current):
        if then["path"] != str(now.path):
            return f"{now.path} matches now, {then['path']} when recorded"
        files = {name: entry["stat"] for name, entry in then["files"].items()}
        if files != now.files:
            name = sorted(set(files) ^ set(now.files) or {n for n in files if files[n] != now.files[n]})[0]
            what = "new" if name not in files else "gone" if name not in now.files else "changed"
            return f"{now.path / name}: {what} since it was recorded (size, modification or change time)"
    return None


def changed(config: dict, arm: str, seed: int, run_dir: str | Path) -> tuple[str, bool] | None:
    """Why the record in ``run_dir`` no longer describes the run on disk, and whether its checkpoints changed (else
    only its step log); None when it does, or there is no record yet. Checkpoints are compared by their folders,
    steps and files' size, modification and change time (no file is read), the step log by its path and stat."""
    path = Path(run_dir) / RECORD
    if not path.is_file():
        return None
    where = f"run {_run(arm, seed)}"
    try:
        record = _read_record(path)
    except BadFile as exc:
        return f"{where}: {exc}", True
    section, limits = config["checkpoints"], limits_of("config", config)
    current = [base_model(config, limits)] if arm == BASE_ARM else locate(section, arm, seed, limits)
    difference = _difference(record["models"], current)
    if difference:
        return f"{where}: {difference}", True
    log = step_log_path(section, arm, seed) if arm != BASE_ARM else None
    now = None if log is None else {"path": str(log.resolve()), "stat": _identity(log)}
    then = record.get("step_log")
    if (then and {"path": then.get("path"), "stat": then.get("stat")}) != now:
        return f"{where}: its step log {log or '(none)'} changed since it was recorded", False
    return None


def _identity(path: Path) -> list[int]:
    info = _stat(path)
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def step_log_record(path: Path, kind: str, fields: Mapping[str, str]) -> dict:
    """What a record keeps of a run's step log: its kind and fields, path, stat and sha256."""
    return {
        "kind": kind,
        "fields": dict(fields),
        "path": str(path.resolve()),
        "stat": _identity(path),
        "sha256": file_sha256(path),
    }


def write_record(directory: Path, models: list[dict], step_log: dict | None) -> str:
    """Write the record (:data:`RECORD`) of ``models`` (:func:`hashed`) and the step log to ``directory``."""
    (directory / RECORD).write_text(json.dumps({"models": models, "step_log": step_log}, indent=2) + "\n")
    return RECORD
