"""What a training or evaluation job ran under: the predictions lock, the sequential design lock, the looks so far.

A lock file alone proves little: deleted, it can be written again; rewritten with a recomputed hash and an
earlier ``locked_at``, it looks like the original. So every run, evaluation and curve job records in its
``manifest.json`` the sha256 of the experiment's predictions lock and design lock as they were when the job
wrote its outputs, and how many looks the record of looks held (:func:`record`). From what remains, the checks
then find a lock that was deleted or rewritten, a record of looks that lost lines, and outputs made before a
lock existed (:func:`against_locks`). The lock files' names are the results layout's (:mod:`armlab.layout`).
"""

from __future__ import annotations

from pathlib import Path

from armlab import files, layout
from armlab.layout import DESIGN_LOCK, JOB_STAGES, LOOKS_LEDGER, PREDICTIONS_LOCK

KEY = "registration"  # the manifest field


def _sha256(path: Path) -> str | None:
    return files.file_sha256(path) if path.is_file() else None


def _looks(ledger: Path) -> int | None:
    """Lines in the record of looks (None without one); a FIFO, device or folder there is a :class:`BadFile`."""
    if not ledger.exists() and not ledger.is_symlink():
        return None
    return len(files.regular_file(ledger, "record of looks").read_bytes().splitlines())


def _checked(entry, path: Path) -> dict:
    """A manifest's record, its fields checked: a sha256 or null for each lock, a count or null for the looks."""
    if not isinstance(entry, dict):
        raise files.BadFile(f"{path}: {KEY}: expected a mapping (or null), got {entry!r}")
    for field in ("predictions_lock", "design_lock"):
        value = entry.get(field)
        if value is not None and not (isinstance(value, str) and files.SHA256_HEX.fullmatch(value)):
            raise files.BadFile(f"{path}: {KEY}.{field}: expected a sha256 hex digest or null, got {value!r}")
    looks = entry.get("looks")
    if looks is not None and (isinstance(looks, bool) or not isinstance(looks, int) or looks < 0):
        raise files.BadFile(f"{path}: {KEY}.looks: expected a count of looks or null, got {looks!r}")
    return entry


def record(job_dir: str | Path) -> dict:
    """The manifest field of a job whose final folder is ``job_dir`` (``<experiment>/<stage>/<arm>/seed-<s>``);
    outside such a layout (a job run by hand into any folder) there is no experiment and the field is empty."""
    job_dir = Path(job_dir)
    if len(job_dir.parents) < 3 or job_dir.parents[1].name not in JOB_STAGES:
        return {KEY: None}
    root = job_dir.parents[2]
    return {
        KEY: {
            "predictions_lock": _sha256(root / PREDICTIONS_LOCK),
            "design_lock": _sha256(root / DESIGN_LOCK),
            "looks": _looks(root / LOOKS_LEDGER),
        }
    }


def recorded(experiment_dir: str | Path) -> dict[Path, dict | None]:
    """Each job folder's manifest and the record it carries. None where there is none to read: a manifest written
    before records existed, or missing or not JSON (deleted, or truncated: the workflow's corruption scan removes
    such an output and its job runs again under the locks of now); such an output did not run under a lock."""
    root = Path(experiment_dir)
    out = {}
    for stage in JOB_STAGES:
        for job in layout.job_dirs(root, stage):
            path = job / files.MANIFEST
            try:
                manifest = files.read_json(path, "manifest")
            except files.BadFile:
                manifest = None
            entry = manifest.get(KEY) if isinstance(manifest, dict) else None
            out[path] = None if entry is None else _checked(entry, path)
    return out


def against_locks(experiment_dir: str | Path) -> list[Path]:
    """Check the experiment's locks and record of looks against what its jobs recorded; return the manifests of
    jobs that did not run under the current predictions lock (made before it existed, or by an armlab without
    records), so a lock that exists does not predate them.

    Raises :class:`armlab.files.BadFile`, naming a manifest, for a lock deleted or rewritten after a job ran under
    it, and for a record of looks shorter than one a job saw.
    """
    root = Path(experiment_dir)
    jobs = recorded(root)
    locks = {"predictions_lock": _sha256(root / PREDICTIONS_LOCK), "design_lock": _sha256(root / DESIGN_LOCK)}
    for name, (field, now) in zip((PREDICTIONS_LOCK, DESIGN_LOCK), locks.items()):
        for path, entry in jobs.items():
            then = (entry or {}).get(field)
            if then is None or then == now:
                continue
            what = "deleted" if now is None else f"rewritten (sha256 now {now[:12]})"
            raise files.BadFile(
                f"{root / name}: {what}, but {path} ran under the lock with sha256 {then[:12]}; a lock is never "
                f"re-created or edited: restore it, or run the experiment again from nothing"
            )
    looks = _looks(root / LOOKS_LEDGER) or 0
    for path, entry in jobs.items():
        seen = (entry or {}).get("looks") or 0
        if seen > looks:
            raise files.BadFile(
                f"{root / LOOKS_LEDGER}: holds {looks} look(s), but {path} ran when it held {seen}; the record of "
                f"looks is append-only: restore it, or run the experiment again from nothing"
            )
    locked = locks["predictions_lock"]
    return [path for path, entry in jobs.items() if locked and (entry or {}).get("predictions_lock") != locked]
