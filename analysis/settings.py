"""The validated ``analysis:`` section of a config, :class:`Settings`, and the options it gives the statistics.

Keys and meanings are documented in :mod:`armlab.analysis.config`, which validates the section and fills in
:data:`armlab.analysis.defaults.DEFAULTS`. The statistics never see :class:`Settings`: they take keyword
arguments, which :meth:`Settings.interval_options` and :meth:`Settings.power_options` give for a configured
analysis. The modules above the statistics import :class:`Settings` from here without importing the config's
validation (no import circle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from armlab.analysis.stats.intervals import ExactTest
    from armlab.analysis.stats.power import Options


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
    maj_k: tuple = ()  # k of each maj@k measure (majority vote over the first k answers); () in older manifests
    curve_threshold: float | None = None  # armlab curves' steps_to_threshold level; None: the family's midpoint
    curve_compute: str | None = "cum_flops"  # the compute ledger column of the equal-compute comparison; None: none
    curve_budgets: tuple | None = None  # its budgets; None: 10 evenly spaced over the range every run covers
    curve_fractions: tuple = (0.25, 0.4, 0.6)  # the fractions of training the final difference is forecast from
    verifiers: tuple = ()  # the verifiers the workflow re-grades the stored answers under (armlab rescore)

    def exact_test(self) -> ExactTest:
        """The options of the exact sign-flip and permutation tests."""
        from armlab.analysis.stats.intervals import ExactTest  # imports scipy: only once a statistic is computed

        return ExactTest(
            confidence=self.confidence,
            alpha=self.alpha,
            margin=self.equivalence_margin,
            max_exact=self.exact_max_seeds,
            resamples=self.sign_flip_resamples,
        )

    def interval_options(self, methods: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The keyword arguments of :class:`armlab.analysis.stats.intervals.Block`.

        ``methods``: default ``ci_methods``.
        """
        return {
            "exact": self.exact_test(),
            "resamples": self.resamples,
            "seed": self.bootstrap_seed,
            "methods": self.ci_methods if methods is None else methods,
        }

    def power_options(self) -> Options:
        """The keyword arguments of :func:`armlab.analysis.stats.power.minimum_detectable_effect`, ``seeds_needed``."""
        return {
            "power": self.power,
            "replicates": self.power_replicates,
            "seed": self.bootstrap_seed,
            "max_exact": self.exact_max_seeds,
            "resamples": self.sign_flip_resamples,
        }
