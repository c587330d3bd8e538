"""The group-sequential paired design (analysis.sequential) against closed forms, brute-force enumeration of sign
patterns, a worked example, and simulations with known truth.

Expectations are computed independently: spending functions with scipy.stats.norm, boundaries and first-crossing
probabilities by enumerating every sign pattern with itertools, error rates and coverage by simulation. Every
simulation tolerance is alpha (or 1 - confidence) plus 3 Monte-Carlo standard errors of the trials run.
"""

import itertools
import math
from dataclasses import asdict, replace

import numpy as np
import pytest
from scipy import stats

from armlab.analysis.stats.resampling import sign_flip, sign_flip_pvalue
from armlab.analysis.stats.sequential import (
    DIFFERS,
    EQUIVALENT,
    SPENDING,
    Design,
    crossing,
    obrien_fleming,
    pocock,
    repeated_interval,
    run_family,
)

ALPHA = 0.05
SIX_LOOKS = Design(initial=6, wave=2, max=16)  # looks at 6, 8, 10, 12, 14, 16 seeds
NOISES = ("normal", "t2")


def _obrien_fleming_by_hand(t, alpha):
    """2 - 2 Phi(z_{1 - alpha/2} / sqrt(t)) (Lan & DeMets 1983), 0 at t = 0."""
    t = np.asarray(t, dtype=float)
    z = stats.norm.ppf(1 - alpha / 2)
    with np.errstate(divide="ignore"):
        return np.where(t > 0, 2 * stats.norm.sf(z / np.sqrt(t)), 0.0)


def _pocock_by_hand(t, alpha):
    """alpha ln(1 + (e - 1) t) (Lan & DeMets 1983)."""
    return alpha * np.log(1 + (math.e - 1) * np.asarray(t, dtype=float))


SPENDING_BY_HAND = {"obrien_fleming": _obrien_fleming_by_hand, "pocock": _pocock_by_hand}


def _upper_tolerance(rate, trials):
    """The largest simulated rate consistent with a true rate of ``rate``: 3 Monte-Carlo SEs above it."""
    return rate + 3 * math.sqrt(rate * (1 - rate) / trials)


def _final(records):
    """arm -> its last record, which holds its final decision."""
    return {r.arm: r for r in records}


def _noise(rng, kind, shape):
    """Unit-scale paired differences symmetric about 0: normal or Student t with 2 df (infinite variance)."""
    return rng.normal(size=shape) if kind == "normal" else rng.standard_t(2, size=shape)


def test_every_spending_rule_spends_all_of_alpha_by_the_last_look_and_has_the_reports_name():
    t = np.linspace(0, 1, 101)
    for name, rule in SPENDING.items():
        assert float(rule.spent(0.0, ALPHA)) == 0.0 and float(rule.spent(1.0, ALPHA)) == pytest.approx(ALPHA), name
        assert (np.diff(rule.spent(t, ALPHA)) >= 0).all(), name
        assert isinstance(rule.label, str) and rule.label.strip() and "\n" not in rule.label, name
    assert SPENDING["pocock"].spent is pocock and SPENDING["obrien_fleming"].spent is obrien_fleming


def test_spending_functions_match_their_closed_forms_and_published_values():
    t = np.linspace(0, 1, 101)
    for alpha in (0.01, 0.05, 0.1):
        assert obrien_fleming(t, alpha) == pytest.approx(_obrien_fleming_by_hand(t, alpha), rel=1e-10, abs=1e-15)
        assert pocock(t, alpha) == pytest.approx(_pocock_by_hand(t, alpha), rel=1e-12, abs=1e-15)
        for spend in (obrien_fleming, pocock):
            assert float(spend(0.0, alpha)) == 0.0
            assert float(spend(1.0, alpha)) == pytest.approx(alpha, rel=1e-12)  # all of alpha by the last look
            assert (np.diff(spend(t, alpha)) >= 0).all()
            assert (np.diff(spend(t[20:], alpha)) > 0).all()  # O'Brien-Fleming-type rounds to 0 below t = 0.05
        # O'Brien-Fleming-type keeps more of alpha for the end than Pocock-type
        assert (obrien_fleming(t[1:-1], alpha) < pocock(t[1:-1], alpha)).all()
    # half-way, alpha 0.05 (tabled in DeMets & Lan 1994, Stat. Med. 13): 0.0056 and 0.0310
    assert float(obrien_fleming(0.5, 0.05)) == pytest.approx(0.005575, abs=1e-6)
    assert float(pocock(0.5, 0.05)) == pytest.approx(0.031006, abs=1e-6)
    # a design spends by the share of its maximum seeds, at the level asked
    design = Design(initial=4, wave=3, max=12, spending="pocock")
    assert design.spent(6, 0.025) == pytest.approx(_pocock_by_hand(0.5, 0.025), rel=1e-12)


