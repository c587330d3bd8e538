"""Writing and checking armlab's files: atomic writes, output directories, sha256 manifests.

- :func:`atomic_path` writes a file or directory under a temporary sibling name and puts it in
  place only when complete; a directory replaces the old one in one atomic exchange (Linux
  ``renameat2(RENAME_EXCHANGE)``), so there is no moment without it. Temporaries that a killed
  job left behind are removed the next time the same path is written.
- :func:`output_directory` is the ``--out`` of ``armlab analyze`` / ``armlab report``: a
  directory replaced as a whole, which is refused unless it is new, empty, or an earlier output
  of the same command holding nothing that command did not write (:data:`OUTPUT_MARKER`), and
  that can be written now (not '.', not read-only, full, busy or a name too long for its
  temporary); :func:`check_output_file` checks a file output (``armlab probe --out``) alike.
- :func:`write_manifest` records the sha256 of every output a job wrote in its
  ``manifest.json`` (key :data:`FILES_KEY`); consumers call :func:`verify_file` or
  :func:`verify_manifest` before reading, and :func:`remove_corrupt_outputs` deletes, at
  workflow start, every job output that fails its manifest, so that the workflow rebuilds it.

Problems are :class:`BadFile` errors whose one-line message names the file and what was
expected; :func:`one_line_errors` turns them into an error line and exit status 2 in a
command-line ``main``.
"""

from __future__ import annotations

import csv
import ctypes
import errno
import functools
import hashlib
import json
import math
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from armlab import layout
from armlab.limits import DEFAULT_LIMITS

MANIFEST = "manifest.json"
FILES_KEY = "files"
OUTPUT_MARKER = ".armlab-output.json"
# the timestamp Snakemake keeps in a directory() output: the workflow's, not the user's
SNAKEMAKE_TIMESTAMP = ".snakemake_timestamp"
_TEMP_TAG = "armlab-tmp"
_TEMP_LENGTH = len(f".{_TEMP_TAG}-4194304-abcdefgh.")  # what a temporary's name adds to its path's (pid <= 2**22)
SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class BadFile(ValueError):
    """A file or directory armlab will not read, trust or overwrite; the message names it."""


# ----------------------------------------------------------------------------- atomic writes


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.{_TEMP_TAG}-"


