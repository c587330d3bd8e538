"""Saturating fits and forecasts of the final verdict from partial training (analysis/learning_curves/forecasts.py): the
fit recovers a known curve, failures are reported with their reason, the forecast's verdicts hold their error rate under
an A/A truth and find a planted lower asymptote, and the backtest counts agreements with the final verdicts by hand. The
full simulation is benchmarks/forecast_validity.py (docs/statistics.md §14)."""

import numpy as np
import pandas as pd
import pytest

from armlab.analysis.config import parse_config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.learning_curves.forecasts import (
    backtest,
    fit_curve,
    fit_objective,
    fit_runs,
    forecasts,
    saturating,
)

STEPS = np.arange(0, 101, 10).astype(float)
CONFIG_RAW = [{"family": "f", "reference": "ref", "arms": ["arm"]}]
CONFIG = parse_config({"experiment": "e", "comparisons": CONFIG_RAW})
FAMILY = CONFIG.comparisons[0]


@pytest.mark.parametrize("r0_known", [True, False])
def test_the_fit_recovers_a_known_saturating_curve(r0_known):
    truth = dict(r0=0.2, asymptote=0.62, t_mid=27.0, b=1.7)
    values = saturating(np.maximum(STEPS, 1), **truth)
    values[0] = truth["r0"]
    fit = fit_curve(STEPS, values, 0.2 if r0_known else None)
    assert fit.status == "ok"
    assert (fit.r0, fit.asymptote, fit.t_mid, fit.b) == pytest.approx(tuple(truth.values()), rel=1e-4)
    assert fit.at(100) == pytest.approx(values[-1], abs=1e-6)


@pytest.mark.parametrize("r0", [0.2, None])
def test_the_fits_jacobian_is_the_residuals_derivative(r0):
    """Against central differences of the residuals, at a point away from the optimum."""
    t = STEPS[1:]
    residuals, jacobian = fit_objective(t, saturating(t, 0.2, 0.6, 30.0, 1.5), r0)
    p = np.array([0.55, np.log(25.0), np.log(1.2), 0.25][: 3 + (r0 is None)])
    numeric = np.column_stack([(residuals(p + h) - residuals(p - h)) / 2e-6 for h in 1e-6 * np.eye(len(p))])
    np.testing.assert_allclose(jacobian(p), numeric, rtol=0, atol=1e-8)


def test_a_flat_curve_or_an_asymptote_on_its_bound_is_not_a_fit():
    """A run that never leaves the base value (a no-learning control) would 'fit' with t_mid and B where the optimizer
    started; a curve heading past 1 puts A on its bound. Neither is reported as ok (review finding)."""
    assert fit_curve(STEPS, np.full(len(STEPS), 0.2), 0.2).status.startswith("not identified: the curve does not move")
    rising = np.r_[0.2, saturating(STEPS[1:], 0.2, 1.3, 60.0, 1.5)]
    assert fit_curve(STEPS, np.minimum(rising, 1.0), 0.2).status.startswith("asymptote at a bound")
    with pytest.raises(AnalysisInputError, match=r"analysis\.curve_fractions: expected a non-empty increasing list"):
        parse_config({"experiment": "e", "comparisons": CONFIG_RAW, "analysis": {"curve_fractions": []}})


def test_fits_that_cannot_be_made_say_why_and_are_kept():
    values = saturating(STEPS[1:], 0.2, 0.6, 30.0, 1.5)
    assert fit_curve(STEPS[:3], np.r_[0.2, values[:2]], 0.2).status == "too few checkpoints (2 < 3)"
    assert fit_curve(STEPS[1:4], values[:3], None).status == "too few checkpoints (3 < 4)"
    # still rising in a straight line at the end: no half-way point in the data, no asymptote
    linear = 0.2 + 0.001 * STEPS
    assert fit_curve(STEPS, linear, 0.2).status.startswith("not identified: half the gain at step ")
    matrix = pd.DataFrame(
        [np.r_[0.2, values], linear], index=pd.MultiIndex.from_tuples([("a", 1), ("b", 1)], names=["arm", "seed"])
    )
    matrix.columns = STEPS
    table, _ = fit_runs(matrix, (0.25, 1.0))
    assert len(table) == 4 and table.status.tolist()[0] == "too few checkpoints (2 < 3)"
    assert table.loc[table.status != "ok", "asymptote"].isna().all()


