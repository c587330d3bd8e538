"""Holm against statsmodels and by hand; the reachable p; equivalence, power and seeds needed."""

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from analysis import multiplicity, power


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


def test_equivalence_needs_the_whole_interval_inside_the_margin():
    verdict = power.equivalent(np.array([[-0.005, 0.008], [-0.012, 0.0], [0.0, 0.01]]), 0.01)
    assert verdict.tolist() == [True, False, False]


@pytest.mark.parametrize("effect, n, level", [(0.5, 12, 0.05), (1.0, 6, 0.01), (0.2, 40, 0.025)])
def test_t_power_matches_statsmodels(effect, n, level):
    ours = power.t_power(effect, n, level)
    ref = TTestPower().power(effect_size=effect, nobs=n, alpha=level, alternative="two-sided")
    assert ours == pytest.approx(ref, rel=1e-6)


def test_minimum_detectable_effect_has_the_target_power_or_is_unreachable():
    sd = np.array([0.02, 0.02, 0.02, 0.0])
    n = np.array([12, 24, 3, 12])
    mde = power.minimum_detectable_effect(sd, n, level=0.025, power=0.8)
    assert power.t_power(mde[0] / 0.02, 12, 0.025) == pytest.approx(0.8, abs=1e-6)
    assert mde[1] < mde[0]
    assert np.isinf(mde[2])  # 3 seeds: the sign-flip test cannot go below p = 0.25
    assert np.isnan(mde[3])


def test_seeds_needed_is_the_smallest_sufficient_count():
    sd, effect, level = 0.03, 0.01, 0.05 / 4
    n = int(power.seeds_needed(effect, np.array([sd]), level=level)[0])
    assert power.t_power(effect / sd, n, level) >= 0.8 > power.t_power(effect / sd, n - 1, level)
    # a huge effect still needs enough seeds for 2/2^n <= level: n = 8 at 0.0125
    assert power.seeds_needed(1.0, np.array([0.01]), level=level)[0] == 8
    assert np.isnan(power.seeds_needed(0.01, np.array([0.0]), level=0.05)[0])


def test_seeds_needed_rows_are_independent_of_each_other():
    # a row that converges early must not move while a harder (or zero-spread) row is still searching
    sds = np.array([0.0, 0.002, 0.01, 0.05])
    together = power.seeds_needed(0.01, sds, level=0.025)
    for i, sd in enumerate(sds):
        alone = power.seeds_needed(0.01, np.array([sd]), level=0.025)[0]
        assert np.isnan(alone) and np.isnan(together[i]) or alone == together[i]
    # and each finite answer is the smallest n that is enough, found by a plain loop
    for sd, n in zip(sds[1:], together[1:]):
        ok = [power.t_power(0.01 / sd, m, 0.025) >= 0.8 and 2.0 ** (1 - m) <= 0.025 for m in range(2, int(n) + 1)]
        assert ok[-1] and not any(ok[:-1])