def _is_running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _temporaries(path: Path) -> list[tuple[Path, int]]:
    """The temporaries of writes of ``path`` (siblings named as :func:`atomic_path` names them) and their pids."""
    pattern = re.compile(re.escape(_temp_prefix(path)) + r"(\d+)-[a-z0-9_]{8}")
    try:
        siblings = list(path.parent.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [
        (sibling, int(match[1]))
        for sibling in siblings
        if (match := pattern.fullmatch(sibling.name)) and sibling.is_dir() and not sibling.is_symlink()
    ]


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove the temporaries of earlier writes of ``path`` whose process is gone; return them.

    Only siblings named as :func:`atomic_path` names them (``.<name>.armlab-tmp-<pid>-<random>``)
    are candidates, and one whose process id is running on this machine is kept: it may be a
    concurrent write. (A temporary of a job on another machine of a cluster counts as stale.)
    """
    removed = [temporary for temporary, pid in _temporaries(Path(path)) if not _is_running(pid)]
    for temporary in removed:
        shutil.rmtree(temporary, ignore_errors=True)
    return removed


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(first: Path, second: Path) -> bool:
    """Atomically swap two existing paths (Linux ``renameat2`` with ``RENAME_EXCHANGE``).

    Returns False, having changed nothing, where the platform or the filesystem cannot.
    """
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None) if sys.platform == "linux" else None
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(first), None, str(second))


def _install(new: Path, path: Path, holder: Path) -> None:
    """Put ``new`` at ``path``; what was there ends up inside ``holder`` (removed by the caller)."""
    replacing_directory = path.is_dir() and not path.is_symlink()
    if not (replacing_directory or (new.is_dir() and path.exists())):
        os.replace(new, path)  # a file over a file (or nothing): atomic
    elif not exchange(new, path):
        # Without RENAME_EXCHANGE a directory cannot replace a directory atomically: between
        # these two renames ``path`` is missing (a killed job then leaves no output, and its
        # holder with both versions is removed as stale by the next write).
        os.rename(path, holder / "replaced")
        os.rename(new, path)


@contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary sibling path; put it at ``path`` only if the block succeeds.

    Works for files and directories (the block creates whichever it wants at the yielded path),
    so a killed job never leaves an output that looks complete, and a directory is replaced
    without a moment where ``path`` is missing (see :func:`exchange`).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    holder = Path(tempfile.mkdtemp(prefix=f"{_temp_prefix(path)}{os.getpid()}-", dir=path.parent))
    try:
        tmp = holder / path.name
        yield tmp
        _install(tmp, path, holder)
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def write_json(path: str | Path, obj) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


# a text cell starting with one of these is a formula to a spreadsheet (OWASP, "CSV injection")
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t")  # and "\r", which spreadsheet_safe turns into a line feed


def spreadsheet_safe(cell):
    """A text cell that a spreadsheet would run as a formula, prefixed with ``'``; numbers and other cells as given.
    A bare carriage return becomes a line feed: the CSV writer quotes a cell holding a line feed, but not one
    holding only a CR, which readers take as the end of the row (the next "row" a formula nobody checked)."""
    if isinstance(cell, str):
        cell = cell.replace("\r\n", "\n").replace("\r", "\n")
    if not isinstance(cell, str) or not cell.startswith(FORMULA_PREFIXES):
        return cell
    try:
        float(cell)  # "-0.5", "+inf": a number, shown as one
    except ValueError:
        return "'" + cell
    return cell


def write_csv(frame, path: str | Path) -> None:
    """``frame`` (a pandas DataFrame) as CSV at ``path``, without its index, every text cell and column name
    spreadsheet-safe (:func:`spreadsheet_safe`)."""
    safe = frame.rename(columns=spreadsheet_safe)
    for column in safe.columns[[dtype.kind in "OT" for dtype in safe.dtypes]]:
        safe[column] = safe[column].map(spreadsheet_safe)
    safe.to_csv(path, index=False)


def file_kind(mode: int) -> str:
    """What a file of ``mode`` (``os.stat``'s ``st_mode``) is, in words: "a regular file", "a directory", ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket"


def regular_file(
    path: str | Path, what: str = "file", limit: str = "input_file_bytes", limits: Mapping[str, int] = DEFAULT_LIMITS
) -> Path:
    """``path``, checked to be a regular file (after links) of at most ``limits[limit]`` bytes before anything opens
    it: a FIFO would block the reader forever, a device (a link to /dev/zero) or a huge file would fill its memory.
    :class:`BadFile` naming it otherwise."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise BadFile(f"{path}: {what} not found") from None
    except OSError as exc:
        raise BadFile(f"{path}: cannot read {what} ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadFile(f"{path}: {what} is {file_kind(info.st_mode)}, not a regular file; expected the file itself")
    if info.st_size > limits[limit]:
        raise BadFile(
            f"{path}: {what} is {info.st_size} bytes, above the limit of {limits[limit]} bytes; "
            f"set limits.{limit} in the config to read it"
        )
    return path


def read_json(path: str | Path, what: str = "file", limits: Mapping[str, int] = DEFAULT_LIMITS):
    """The JSON value in ``path``; :class:`BadFile` naming it when it is missing, not a regular file, larger than
    ``limits["json_file_bytes"]``, unreadable, not JSON, nested deeper than Python's parser goes, or holding a key
    twice in one object (which JSON readers resolve silently, the last one winning)."""
    path = regular_file(path, what, "json_file_bytes", limits)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadFile(f"{path}: {what} not found") from None
    except UnicodeDecodeError:
        raise BadFile(f"{path}: {what} is not UTF-8 text") from None
    except OSError as exc:
        raise BadFile(f"{path}: cannot read {what} ({exc.strerror})") from None
    try:
        return strict_json(text)
    except json.JSONDecodeError as exc:
        raise BadFile(
            f"{path}: {what} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            f"truncated or not written by armlab?"
        ) from None
    except ValueError as exc:
        raise BadFile(f"{path}: {what} {exc}") from None


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    found = dict(pairs)
    if len(found) < len(pairs):
        twice = next(key for i, (key, _) in enumerate(pairs) if key in dict(pairs[:i]))
        raise ValueError(f"holds the key {twice[:80]!r} twice in one object; expected each key once")
    return found


def strict_json(text: str | bytes):
    """``json.loads(text)``, refusing a key twice in one object and nesting deeper than Python's parser goes:
    ``ValueError`` saying which (``json.JSONDecodeError``, a subclass, for text that is not JSON)."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise ValueError("is nested deeper than Python's JSON parser goes; expected a flatter file") from None


@contextmanager
def csv_fields_within(limits: Mapping[str, int] = DEFAULT_LIMITS):
    """Python's csv module reads fields of up to ``limits["input_line_bytes"]`` (not its own 131,072) meanwhile."""
    earlier = csv.field_size_limit(limits["input_line_bytes"])
    try:
        yield
    finally:
        csv.field_size_limit(earlier)


LINE_CHUNK = 2**20  # bytes a line is read by


def _line(lines, longest: int) -> bytearray:
    """The next line of binary file ``lines``, no more than ``longest`` + 1 bytes of it read (empty at the end).

    Grown in place chunk by chunk: ``readline(longest + 1)`` joins its chunks at the end, twice the limit at once.
    """
    line = bytearray()
    while len(line) <= longest:
        chunk = lines.readline(min(LINE_CHUNK, longest + 1 - len(line)))
        line += chunk
        if not chunk or chunk.endswith(b"\n"):
            break
    return line


def text_lines(path: str | Path, what: str, limits: Mapping[str, int] = DEFAULT_LIMITS) -> Iterator[tuple[int, str]]:
    """(number, text) of every line of ``path``, a regular file of at most ``limits["input_file_bytes"]``, read a
    chunk at a time and decoded as UTF-8 (a byte-order mark at its start dropped); :class:`BadFile` naming the file
    or line when it is not, or a line is longer than ``limits["input_line_bytes"]`` (read no further than that)."""
    longest = limits["input_line_bytes"]
    with open(regular_file(path, what, "input_file_bytes", limits), "rb") as lines:
        for number, raw in enumerate(iter(lambda: _line(lines, longest), b""), start=1):
            if len(raw) > longest and not raw.endswith(b"\n"):
                raise BadFile(
                    f"{path} line {number}: longer than the limit of {longest} bytes; set limits.input_line_bytes in "
                    f"the config to read it"
                )
            try:
                yield number, raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                raise BadFile(f"{path}: not UTF-8 text (line {number}); expected {what}") from None


def json_number(value) -> float | None:
    """A JSON value as a finite float (true/false count as 1/0), or None when it is not one (text, null, NaN)."""
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond float range
        return None
    return number if math.isfinite(number) else None


# ----------------------------------------------------------------------------- output directories


def _written_by(path: Path):
    """``(command, entries)`` of the marker armlab left in an output directory, or a reason it cannot tell."""
    marker = path / OUTPUT_MARKER
    if not marker.is_file():
        return None, f"it has no {OUTPUT_MARKER}"
    try:
        record = read_json(marker)
    except BadFile as exc:
        return None, str(exc)
    if not (
        isinstance(record, dict)
        and isinstance(record.get("command"), str)
        and isinstance(record.get("entries"), list)
        and all(isinstance(e, str) for e in record["entries"])
    ):
        return None, f"{marker} is not armlab's output marker"
    return record["command"], set(record["entries"])


def _check_writable(path: Path) -> None:
    """Refuse ``path`` as an output unless it has a name of its own, and a temporary sibling of it can be made (and
    is removed at once) in its folder, or the nearest folder above that exists: not read-only, full, or so long a
    name that the temporary's (29 characters longer, :func:`atomic_path`) does not fit."""
    if path.name in ("", ".", ".."):
        raise BadFile(
            f"{path}: names a folder by '.', '..' or '/', not by its own name; an output is replaced as a whole from "
            f"its parent folder, so give a new folder's name (e.g. {path / 'out'})"
        )
    ancestor = next(p for p in path.parents if p.exists())
    if not ancestor.is_dir():
        raise BadFile(f"{path}: cannot be created, {ancestor} is a file, not a directory")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=f"{_temp_prefix(path)}{os.getpid()}-", dir=ancestor))
    except OSError as exc:
        raise BadFile(
            f"{path}: cannot write there ({exc.strerror}: making its temporary {_temp_prefix(path)}... in "
            f"{ancestor}); expected a writable folder with free space, and a name {_TEMP_LENGTH} characters "
            f"shorter than the longest the folder takes"
        ) from None


