"""The ``analysis:`` section of a config: its defaults, defined once, and the validated :class:`Settings`.

Keys and meanings are documented in :mod:`armlab.analysis.config`, which validates the section and fills in
:data:`DEFAULTS`; :class:`armlab.analysis.sequential.Design` takes its test settings' defaults from them, so that a
design built in code tests as the configured analysis does. A leaf module: the statistics import :class:`Settings`
from here without importing the config's validation (no import circle).
"""

from dataclasses import dataclass
from typing import Any

DEFAULTS: dict[str, Any] = {
    "alpha": 0.05,
    "confidence": 0.95,
    "resamples": 10_000,
    "ci_methods": [],
    "equivalence_test": "sign_flip",
    "item_bootstrap": False,
    "crossed_methods": ["components"],
    "equivalence_margin": 0.01,
    "power": 0.8,
    "power_effect": 0.01,
    "bootstrap_seed": 0,
    "power_replicates": 4000,
    "exact_max_seeds": 20,
    "sign_flip_resamples": 100_000,
    "per_benchmark": True,
    "subsets": {},
    "statistics": [],
    "rankings": None,
    "drop_incomplete": False,
    "pass_k": None,
    "pairing": "paired",
    "common_seeds_only": False,
}


@dataclass(frozen=True)
class Settings:
    """Validated ``analysis:`` section (see the module docstring)."""

    alpha: float
    confidence: float
    resamples: int
    ci_methods: tuple
    item_bootstrap: bool
    equivalence_margin: float
    power: float
    power_effect: float
    bootstrap_seed: int
    exact_max_seeds: int
    sign_flip_resamples: int
    per_benchmark: bool
    subsets: dict  # name -> {benchmark: weight}, weights summing to 1
    rankings: dict | None  # name -> tuple of arms
    drop_incomplete: bool
    equivalence_test: str
    crossed_methods: tuple
    power_replicates: int
    statistics: dict  # name -> {parameter: value}, every parameter given
    pass_k: tuple  # k of each pass@k measure
    pairing: str  # or "unpaired": runs not matched by seed, compared as independent samples
    common_seeds_only: bool  # paired runs of different seed sets: keep the seeds every compared arm ran