def _runs(rng, seeds, arm_asymptote):
    rows, index = [], []
    for seed in range(1, seeds + 1):
        shared = rng.normal(0, 0.01, len(STEPS))
        for arm, asymptote in (("ref", 0.6), ("arm", arm_asymptote)):
            curve = saturating(np.maximum(STEPS, 1), 0.2, asymptote + rng.normal(0, 0.01), 30.0, 1.5)
            rows.append(np.where(STEPS == 0, 0.2, curve + shared + rng.normal(0, 0.015, len(STEPS))))
            index.append((arm, seed))
    return pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(index, names=["arm", "seed"]), columns=STEPS)


@pytest.mark.simulation
def test_an_aa_forecast_decides_at_most_alpha_of_the_time_and_a_lower_asymptote_is_found():
    """8 seeds, 120 replicates each. A/A: forecast 'better' or 'worse' at f = 0.6 in at most 0.05 + 3 Monte-Carlo sd
    (0.06) of them. A 0.1 lower asymptote: 'worse' at f = 0.6 in most (power about 0.8), 'better' in none."""
    rng = np.random.default_rng(0)
    aa = [forecasts([(FAMILY, _runs(rng, 8, 0.6))], CONFIG.settings, (0.6,))[1].verdict.iloc[0] for _ in range(120)]
    assert np.isin(aa, ["better", "worse"]).mean() <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 120)
    lower = [forecasts([(FAMILY, _runs(rng, 8, 0.5))], CONFIG.settings, (0.6,))[1].verdict.iloc[0] for _ in range(60)]
    assert np.mean(np.array(lower) == "worse") > 0.6 and "better" not in lower


def test_the_backtest_counts_by_hand():
    """f = 0.4: 4 clear finals (worse, worse, better, equivalent), 3 decided (worse right, better wrong,
    equivalent right), 1 wrong; 1 undecided final decided anyway; 4 of 5 arms stopped at 0.4 skip 0.6 of their
    training each. f = 0.6: 3 clear, 2 decided, 1 wrong; 2 of 4 arms stopped skip 0.4 each."""
    said = ["worse", "better", "open", "equivalent", "better", "worse", "open", "equivalent", "open", "worse"]
    final = ["worse", "worse", "better", "equivalent", "undecided", "worse", "worse", "better", "undecided", "worse"]
    table = pd.DataFrame({"fraction": [0.4] * 5 + [0.6] * 4 + [1.0], "verdict": said, "final_verdict": final})
    rows = backtest(table).set_index("fraction")
    assert rows.loc[0.4].tolist() == [4, pytest.approx(3 / 4), pytest.approx(1 / 4), 1, 1, pytest.approx(4 * 0.6 / 5)]
    assert rows.loc[0.6].tolist() == [3, pytest.approx(2 / 3), pytest.approx(1 / 3), 0, 1, pytest.approx(2 * 0.4 / 4)]
    assert 1.0 not in rows.index


def test_a_family_of_two_arms_is_holm_adjusted_and_a_failed_fit_leaves_its_seed_out():
    """Two arms against one reference: at each f the p-values are Holm-adjusted over the two arms (statsmodels'
    multipletests), and a seed whose fit failed for an arm (a curve that never leaves R0) is counted in n_failed
    and left out of that arm's forecast only."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(2)
    first, second = _runs(rng, 8, 0.5), _runs(rng, 8, 0.55)
    runs = pd.concat([first, second.loc[["arm"]].rename(index={"arm": "arm2"})])
    runs.loc[("arm2", 3)] = np.where(STEPS == 0, 0.2, 0.2)  # no learning at all: no t_mid, no B
    family = parse_config(
        {"experiment": "e", "comparisons": [{"family": "f", "reference": "ref", "arms": ["arm", "arm2"]}]}
    )
    fits, table = forecasts([(family.comparisons[0], runs)], family.settings, (0.6, 1.0))
    assert fits.set_index(["arm", "seed", "fraction"]).loc[("arm2", 3, 1.0), "status"].startswith("not identified")
    ok = fits.assign(ok=fits.status == "ok").set_index(["fraction", "arm", "seed"])["ok"]
    for fraction, rows in table.groupby("fraction"):
        rows = rows.set_index("arm")
        for arm in ("arm", "arm2"):  # by hand: the seeds where the arm's or the reference's fit failed
            failed = sum(not (ok[fraction, arm, s] and ok[fraction, "ref", s]) for s in range(1, 9))
            assert rows.loc[arm, ["n_seeds", "n_failed"]].tolist() == [8 - failed, failed]
        assert rows.loc["arm2", "n_failed"] >= 1
        expected = multipletests(rows["p_value"].to_numpy(), method="holm")[1]
        np.testing.assert_allclose(rows["p_holm"].to_numpy(), expected)
    assert set(table.verdict) <= {"worse", "open"} and "worse" in set(table.verdict)