def test_looks_are_initial_then_waves_then_max():
    assert SIX_LOOKS.looks == (6, 8, 10, 12, 14, 16)
    assert Design(initial=3, wave=2, max=8).looks == (3, 5, 7, 8)  # the last wave is short
    assert Design(initial=5, wave=2, max=5).looks == (5,)


@pytest.mark.parametrize("spending", ["obrien_fleming", "pocock"])
def test_a_single_look_rejects_exactly_when_the_fixed_n_sign_flip_p_is_at_most_alpha(spending):
    rng = np.random.default_rng(7)
    outcomes = set()
    for n in range(4, 11):
        # continuous data, and data rounded to quarters so that many sign patterns tie with the observed one
        data = np.concatenate([rng.normal(0.6, 1, (15, n)), np.round(rng.normal(0.6, 1, (15, n)) * 4) / 4])
        p = sign_flip_pvalue(data)
        # from 5 seeds on, 0.0625 and 0.125 are multiples of 2 / 2^n: p can equal the level exactly
        for alpha in (0.05, 0.0625, 0.125):
            design = Design(initial=n, wave=1, max=n, spending=spending, alpha=alpha)
            for x, p_value in zip(data, p):
                rejected = run_family({"a": x}, design)[-1].decision == DIFFERS
                assert rejected == (p_value <= alpha), (n, alpha, x, p_value)
                outcomes.add(rejected)
    assert outcomes == {True, False}


def _enumerated_statistics(x, looks, side):
    """The statistic at each look (patterns x looks) of every sign pattern of the first looks[-1] seeds."""
    patterns = np.array(list(itertools.product((1.0, -1.0), repeat=looks[-1])))
    sums = np.cumsum(patterns * x[: looks[-1]], axis=1)[:, np.asarray(looks) - 1]
    return {"two-sided": np.abs(sums), "greater": sums, "less": -sums}[side]


