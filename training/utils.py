"""Small shared helpers: derived seeds, atomic writes, manifests."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

MANIFEST_PACKAGES = ("torch", "numpy", "pandas", "pyarrow", "datasets", "lm_eval", "snakemake", "scipy", "statsmodels")


def derive_seed(*parts) -> int:
    """A 63-bit seed from a stable hash of ``parts`` (experiment, seed, purpose …), never from ``hash()``."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def config_hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary sibling path; rename it onto ``path`` only if the block succeeds.

    Works for files and directories, so a killed job never leaves an output that looks complete.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent)) / path.name
    try:
        yield tmp
        if path.is_dir():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp.parent, ignore_errors=True)


def write_json(path: str | Path, obj) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def environment_record(threads: int) -> dict:
    """What a manifest records about the software and machine a run used."""
    versions = {}
    for name in MANIFEST_PACKAGES:
        try:
            versions[name] = metadata.version(name.replace("_", "-"))
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"python": platform.python_version(), "platform": platform.platform(), "threads": threads,
            "packages": versions, "git_commit": git_commit()}


def run_arguments(description: str, *path_args: str, argv=None) -> tuple[dict, argparse.Namespace]:
    """Parse what every training backend's command line takes: --config --arm --seed, ``path_args`` and --out."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", required=True)
    parser.add_argument("--arm", required=True)
    parser.add_argument("--seed", required=True, type=int)
    for name in (*path_args, "out"):
        parser.add_argument(f"--{name}", required=True, type=Path)
    args = parser.parse_args(argv)
    return json.loads(Path(args.config).read_text()), args
