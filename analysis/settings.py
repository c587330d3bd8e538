"""The validated ``analysis:`` section of a config, :class:`Settings`, and the options it gives the statistics.

Its keys, types, ranges, defaults and meanings are the fields of :class:`armlab.spec.Analysis` (docs/settings.md);
:mod:`armlab.analysis.config` validates the section against them. The statistics never see :class:`Settings`: they
take keyword arguments, which :meth:`Settings.interval_options` and :meth:`Settings.power_options` give for a
configured analysis. The modules above the statistics import :class:`Settings` from here without importing the
config's validation (no import circle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from armlab.spec import Analysis

if TYPE_CHECKING:
    from armlab.analysis.stats.intervals import ExactTest
    from armlab.analysis.stats.power import Options


@dataclass(frozen=True, kw_only=True)
class Settings(Analysis):
    """Validated ``analysis:`` section: :class:`armlab.spec.Analysis` with the options it gives the statistics."""

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
