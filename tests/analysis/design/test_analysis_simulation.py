"""Small re-runs of the validity simulations agree with the measured table the report quotes.

Sized to run in seconds; the long runs behind analysis/README.md and
analysis/design/validity_measured.py come from benchmarks/coverage_sim.py.
Tolerances are stated in Monte-Carlo standard deviations (sd) of the
estimated rate, the shipped number's own error included.
"""

import numpy as np
import pytest

from armlab.analysis.config import parse_config
from armlab.analysis.design import synthetic, validity

SETTINGS = parse_config(
    {
        "experiment": "x",
        "comparisons": [{"family": "f", "reference": "r", "arms": ["a"]}],
        "analysis": {"resamples": 1000},
    }
).settings


def _sd(p, reps):
    return np.sqrt(p * (1 - p) / reps)


def _agrees(measured, quantity, what, noise, n, reps):
    shipped, half_width = validity.measured(quantity, what, n, noise)
    return abs(measured - shipped) < 4 * _sd(shipped, reps) + 2 * half_width


@pytest.mark.parametrize("noise, n", [("normal", 5), ("t3", 12)])
def test_bootstrap_coverage_matches_the_shipped_table(noise, n):
    reps = 4000
    cover = synthetic.bootstrap_coverage(
        noise, n, replicates=reps, resamples=1000, confidence=0.95, rng=np.random.default_rng([1, n])
    )
    for method, measured in cover.items():
        assert _agrees(measured, "coverage", method, noise, n, reps), (method, measured)
        assert measured < 0.935  # too narrow at few seeds: the reason for the report's "descriptive only"


@pytest.mark.parametrize("noise, n", [("normal", 3), ("t3", 8), ("normal", 12)])
def test_first_interval_covers_and_the_test_keeps_its_size(noise, n):
    reps = 4000
    found = synthetic.first_interval_validity(
        noise, n, replicates=reps, settings=SETTINGS, rng=np.random.default_rng([2, n])
    )
    assert found["incoherent"] == 0
    if n <= 5:  # the sign-flip set is the whole line: it covers always, and the t interval is not put in its place
        assert found["coverage"]["sign_flip"] == 1.0
    for method in ("sign_flip", "t") if n > 5 else ("t",):
        measured = found["coverage"][method]
        assert _agrees(measured, "coverage", method, noise, n, reps), (method, measured)
        assert abs(measured - 0.95) < 0.015 + 4 * _sd(0.95, reps)
    # the exact size: 0 where the test cannot reject, 102/2048 at 12 seeds, 6/128 at 8
    exact = {3: 0.0, 8: 12 / 256, 12: 204 / 4096}[n]
    assert abs(found["size"] - exact) < 4 * _sd(max(exact, 1e-9), reps) + 1e-12


def test_equivalence_at_the_margin_keeps_its_size_where_e2d0814s_did_not():
    reps = 4000
    found = synthetic.equivalence_validity(
        "normal", 3, truth=0.01, sd=0.01, replicates=reps, settings=SETTINGS, rng=np.random.default_rng(3)
    )
    assert found["sign_flip_tost"] == 0  # not attainable with 3 seeds
    assert found["t_tost"] <= 0.05 + 3 * _sd(0.05, reps)
    assert found["percentile_inside"] > 0.15  # e2d0814's rule: about 0.20
    found = synthetic.equivalence_validity(
        "t3", 8, truth=0.01, sd=0.01, replicates=reps, settings=SETTINGS, rng=np.random.default_rng(4)
    )
    assert found["sign_flip_tost"] <= 0.05 + 3 * _sd(0.05, reps)
    assert _agrees(found["sign_flip_tost"], "equivalence_size", "sign_flip_tost", "t3", 8, reps)


def test_power_at_the_reported_mde_matches_the_shipped_table():
    reps = 4000
    found = synthetic.power_validity("normal", 8, replicates=reps, settings=SETTINGS, rng=np.random.default_rng(5))
    assert abs(found["at_mde"] - 0.8) < 4 * _sd(0.8, reps) + 4 * _sd(0.8, SETTINGS.power_replicates)
    assert found["at_t_mde"] < 0.7  # e2d0814's MDE
    assert _agrees(found["at_mde"], "power", "at_mde", "normal", 8, reps)
    assert synthetic.power_validity("normal", 5, replicates=10, settings=SETTINGS, rng=np.random.default_rng(5)) is None


def test_crossed_interval_covers_new_seeds_and_items_and_is_narrower_than_the_pigeonhole_bootstrap():
    reps = 1000
    found = synthetic.crossed_validity(
        "normal",
        8,
        items=100,
        replicates=reps,
        resamples=500,
        settings=SETTINGS,
        rng=np.random.default_rng(6),
        seed_sd=0.01,
        item_sd=0.05,
        cell_sd=0.6,
    )
    assert abs(found["components"] - 0.95) < 0.02 + 3 * _sd(0.95, reps)
    assert found["pigeonhole"] > 0.98 and found["width_pigeonhole"] > 1.3 * found["width_components"]