@pytest.mark.parametrize("spending", ["obrien_fleming", "pocock"])
@pytest.mark.parametrize("side", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("initial, wave, max_seeds", [(2, 2, 6), (3, 2, 8)])
def test_boundaries_are_the_smallest_whose_first_crossings_fit_within_the_spending(
    spending, side, initial, wave, max_seeds
):
    """Over all 2^n sign patterns (the law of the path under H0 given |d|), a path crosses at the first look
    where it is above the boundary. Cumulative first-crossing probability by look j must be <= alpha*(t_j), so
    look j gets the increment alpha*(t_j) minus what earlier looks spent; and lowering the boundary one notch,
    to let the paths at its value cross too, must exceed that.
    """
    design = Design(initial=initial, wave=wave, max=max_seeds, spending=spending)
    looks = design.looks
    levels = (0.05, 0.2, 0.5)
    rng = np.random.default_rng(max_seeds)
    for x in rng.normal(0.3, 1, (3, max_seeds)):
        observed, bounds = crossing(x, design, levels, side)
        stat = _enumerated_statistics(x, looks, side)
        assert observed == pytest.approx(stat[0], rel=1e-12)  # the all-plus pattern is the observed path
        tie = 1e-9 * np.abs(x).sum()
        for k, level in enumerate(levels):
            allowed = SPENDING_BY_HAND[spending](np.asarray(looks) / max_seeds, level)
            alive = np.ones(len(stat), dtype=bool)
            crossed = 0
            for j, boundary in enumerate(bounds[:, k]):
                if alive.any() and boundary != -np.inf:
                    # one notch lower: the paths at the boundary's value (the largest alive one if it is +inf)
                    notch = min(boundary, stat[alive, j].max())
                    at_or_above = (alive & (stat[:, j] >= notch - tie)).sum()
                    assert (crossed + at_or_above) / len(stat) > allowed[j], (level, j)
                over = alive & (stat[:, j] > boundary + tie)
                crossed += over.sum()
                alive &= ~over
                assert crossed / len(stat) <= allowed[j] + 1e-12, (level, j)
            if level == 0.5:
                assert crossed > 0  # the boundaries are not trivially infinite


def test_worked_example_of_the_step_down_and_equivalence_decisions():
    """Design: 7 seeds at the first look, 9 at most, Pocock-type spending, alpha 0.05, margin 0.5.

    At look 1, t = 7/9 and the spending allows alpha ln(1 + (e - 1) 7/9) = 0.84863 alpha: 0.042432 at level
    alpha, 0.021216 at level alpha/2. The 7 seeds have 2^7 = 128 equally likely sign patterns, so level alpha lets
    floor(0.042432 x 128) = 5 patterns cross and level alpha/2 lets floor(0.021216 x 128) = 2.

    With distinct |d|, the largest |S| (all signs equal) is shared by 2 patterns (it and its mirror); the next
    (only the smallest |d| flipped) by 2 more. So at alpha/2 an arm differs only with all signs equal (2 <= 2);
    at alpha also with only its smallest difference of the other sign (4 <= 5, while the third value makes 6).

    - Family {A, B}: A (all positive) is rejected at alpha/2; the step-down then tests B at alpha/1, where B (its
      smallest difference negative, exact p = 4/128) is rejected too, still at look 1.
    - Family {C, B}: C (no effect, spread wider than the margin) is neither rejected nor equivalent, so B stays
      at alpha/2 and both continue.
    - Family {A, E}: A is rejected at alpha/2, E is tested at alpha and not rejected (|S| = 0.03), but both
      one-sided tests of the equivalence margin reject: E + 0.5 is all positive, so its sum is the largest of
      the 128 patterns (1 of them, 1/128 <= 0.042432, one-sided at alpha); likewise -(E - 0.5). E is equivalent.
    """
    design = Design(initial=7, wave=2, max=9, spending="pocock", alpha=0.05, margin=0.5)
    spent = 0.05 * math.log(1 + (math.e - 1) * 7 / 9)
    assert (math.floor(spent * 128), math.floor(spent / 2 * 128)) == (5, 2)

    a = np.array([0.4, 0.9, 0.6, 1.1, 0.7, 0.8, 0.5])
    b = np.array([0.5, 0.6, 0.7, 0.8, 0.9, 1.0, -0.1])
    c = np.array([0.9, -1.2, 0.4, -0.3, 1.1, -0.8, -0.2])
    e = np.array([0.1, -0.1, 0.2, -0.2, 0.05, -0.05, 0.03])
    assert sign_flip_pvalue(b)[0] == pytest.approx(4 / 128)

    def decided(diffs):
        return {r.arm: (r.look, r.n_seeds, r.level, r.decision) for r in run_family(diffs, design, upto=1)}

    assert decided({"A": a, "B": b}) == {"A": (1, 7, 0.025, DIFFERS), "B": (1, 7, 0.05, DIFFERS)}
    assert decided({"C": c, "B": b}) == {"C": (1, 7, 0.025, "continue"), "B": (1, 7, 0.025, "continue")}
    assert decided({"A": a, "E": e}) == {"A": (1, 7, 0.025, DIFFERS), "E": (1, 7, 0.05, EQUIVALENT)}


@pytest.mark.simulation
@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("arms, trials", [(1, 1000), (4, 200)])  # a 4-arm trial costs several 1-arm ones
def test_family_wise_error_over_six_looks_is_at_most_alpha_where_testing_every_look_at_alpha_is_not(
    noise, arms, trials
):
    """Global null, 6 looks. The naive design tests every arm at every look at alpha with the fixed-n exact
    sign-flip p; the same tolerance that the sequential design meets must fail for it."""
    rng = np.random.default_rng([arms, NOISES.index(noise)])
    data = _noise(rng, noise, (trials, arms, SIX_LOOKS.max))
    names = [f"arm{i}" for i in range(arms)]
    sequential = np.mean([any(r.decision == DIFFERS for r in run_family(dict(zip(names, x)), SIX_LOOKS)) for x in data])
    per_look = [sign_flip_pvalue(data[:, :, :n].reshape(-1, n)).reshape(trials, arms) for n in SIX_LOOKS.looks]
    naive = np.mean(np.any(np.stack(per_look) <= ALPHA, axis=(0, 2)))
    tolerance = _upper_tolerance(ALPHA, trials)
    assert sequential <= tolerance < naive, (sequential, tolerance, naive)


def test_monte_carlo_boundaries_beyond_max_exact_keep_the_error_at_most_alpha():
    # 10 seeds > max_exact 6: the observed path and 1999 drawn ones, at every look
    design = Design(initial=4, wave=2, max=10, spending="pocock", max_exact=6, resamples=1999)
    rng = np.random.default_rng(21)
    trials = 1500
    data = np.concatenate([_noise(rng, "normal", (trials // 2, 10)), _noise(rng, "t2", (trials // 2, 10))])
    error = np.mean([run_family({"a": x}, design)[-1].decision == DIFFERS for x in data])
    assert error <= _upper_tolerance(ALPHA, trials)
    # not valid by never rejecting: a 1.5 SD effect is found
    power = np.mean([run_family({"a": x}, design)[-1].decision == DIFFERS for x in rng.normal(1.5, 1, (100, 10))])
    assert power >= 0.8


@pytest.mark.simulation
def test_repeated_intervals_cover_the_true_mean_at_every_look_at_once():
    """Simultaneous coverage over 3 looks >= confidence - 3 SE; the fixed-n sign-flip intervals at each look,
    which cover at each look separately, fall below the same threshold."""
    design = Design(initial=4, wave=2, max=8, spending="pocock", confidence=0.75)
    rng = np.random.default_rng(5)
    trials, mean = 300, 0.3
    data = mean + np.concatenate(
        [rng.normal(size=(trials // 2, 8)), rng.standard_t(3, size=(trials // 2, 8)) / math.sqrt(3)]
    )
    repeated = [[repeated_interval(x, design, k) for k in range(1, 4)] for x in data]
    fixed = [[sign_flip(x[:n], confidence=0.75)["ci"][0] for n in design.looks] for x in data]

    def simultaneous(intervals):
        return np.mean([all(low <= mean <= high for low, high in per_look) for per_look in intervals])

    assert np.isfinite(repeated).all()  # every look can reject: the coverage is not that of infinite intervals
    threshold = 0.75 - 3 * math.sqrt(0.75 * 0.25 / trials)
    assert simultaneous(fixed) < threshold <= simultaneous(repeated)


def test_a_planted_effect_is_found_early_and_a_planted_null_is_not():
    rng = np.random.default_rng(8)
    trials = 20
    finals = [
        _final(run_family({"effect": rng.normal(2, 1, 16), "null": rng.normal(0, 1, 16)}, SIX_LOOKS))
        for _ in range(trials)
    ]
    assert all(f["effect"].decision == DIFFERS and f["effect"].mean_diff > 0 for f in finals)
    # early: 12 seeds or fewer of the 16 (2 SD with O'Brien-Fleming-type spending stops at 10 in most trials)
    assert max(f["effect"].n_seeds for f in finals) <= 12
    assert np.median([f["effect"].n_seeds for f in finals]) <= 10
    assert np.mean([f["null"].decision == DIFFERS for f in finals]) <= _upper_tolerance(ALPHA, trials)


def test_planted_equivalence_is_found_and_a_difference_at_the_margin_rarely_is():
    rng = np.random.default_rng(9)
    design = replace(SIX_LOOKS, margin=0.5)
    found = [_final(run_family({"a": x}, design))["a"] for x in rng.normal(0, 0.1, (20, 16))]
    assert all(f.decision == EQUIVALENT and f.n_seeds <= 10 for f in found)

    # true difference exactly at +margin or -margin: the far one-sided test rejects almost always, so the rate of
    # "equivalent" is about the size of the near one, which must be <= alpha. A spread of 1.4 x margin keeps the
    # efficacy test (the effect is 0.7 SD) from stopping most arms before their equivalence tests have a say.
    small = Design(initial=4, wave=2, max=10, spending="pocock", margin=0.5)
    trials = 1000
    sides = np.where(np.arange(trials) % 2, 0.5, -0.5)
    finals = [run_family({"a": rng.normal(side, 0.7, 10)}, small)[-1] for side in sides]
    far_rejected = [f.equivalence_lower if side > 0 else f.equivalence_upper for f, side in zip(finals, sides)]
    assert np.mean(far_rejected) >= 0.9
    assert np.mean([f.decision == DIFFERS for f in finals]) <= 0.5
    assert np.mean([f.decision == EQUIVALENT for f in finals]) <= _upper_tolerance(ALPHA, trials)


@pytest.mark.parametrize("design", [SIX_LOOKS, Design(initial=4, wave=2, max=10, max_exact=6, resamples=999)])
def test_the_same_inputs_give_identical_records(design):
    rng = np.random.default_rng(10)
    diffs = {"early": rng.normal(3, 0.5, design.max), "late": rng.normal(0.4, 1, design.max)}
    first = [asdict(r) for r in run_family(diffs, design)]
    again = [asdict(r) for r in run_family({k: v.copy() for k, v in diffs.items()}, design)]
    assert first == again
    assert {r["arm"] for r in first} == {"early", "late"}


def test_an_arm_that_stopped_needs_only_its_seeds_up_to_the_stop():
    # exact enumeration: a look's boundaries depend on that look's seeds only, so the records agree
    rng = np.random.default_rng(11)
    diffs = {"early": rng.normal(3, 0.5, 16), "late": rng.normal(0.4, 1, 16)}
    full = run_family(diffs, SIX_LOOKS)
    stop = _final(full)["early"].n_seeds
    assert stop < 16
    truncated = run_family({"early": diffs["early"][:stop], "late": diffs["late"]}, SIX_LOOKS)
    assert [asdict(r) for r in truncated] == [asdict(r) for r in full]
    # a look where no path may cross reports an infinite boundary whatever later seeds are supplied
    assert math.isinf(full[0].boundary_z) and math.isinf(truncated[0].boundary_z)