def _check_not_busy(path: Path) -> None:
    """Refuse ``path`` while another process writes it (its temporary is there) or where it is a mount point."""
    writers = sorted(pid for _, pid in _temporaries(path) if pid != os.getpid() and _is_running(pid))
    if writers:
        raise BadFile(f"{path}: process {writers[0]} is writing it now; expected no other write, wait for it to end")
    if path.is_dir() and os.path.ismount(path):
        raise BadFile(
            f"{path}: is a mount point, which cannot be replaced (the system calls it busy); give a new folder in it"
        )


def check_output_file(path: str | Path) -> None:
    """Refuse ``path`` as a file armlab replaces whole (:func:`write_json`) where it is a directory, or cannot be
    written (:func:`_check_writable`), or is being written (:func:`_check_not_busy`); before the work, not after."""
    path = Path(path)
    _check_writable(path)
    if path.is_dir():
        raise BadFile(f"{path}: is a directory; expected the name of a file")
    _check_not_busy(path)


def check_output_directory(path: str | Path, command: str) -> None:
    """Refuse ``path`` as the output of ``armlab <command>`` unless replacing it destroys nothing else.

    Accepted: a path that does not exist (inside a directory), an empty directory, or an earlier
    output of the same command that holds only what that command wrote, where the output can be
    written (:func:`_check_writable`) and nothing else is writing it (:func:`_check_not_busy`).
    Refused, with :class:`BadFile`: a file, a symbolic link, any other non-empty directory.
    """
    path = Path(path)
    _check_writable(path)
    if path.is_symlink():
        raise BadFile(f"{path}: is a symbolic link; give the directory itself (it is replaced as a whole)")
    _check_not_busy(path)
    if not path.exists():
        return
    if not path.is_dir():
        raise BadFile(f"{path}: exists and is not a directory; the output is a directory replaced as a whole")
    try:
        entries = {p.name for p in path.iterdir()} - {OUTPUT_MARKER, SNAKEMAKE_TIMESTAMP}
    except OSError as exc:
        raise BadFile(f"{path}: cannot list the directory ({exc.strerror})") from None
    if not entries and not (path / OUTPUT_MARKER).exists():
        return
    written_by, ours = _written_by(path)
    refusal = f"{path}: not empty and not an earlier output of `armlab {command}`"
    advice = "it is replaced as a whole, so give a new or empty directory, or remove this one yourself"
    if written_by is None:
        raise BadFile(f"{refusal} ({ours}); {advice}")
    if written_by != command:
        raise BadFile(f"{refusal} (its {OUTPUT_MARKER} says `armlab {written_by}`); {advice}")
    foreign = sorted(entries - ours)
    if foreign:
        raise BadFile(
            f"{path}: holds {foreign[:5]}{' ...' if len(foreign) > 5 else ''}, which `armlab {command}` "
            f"did not write; {advice}"
        )


