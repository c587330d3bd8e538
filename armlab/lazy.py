"""Modules loaded on first use, so that validating a config or parsing the workflow does not pay for them.

Every Snakemake start (each dry run, each cluster job step) parses the workflow, which validates the config
against the method registries; those modules hold torch and scipy code that validation never runs, and
importing torch and scipy.stats takes three of the five seconds of a start.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """``name`` as a module whose code runs at the first attribute access (the standard library's LazyLoader);
    the module itself when it is already imported."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    if spec.loader is None:  # a namespace package: nothing to run lazily (LazyLoader would raise TypeError)
        raise ImportError(f"module {name!r} has no loader", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
