"""Holm against statsmodels and by hand; the reachable p; the t-test power used beyond 14 seeds."""

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from armlab.analysis.stats import multiplicity, power


def _holm_by_hand(p, alpha):
    order = np.argsort(p)
    k = len(p)
    adjusted = np.empty(k)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, (k - rank) * p[i])
        adjusted[i] = min(1.0, running)
    return adjusted <= alpha, adjusted


def test_holm_by_hand_on_a_small_family():
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> running max
    reject, adjusted = multiplicity.holm([0.01, 0.04, 0.03, 0.005], alpha=0.05)
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02])
    assert reject.tolist() == [True, False, False, True]


def test_holm_matches_statsmodels_and_a_hand_implementation_on_random_families():
    rng = np.random.default_rng(0)
    for k in (1, 2, 5, 13):
        p = rng.uniform(0, 0.2, k)
        reject, adjusted = multiplicity.holm(p, alpha=0.05)
        ref_reject, ref_adjusted, _, _ = multipletests(p, alpha=0.05, method="holm")
        hand_reject, hand_adjusted = _holm_by_hand(p, 0.05)
        np.testing.assert_allclose(adjusted, ref_adjusted)
        np.testing.assert_allclose(adjusted, hand_adjusted)
        assert reject.tolist() == ref_reject.tolist() == hand_reject.tolist()


def test_holm_equals_statsmodels_exactly_on_sign_flip_p_values_with_ties_and_boundaries(heap_frozen):
    """The p-values armlab feeds Holm are multiples of 1/2^n (exact sign-flip), often tied and often exactly at
    alpha / (m - i + 1): reject flags and adjusted p must be statsmodels' to the bit there too."""
    rng = np.random.default_rng(1)
    for _ in range(2000):
        n, m = int(rng.integers(2, 13)), int(rng.integers(1, 9))
        alpha = float(rng.choice([0.05, 0.1, 2 / 2**n * m, 1 / 2**n]))
        p = rng.integers(1, 2 ** (n - 1) + 1, m) * (2 / 2**n)
        if rng.random() < 0.3:
            p[rng.integers(0, m, m)] = alpha / rng.integers(1, m + 1)  # on a step's boundary
        reject, adjusted = multiplicity.holm(p, alpha=alpha)
        ref_reject, ref_adjusted, _, _ = multipletests(p, alpha=alpha, method="holm")
        assert reject.tolist() == ref_reject.tolist(), (p, alpha)
        assert adjusted.tolist() == ref_adjusted.tolist(), (p, alpha)


def test_holm_refuses_a_missing_p_value():
    with pytest.raises(ValueError, match="p-value for every test"):
        multiplicity.holm([0.01, np.nan], alpha=0.05)


def test_holm_is_not_statsmodels_default_holm_sidak():
    _, adjusted = multiplicity.holm([0.02, 0.03], alpha=0.05)
    np.testing.assert_allclose(adjusted, [0.04, 0.04])  # Holm-Sidak would give 1 - 0.98^2 = 0.0396
    assert multiplicity.holm([], alpha=0.05)[1].size == 0


def test_smallest_attainable_holm_p_and_the_plain_statement():
    assert multiplicity.min_attainable_p(0.25, 8) == 1.0  # 3 seeds, 8 arms
    assert multiplicity.min_attainable_p(0.25, 3) == 0.75
    assert multiplicity.min_attainable_p(2 / 4096, 2) == pytest.approx(4 / 4096)
    assert multiplicity.attainability_statement(12, 2, 2 / 4096, 0.05, "f") is None
    text = multiplicity.attainability_statement(3, 1, 0.25, 0.05, "f")
    assert "cannot give p below 0.25" in text and "0.25 > alpha = 0.05" in text
    text = multiplicity.attainability_statement(6, 4, 2 / 64, 0.05, "f")
    assert "could reach p = 0.0312" in text and "0.125 > alpha" in text


@pytest.mark.parametrize("effect, n, level", [(0.5, 12, 0.05), (1.0, 6, 0.01), (0.2, 40, 0.025)])
def test_t_power_matches_statsmodels(effect, n, level):
    ours = power.t_power(effect, n, level)
    ref = TTestPower().power(effect_size=effect, nobs=n, alpha=level, alternative="two-sided")
    assert ours == pytest.approx(ref, rel=1e-6)


# The minimum detectable effect and the seeds needed come from the sign-flip test's own power now:
# tests/analysis/stats/test_stats_power.py checks them against closed forms, an independent simulation and statsmodels.