@contextmanager
def output_directory(path: str | Path, command: str):
    """Yield an empty temporary directory that replaces ``path`` as a whole when the block succeeds.

    ``path`` is checked by :func:`check_output_directory` before and again just before the
    exchange; the new directory gets a marker naming ``command`` and the entries written.
    """
    check_output_directory(path, command)
    try:
        with atomic_path(path) as tmp:
            tmp.mkdir()
            yield tmp
            entries = sorted(p.name for p in tmp.iterdir())
            (tmp / OUTPUT_MARKER).write_text(json.dumps({"command": command, "entries": entries}) + "\n")
            check_output_directory(path, command)
    except OSError as exc:  # the disk filled up, or the folder turned read-only or busy, while writing
        raise BadFile(
            f"{path}: could not write the output ({exc.strerror or exc}); the old one, if any, is kept"
        ) from None


def check_output_of(path: str | Path, command: str) -> set[str]:
    """The entries of ``path``, an earlier output of ``armlab <command>`` (its marker says so); :class:`BadFile`
    naming it otherwise."""
    path = Path(path)
    written_by, ours = _written_by(path) if path.is_dir() else (None, "no such folder")
    if written_by != command or not isinstance(ours, set):
        said = f"its {OUTPUT_MARKER} says `armlab {written_by}`" if written_by else ours
        raise BadFile(f"{path}: not an output of `armlab {command}` ({said}); run `armlab {command}` first")
    return ours


