"""The interval-method registry: every name a config may give computes its own interval, no name falls back."""

import numpy as np
import pytest
from scipy import stats

from armlab.analysis.config import parse_config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.stats import intervals, resampling


def _settings(**analysis):
    return parse_config(
        {
            "experiment": "x",
            "comparisons": [{"family": "f", "reference": "r", "arms": ["a"]}],
            "analysis": {"resamples": 2000, **analysis},
        }
    ).settings


# 12 seeds: no resample permutes the data, whose mean scipy's rounding, not ours, would put on one side
D = np.random.default_rng(5).normal(0.01, 0.02, (3, 12))


def test_each_seed_method_is_its_own_interval_against_scipy():
    settings = _settings(ci_methods=["bca", "t", "percentile"])
    found = intervals.seed_intervals(intervals.Block(D, **settings.interval_options()))
    assert list(found) == ["sign_flip", "bca", "t", "percentile"]  # the first, then the config's order
    t_ci = stats.t.interval(0.95, 11, loc=D.mean(axis=1), scale=D.std(axis=1, ddof=1) / np.sqrt(12))
    np.testing.assert_allclose(found["t"][0], np.stack(t_ci, axis=1))
    for name, method in (("percentile", "percentile"), ("bca", "BCa")):
        ref = stats.bootstrap(
            (D,),
            np.mean,
            vectorized=True,
            n_resamples=2000,
            axis=-1,
            method=method,
            rng=np.random.default_rng([0, 12, 0]),
        ).confidence_interval  # the block's generator
        np.testing.assert_allclose(found[name][0], np.stack([ref.low, ref.high], axis=1), atol=1e-12)
    assert all((note == "").all() for _, note in found.values())


def test_unknown_names_are_errors_naming_the_setting_on_the_compute_path_too():
    settings = _settings()
    with pytest.raises(AnalysisInputError, match=r"^analysis.ci_methods: unknown interval method 'studentized'"):
        intervals.seed_intervals(intervals.Block(D, **settings.interval_options(methods=("studentized",))))
    crossed = intervals.Crossed([np.zeros((1, 12, 3))], np.ones((1, 1)), confidence=0.95, resamples=100, seed=0)
    with pytest.raises(AnalysisInputError, match=r"^analysis.crossed_methods: unknown interval method 'jackknife'"):
        intervals.crossed_intervals(crossed, ["jackknife"])
    boot = resampling.bootstrap_means(D, resampling.resample_counts(np.random.default_rng(0), 12, 100))
    with pytest.raises(AnalysisInputError, match=r"^analysis.ci_methods: 'basic' is not a bootstrap interval"):
        resampling.bootstrap_intervals(boot, D, ["basic"], (0.95,))  # e2d0814 gave the percentile one here


def test_config_parsing_offers_exactly_the_registered_names():
    # the seed intervals beyond the sign-flip one are opt-in (an empty list: none); a crossed interval is not
    for key, registry, listed in (
        ("ci_methods", intervals.SEED_METHODS, "a list"),
        ("crossed_methods", intervals.CROSSED_METHODS, "a non-empty list"),
    ):
        assert getattr(_settings(**{key: sorted(registry)}), key) == tuple(sorted(registry))
        with pytest.raises(
            AnalysisInputError,
            match=f"analysis.{key}: expected {listed} drawn from {sorted(registry)}".replace("[", r"\[").replace(
                "]", r"\]"
            ),
        ):
            _settings(**{key: ["nonesuch"]})
