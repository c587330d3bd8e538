"""Gatekept Holm: equal to its closed test by brute force, and its family-wise error with known truth."""

import itertools

import numpy as np
import pytest

from armlab.analysis.config import parse_config
from armlab.analysis.design import synthetic
from armlab.analysis.stats import multiplicity

SETTINGS = parse_config({"experiment": "x", "comparisons": [{"family": "f", "reference": "r", "arms": ["a"]}]}).settings


def _closed_test(primary, secondary):
    """Adjusted p-values of the closed test whose local test of an intersection is Bonferroni over its
    primary members when it has any, else over all its members (serial gatekeeping, by enumeration)."""
    p = np.concatenate([primary, secondary])
    k = len(primary)
    adjusted = np.zeros(len(p))
    for size in range(1, len(p) + 1):
        for members in itertools.combinations(range(len(p)), size):
            first = [i for i in members if i < k]
            tested = first or list(members)
            local = min(1.0, len(tested) * p[tested].min())
            for i in members:
                adjusted[i] = max(adjusted[i], local)
    return adjusted[:k], adjusted[k:]


def test_gatekept_holm_equals_its_closed_test_on_small_families():
    rng = np.random.default_rng(0)
    for _ in range(200):
        k, m = rng.integers(1, 4), rng.integers(1, 5)
        primary, secondary = rng.uniform(0, 0.1, k), rng.uniform(0, 0.1, m)
        (reject_1, adjusted_1), (reject_2, adjusted_2) = multiplicity.gatekept_holm(primary, secondary, 0.05)
        by_hand_1, by_hand_2 = _closed_test(primary, secondary)
        np.testing.assert_allclose(adjusted_1, by_hand_1)
        np.testing.assert_allclose(adjusted_2, by_hand_2)
        assert (reject_1 == (by_hand_1 <= 0.05)).all() and (reject_2 == (by_hand_2 <= 0.05)).all()


def test_secondaries_wait_for_every_primary():
    # one primary not significant: no secondary is, however small its p
    (_, _), (reject, adjusted) = multiplicity.gatekept_holm([0.001, 0.2], [1e-6, 1e-6], 0.05)
    assert not reject.any() and adjusted == pytest.approx([0.2, 0.2])
    # gate open (primary Holm p 0.002, 0.01): max(0.01, Holm among the secondaries 2e-6, 0.06)
    (_, _), (reject, adjusted) = multiplicity.gatekept_holm([0.001, 0.01], [1e-6, 0.06], 0.05)
    assert reject.tolist() == [True, False] and adjusted == pytest.approx([0.01, 0.06])


def test_smallest_attainable_p_of_the_secondaries():
    assert multiplicity.min_attainable_p(2 / 256, max(2, 8)) == pytest.approx(0.0625)
    text = multiplicity.secondary_attainability_statement(8, 2, 8, 2 / 256, 0.05, "f")
    assert "smallest adjusted p is 0.0625 > alpha = 0.05" in text and "only once all 2 primary" in text
    assert multiplicity.secondary_attainability_statement(12, 2, 8, 2 / 4096, 0.05, "f") is None


@pytest.mark.parametrize("noise", ["normal", "t3"])
def test_no_false_better_or_worse_anywhere_in_a_family_beyond_alpha(noise):
    # 4 arms x (2 summaries + 12 benchmarks) at 8 seeds, where e2d0814 was at 0.38 (global null)
    reps = 1500
    tolerance = 0.05 + 3 * np.sqrt(0.05 * 0.95 / reps)  # 0.067
    null = synthetic.family_validity(noise, 8, replicates=reps, settings=SETTINGS, rng=np.random.default_rng(1))
    assert null["gatekept_holm"] <= tolerance
    assert null["holm_per_measure"] > 0.2  # the simulation sees the missing correction
    # partial null: every arm far better on one benchmark, so the summaries differ and the gate opens
    partial = synthetic.family_validity(
        noise, 8, replicates=reps, settings=SETTINGS, rng=np.random.default_rng(2), effect=12.0
    )
    assert partial["gatekept_holm"] <= tolerance and partial["holm_per_measure"] > 0.15