@contextmanager
def beside_output(path: str | Path, command: str, name: str):
    """Yield a temporary file that becomes ``path/name``, a table derived from an output of ``armlab <command>``
    (:func:`output_directory`) by another command, when the block succeeds. ``name`` joins the output's marker
    first, so the command's next run replaces it with the rest of the output instead of refusing the folder."""
    path = Path(path)
    entries = check_output_of(path, command)
    write_text(path / OUTPUT_MARKER, json.dumps({"command": command, "entries": sorted(entries | {name})}) + "\n")
    with atomic_path(path / name) as tmp:
        yield tmp


# ----------------------------------------------------------------------------- sha256 manifests


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def checksums(root: str | Path, *outputs: str) -> dict[str, str]:
    """sha256 of every file at or below each of ``outputs`` (paths relative to ``root``), by relative POSIX path."""
    root = Path(root)
    found = {}
    for output in outputs:
        target = root / output
        if not target.exists():
            raise FileNotFoundError(f"{target}: output to record in the manifest does not exist")
        files = [target] if target.is_file() else sorted(p for p in target.rglob("*") if p.is_file())
        for file in files:
            found[file.relative_to(root).as_posix()] = file_sha256(file)
    return dict(sorted(found.items()))


def write_manifest(directory: str | Path, record: dict, *outputs: str) -> None:
    """Write ``directory/manifest.json``: ``record`` plus the sha256 of each of ``outputs`` (see :func:`checksums`)."""
    directory = Path(directory)
    write_json(directory / MANIFEST, {**record, FILES_KEY: checksums(directory, *outputs)})


def _recorded_files(manifest_path: Path, manifest) -> dict[str, str]:
    """The manifest's ``files``: relative paths inside its directory -> sha256, or :class:`BadFile`."""
    if not isinstance(manifest, dict):
        raise BadFile(f"{manifest_path}: expected a JSON object (an armlab manifest)")
    files = manifest.get(FILES_KEY)
    if files is None:
        raise BadFile(
            f"{manifest_path}: no '{FILES_KEY}' with the sha256 of its outputs, so they cannot be "
            f"checked; delete the directory (or the file) to have the job rerun"
        )
    if not isinstance(files, dict) or not files:
        raise BadFile(f"{manifest_path}: '{FILES_KEY}' must map output paths to sha256 digests")
    root = manifest_path.parent.resolve()
    for name, digest in files.items():
        relative = PurePosixPath(name)
        inside = (
            not relative.is_absolute()
            and ".." not in relative.parts
            and name not in ("", ".")
            and (root / relative).resolve().is_relative_to(root)
        )
        if not inside:
            raise BadFile(f"{manifest_path}: {FILES_KEY}: {name!r} is not a path inside {manifest_path.parent}")
        if not (isinstance(digest, str) and SHA256_HEX.fullmatch(digest)):
            raise BadFile(f"{manifest_path}: {FILES_KEY}.{name}: expected a sha256 hex digest, got {digest!r}")
    return files


