"""The experiment's locks: the sequential design's (``sequential/design.json``, :class:`armlab.spec.DesignLock`) and
the preregistered predictions' (``predictions/lock.json``, :class:`armlab.spec.PredictionsLock`), each written once
by the workflow before the jobs it governs (the design when its first wave starts, the predictions before the first
training job) and never rewritten, and what the workflow's start checks against them before any job (:func:`check`):
a design changed after its lock, a record of looks without its lock or missing a look, a lock deleted over outputs
that exist, a job run under another lock (:func:`armlab.registration.against_locks`), a locked prediction whose
comparison is gone. The analysis reads the predictions lock (:func:`armlab.analysis.predictions.read_lock`) and
decides what a prediction means; it writes no lock.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict
from pathlib import Path

from armlab import files, layout, registration
from armlab.analysis import AnalysisInputError, predictions
from armlab.analysis.config import Config, parse_config
from armlab.analysis.inputs.records import read_ledger
from armlab.configfile import ConfigError
from armlab.experiment.sequential import read_look
from armlab.spec import DesignLock, PredictionsLock


def check(config: dict, analysis: Config) -> None:
    """Refuse, before any job, a validated ``config`` (``analysis``: its analysis view) that breaks a lock of its
    experiment: a started sequential design's lock, the locks every job so far ran under, the locked predictions."""
    out = layout.experiment_dir(config["experiment"])
    if analysis.design is not None:
        check_design_lock(out, config)
    registration.against_locks(out)
    check_withdrawn(out, analysis)  # a locked prediction's comparison is still in the config


# analysis keys the looks read (alpha, margin, confidence, the primary summary, the sign-flip enumeration)
DECISION_KEYS = (
    "alpha",
    "confidence",
    "equivalence_margin",
    "exact_max_seeds",
    "sign_flip_resamples",
    "bootstrap_seed",
    "subsets",
)


# what a job may be given more of without changing its results: the scheduler's resources of the backends
RESOURCE_KEYS = ("gpus", "eval_gpus", "mem_mb", "runtime")


def locked_part(config: dict) -> dict:
    """The part of a validated workflow config that a sequential design locks: everything but ``limits``, the
    backends' job resources, the predictions (locked on their own: :func:`write_predictions_lock`) and the analysis keys
    the looks do not read; those it reads with their defaults filled in, so that writing a default out is no
    change."""
    part = {key: value for key, value in config.items() if key not in ("limits", "analysis", "predictions")}
    for section in ("trl", "command"):
        if isinstance(part.get(section), dict):
            part[section] = {k: v for k, v in part[section].items() if k not in RESOURCE_KEYS}
    settings = asdict(parse_config(config).settings)
    part["analysis"] = {key: settings[key] for key in DECISION_KEYS}
    return json.loads(json.dumps(part, sort_keys=True))


def design_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(locked_part(config), sort_keys=True).encode()).hexdigest()


