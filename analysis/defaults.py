"""The defaults of the ``analysis:`` section, defined once: :mod:`armlab.analysis.config` fills them in, and
:class:`armlab.analysis.stats.sequential.Design` takes its test settings' defaults from them, so that a design built
in code tests as the configured analysis does. Data only: every layer may import it."""

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
    "maj_k": None,
    "pairing": "paired",
    "common_seeds_only": False,
    "curve_threshold": None,
    "curve_compute": "cum_flops",
    "curve_budgets": None,
    "curve_fractions": [0.25, 0.4, 0.6],
    "verifiers": [],
}