def _mismatch(file: Path, digest: str, manifest_path: Path) -> str | None:
    """Why ``file`` fails its recorded ``digest``, or None when it matches."""
    if not file.is_file():
        return f"{file}: missing, but {manifest_path} records it"
    actual = file_sha256(file)
    if actual != digest:
        return (
            f"{file}: sha256 {actual[:12]}… does not match {digest[:12]}… recorded in {manifest_path} "
            f"(truncated or changed since it was written)"
        )
    return None


def verify_manifest(manifest_path: str | Path, names=None) -> dict:
    """Check the outputs a manifest records (all, or those in ``names``); return the manifest.

    :class:`BadFile` names the first file that is missing or whose sha256 differs, or the
    manifest when it is unreadable or records no checksums.
    """
    manifest_path = Path(manifest_path)
    manifest = read_json(manifest_path, "manifest")
    files = _recorded_files(manifest_path, manifest)
    for name in files if names is None else names:
        if name not in files:
            raise BadFile(
                f"{manifest_path.parent / name}: not recorded in {manifest_path} (its '{FILES_KEY}' "
                f"lists {sorted(files)[:5]})"
            )
        problem = _mismatch(manifest_path.parent / name, files[name], manifest_path)
        if problem:
            raise BadFile(problem)
    return manifest


def verify_file(path: str | Path) -> Path:
    """Check ``path`` against the sha256 that the ``manifest.json`` next to it records; return ``path``."""
    path = Path(path)
    manifest_path = path.parent / MANIFEST
    if not manifest_path.exists():
        raise BadFile(f"{path}: no {MANIFEST} next to it records its sha256, so it cannot be checked")
    verify_manifest(manifest_path, [path.name])
    return path


# what the jobs of an experiment write from training on, begun (a temporary) or finished, relative to its folder:
# whatever a preregistration or a sequential design must predate (the logs hold accuracies too)
EVIDENCE = (
    *(f"{stage}/*/*" for stage in layout.JOB_STAGES),
    *(f"logs/{layout.LOG_STAGE[stage]}/*/*" for stage in layout.JOB_STAGES),
    "logs/look-*.log",
    "logs/merge_scores.log",
    "logs/analyze.log",
    "logs/learning_curves.log",
    "logs/curves_report.log",
    "logs/report.log",
    "scores.parquet",
    "analysis",
    "figures",
    "report",
    "curves_summary",
    "curves_report",
    "sequential/look-*.json",
)


def experiment_outputs(experiment_dir: str | Path) -> list[Path]:
    """Every training or evaluation output of an experiment, or result made from one, that exists (:data:`EVIDENCE`)."""
    root = Path(experiment_dir)
    return sorted({path for pattern in EVIDENCE for path in root.glob(pattern)})