def _differences(old, new, key: str = "") -> list[str]:
    """Dotted keys where two plain-data values differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new)):
            out += _differences(old.get(k), new.get(k), f"{key}.{k}" if key else str(k))
        return out
    return [] if old == new else [f"{key}: {json.dumps(old)} -> {json.dumps(new)}"]


def check_design_lock(results: str | Path, config: dict) -> None:
    """Refuse a config whose design differs from the one locked in ``results`` (no-op before the first wave), a
    record of looks that lacks its lock or a look whose checkpoint file exists, and a missing lock where training
    or evaluation outputs exist (a deleted ``sequential/``, or a design added to an experiment already run)."""
    path, ledger = Path(results) / layout.DESIGN_LOCK, Path(results) / layout.LOOKS_LEDGER
    records = read_ledger(ledger)
    recorded = {r["look"] for r in records}
    written = {int(p.stem[5:]) for p in ledger.parent.glob("look-*.json") if p.stem[5:].isdigit()}
    if written - recorded:
        raise ConfigError(
            f"{ledger}: look(s) {sorted(written - recorded)} have their checkpoint files but are not in the record "
            f"of looks (deleted or truncated?); the record is append-only: restore it or start a new experiment"
        )
    for look in sorted(written):
        read_look(ledger.parent / f"look-{look}.json", records)
    if not path.exists():
        if recorded:
            raise ConfigError(
                f"{path}: missing, but {ledger} records looks; restore the lock or start a new experiment"
            )
        evidence = files.experiment_outputs(results)
        if evidence:  # the lock is written when the first wave starts: a design without one never ran as one
            raise ConfigError(
                f"{path}: missing, but {len(evidence)} training or evaluation output(s) of this experiment exist "
                f"({evidence[0]} …): a sequential design is locked before its first wave, so a deleted lock or "
                f"record cannot be re-created; restore {path.parent} or run the design as a new experiment"
            )
        return
    lock = files.read_json(path, "sequential design lock")
    if not isinstance(lock, dict):
        raise ConfigError(f"{path}: expected a JSON object (the design lock the workflow writes), got {lock!r:.40}")
    locked = lock.get("hash")
    other = sorted({str(r.get("design_hash")) for r in records} - {locked})
    if other:
        raise ConfigError(
            f"{path}: locks design {str(locked)[:12]}, but {ledger} records looks decided under {other[0][:12]}: the "
            f"lock was rewritten after its looks; restore it, or run the design as a new experiment"
        )
    if locked == design_hash(config):
        return
    changed = _differences(lock.get("config"), locked_part(config))
    raise ConfigError(
        f"{path}: the sequential design was locked when its first wave started ({lock.get('locked_at')}) and the "
        f"config now differs: {'; '.join(changed[:5])}{' ...' if len(changed) > 5 else ''}. Changing a design "
        f"after its looks began would void their error rates; restore it, or run the change as a new experiment"
    )


def write_design_lock(results: str | Path, config: dict) -> None:
    """Lock the design when the first wave starts; an existing lock is left as it is (checked by
    :func:`check_design_lock`)."""
    path = Path(results) / layout.DESIGN_LOCK
    if path.exists():
        return
    lock = DesignLock(
        hash=design_hash(config),
        config=locked_part(config),
        locked_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        git_commit=files.git_commit(),
        git_dirty=files.git_dirty(),
    )
    files.write_json(path, asdict(lock))


def write_predictions_lock(results: str | Path, config: Config) -> str | None:
    """Lock the predictions of ``config`` and what each means (:func:`armlab.analysis.predictions.meaning`) before
    the first training job starts; returns a line for the console, or None.

    An existing lock is never rewritten. Once any training or evaluation output of the experiment exists (a run,
    an evaluation, its log, the scores, an analysis: :func:`armlab.files.experiment_outputs`), even with the runs
    deleted, there is nothing left to preregister: no lock is written and every prediction stays exploratory.
    """
    path = Path(results) / layout.PREDICTIONS_LOCK
    predicted = config.predictions
    if not predicted or path.exists():
        return None
    evidence = files.experiment_outputs(results)
    if evidence:
        return (
            f"predictions: not locked, because {len(evidence)} training or evaluation output(s) of the experiment "
            f"already exist ({evidence[0]} …); predictions made after results exist are exploratory"
        )
    meanings = [predictions.meaning(p, config) for p in predicted]
    lock = PredictionsLock(
        hash=predictions.predictions_hash(predicted, meanings),
        predictions=[asdict(p) for p in predicted],
        meanings=meanings,
        locked_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        git_commit=files.git_commit(),
        git_dirty=files.git_dirty(),
    )
    files.write_json(path, asdict(lock))
    return (
        f"predictions: {len(predicted)} locked in {path} before the first training job; its sha256 "
        f"{files.file_sha256(path)}: commit or publish it now to prove the lock's time to others (docs/statistics.md)"
    )


def check_withdrawn(results: str | Path, config: Config) -> None:
    """Refuse, when the workflow starts, a config in which a prediction of the lock in ``results`` has no comparison
    any more (its family, arm or measure dropped or renamed): a locked prediction stays in the analysis, which
    would fail after every job. One line naming the lock and the prediction; nothing when there is no lock."""
    path = Path(results) / layout.PREDICTIONS_LOCK
    if not path.exists():
        return
    lock = predictions.read_lock(path)
    families = {c.family: c for c in config.comparisons}
    measures = config.measures
    for p in lock["predictions"] if lock else ():
        family = families.get(p.family)
        gone = (
            f"family {p.family!r} is not compared"
            if family is None
            else f"arm {p.arm!r} is not in family {p.family!r}"
            if p.arm not in family.arms
            else f"measure {p.summary!r} is not compared"
            if measures is not None and p.summary not in measures
            else None
        )
        if gone:
            raise AnalysisInputError(
                f"{path}: locked prediction ({p.family}, {p.arm}, {p.summary}): {gone} in the config now; a locked "
                f"prediction cannot be withdrawn (the analysis gives its verdict): restore its comparison"
            )
