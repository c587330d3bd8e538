"""Small training helpers: derived seeds, config hashes, the backends' command line.

Atomic writes, JSON files, sha256 manifests and the environment a manifest records live in
:mod:`armlab.files` (one implementation for training, evals and analysis).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from armlab.files import read_json


def derive_seed(*parts) -> int:
    """A 63-bit seed from a stable hash of ``parts`` (experiment, seed, purpose …), never from ``hash()``."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def config_hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def run_arguments(
    description: str, *path_args: str, argv=None, optional: tuple[str, ...] = ()
) -> tuple[dict, argparse.Namespace]:
    """Parse what every training backend's command line takes: --config --arm --seed, ``path_args`` and --out
    (and the paths ``optional``, None when not given)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", required=True)
    parser.add_argument("--arm", required=True)
    parser.add_argument("--seed", required=True, type=int)
    for name in (*path_args, "out"):
        parser.add_argument(f"--{name}", required=True, type=Path)
    for name in optional:
        parser.add_argument(f"--{name}", type=Path)
    args = parser.parse_args(argv)
    return read_json(args.config, "config"), args