def remove_corrupt_outputs(experiment_dir: str | Path, log=print, dry_run: bool = False) -> list[Path]:
    """Delete every job output under ``experiment_dir`` that fails its manifest; return what was deleted.

    A job's output directory is the first directory, walking down, that holds a ``manifest.json``
    (hidden directories, such as temporaries, are skipped). When one of its recorded files is
    missing or differs from its sha256, the recorded files and the manifest are deleted (one line
    is logged per bad file), so that the workflow reruns the job; a manifest that is not valid JSON
    is deleted too. A manifest without checksums is left alone, and nothing outside its own
    directory is ever deleted. A folder that is a symbolic link (runs kept on another disk) is followed and
    checked like any other, once, and named in the log when it leads out of the experiment. With ``dry_run``
    (``snakemake -n``) nothing is deleted: the log says what a run would delete, and that is returned. A file that
    cannot be deleted (a read-only folder) is a :class:`BadFile` naming it.
    """

    def remove(file: Path) -> None:
        if not dry_run:
            try:
                file.unlink()
            except OSError as exc:
                raise BadFile(
                    f"{file}: fails its manifest and cannot be removed ({exc.strerror}); make {file.parent} "
                    f"writable, or remove the file yourself, so that its job reruns"
                ) from None
        removed.append(file)

    removing = "a run would remove" if dry_run else "removed"
    root = Path(experiment_dir)
    removed: list[Path] = []
    seen, inside = set(), root.resolve()
    for walked, dirnames, filenames in os.walk(root, followlinks=True):
        current = Path(walked)
        real = current.resolve()
        if real in seen:  # a link back into what was walked (or a loop)
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in dirnames:
            link = current / name
            if link.is_symlink() and not (target := link.resolve()).is_relative_to(inside):
                log(f"armlab: {link} is a link to {target}, outside the experiment; checking the outputs there")
        if current == root or MANIFEST not in filenames:
            continue
        dirnames[:] = []  # below a job's output (e.g. a trainer's own files) nothing is ours to judge
        manifest_path = current / MANIFEST
        try:
            manifest = json.loads(regular_file(manifest_path, "job manifest", "json_file_bytes").read_text("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            log(f"armlab: {manifest_path}: not valid JSON (truncated); {removing} it so that its job reruns")
            remove(manifest_path)
            continue
        try:
            files = _recorded_files(manifest_path, manifest)
        except BadFile:
            continue  # records no (or no usable) checksums: nothing here can be judged
        problems = [
            p for p in (_mismatch(current / name, digest, manifest_path) for name, digest in files.items()) if p
        ]
        if not problems:
            continue
        doing = "a run would remove" if dry_run else "removing"
        for problem in problems:
            log(f"armlab: {problem}; {doing} the outputs of {current} so that its job reruns")
        for file in [current / name for name in files] + [manifest_path]:
            if file.is_file() or file.is_symlink():
                remove(file)
    return removed


# ----------------------------------------------------------------------------- command lines


def one_line_errors(main):
    """Wrap a command-line ``main(argv=None)``: a :class:`BadFile` becomes one line on stderr and exit status 2."""
    module = getattr(main.__globals__.get("__spec__"), "name", main.__module__)  # not "__main__" under -m

    @functools.wraps(main)
    def wrapped(argv=None):
        try:
            return main(argv)
        except BadFile as exc:
            print(f"{module}: error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None

    return wrapped


# ----------------------------------------------------------------------------- provenance

MANIFEST_PACKAGES = (
    "torch",
    "numpy",
    "pandas",
    "pyarrow",
    "fastparquet",
    "datasets",
    "lm_eval",
    "snakemake",
    "scipy",
    "statsmodels",
)


def numerics_record(mode: str, capability: str | None = None) -> dict:
    from armlab import numerics

    return numerics.record(mode, capability)


def _git(args: list[str], where: Path | None) -> str | None:
    """The output of ``git args`` in the checkout holding ``where`` (default: this code's), or None outside one."""
    import subprocess

    try:
        out = subprocess.run(
            ["git", *args], capture_output=True, text=True, check=True, cwd=where or Path(__file__).resolve().parent
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def git_commit(where: Path | None = None) -> str | None:
    """The checkout's commit, or None outside a git checkout."""
    return _git(["rev-parse", "HEAD"], where)


def git_dirty(where: Path | None = None) -> bool | None:
    """Whether tracked files differ from the checkout's commit (so the commit alone does not name the code that
    ran), or None outside a git checkout; untracked files (results, logs) do not count."""
    status = _git(["status", "--porcelain", "--untracked-files=no"], where)
    return None if status is None else bool(status)


def job_environment(view: Mapping) -> dict:
    """:func:`environment_record` of a job whose stage view is ``view``: its threads, numerics and, in a numerics
    control's view, capability (armlab.numerics.start_job)."""
    return environment_record(view["threads"], view["numerics"], view.get("capability"))


def environment_record(threads: int, numerics: str | None = None, capability: str | None = None) -> dict:
    """What a manifest records about the software and machine a run used; with a ``numerics`` mode (and the
    ``capability`` a numerics control forced), what decides its floating-point bits (armlab.numerics.record), in a job
    that called armlab.numerics.start."""
    import platform
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for name in MANIFEST_PACKAGES:
        try:
            versions[name] = metadata.version(name.replace("_", "-"))
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "threads": threads,
        "packages": versions,
        "git_commit": git_commit(),
        "git_dirty": git_dirty(),
    } | ({"numerics": numerics_record(numerics, capability)} if numerics else {})
