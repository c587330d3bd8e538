"""Saturating fits of learning curves, and forecasts of the final paired difference from the first part of training.

Each run's curve of the primary summary over training steps t is fitted with the saturating form of ScaleRL
(Khatri et al. 2025, "The Art of Scaling Reinforcement Learning Compute for LLMs", eq. 1, with steps for compute):

    R(t) = R0 + (A - R0) / (1 + (t_mid / t)^B)

A is the asymptote, t_mid the steps to half the gain, B the steepness; R0 is the base policy's value (step 0) where
the curves have it, else a fourth parameter. Fits are least squares with A in [0, 1], t_mid and B in wide bounds
(:func:`fit_curve`); a run with too few checkpoints or a fit that fails is reported with its status, never dropped.

A forecast at fraction f fits each run on its checkpoints at steps <= f x the last step and evaluates the fit at the
last step; per comparison, the forecast paired differences over the seeds whose fits both succeeded are tested as the
analysis tests a measure (exact sign-flip p, its interval, the sign-flip TOST within the equivalence margin), Holm
over the family's arms at each f, and a verdict: better, worse, equivalent or open. The interval is over the seeds'
forecasts: it holds the forecast's own noise, not its bias if the form is wrong; the backtests measure that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import optimize

from armlab.analysis.stats import multiplicity, resampling

if TYPE_CHECKING:
    from armlab.analysis.config import Comparison
    from armlab.analysis.settings import Settings

FIT_COLUMNS = ["arm", "seed", "fraction", "last_step", "n_checkpoints", "status", "r0", "asymptote", "t_mid", "b"]
FORECAST_COLUMNS = [
    "family",
    "arm",
    "reference",
    "fraction",
    "n_seeds",
    "n_failed",
    "forecast_diff",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "p_equivalence",
    "verdict",
]
FULL = 1.0  # the fraction of the fit of the whole curve, whose parameters the arms are compared on
MIN_GAIN = 1e-3  # |A - R0| below which a fit's t_mid and B are not determined by the data
MIN_POINTS = 3  # trained checkpoints a fit needs (4 without a base value at step 0)
B_BOUNDS, T_MID_SPAN = (0.1, 10.0), 100.0  # steepness; t_mid between first step / 100 and last step x 100


def saturating(t: np.ndarray, r0: float, asymptote: float, t_mid: float, b: float) -> np.ndarray:
    """ScaleRL's saturating curve (Khatri et al. 2025, eq. 1) at steps ``t`` > 0."""
    return r0 + (asymptote - r0) / (1.0 + (t_mid / np.asarray(t, dtype=float)) ** b)


@dataclass(frozen=True)
class Fit:
    """One run's fit: ``status`` "ok" or why not; the parameters (NaN unless ok)."""

    status: str
    r0: float = np.nan
    asymptote: float = np.nan
    t_mid: float = np.nan
    b: float = np.nan

    def at(self, step: float) -> float:
        return float(saturating(np.array([step]), self.r0, self.asymptote, self.t_mid, self.b)[0])


def fit_objective(t: np.ndarray, y: np.ndarray, r0: float | None) -> tuple[Callable, Callable]:
    """The least-squares residuals of :func:`saturating` at steps ``t`` against ``y`` as a function of the fitted
    parameters p = (A, log t_mid, log B[, R0]), and their Jacobian: with u = (t_mid / t)^B and g = 1 / (1 + u) the
    curve is R0 + (A - R0) g, dg/dlog t_mid = -g^2 u B and dg/dlog B = -g^2 u B log(t_mid / t)."""

    def residuals(p: np.ndarray) -> np.ndarray:
        base = r0 if r0 is not None else p[3]
        return saturating(t, base, p[0], np.exp(p[1]), np.exp(p[2])) - y

    def jacobian(p: np.ndarray) -> np.ndarray:
        base = r0 if r0 is not None else p[3]
        b, log_ratio = np.exp(p[2]), p[1] - np.log(t)
        u = np.exp(b * log_ratio)
        g = 1.0 / (1.0 + u)
        slope = -(p[0] - base) * g * g * u * b
        return np.column_stack([g, slope, slope * log_ratio] + ([] if r0 is not None else [1.0 - g]))

    return residuals, jacobian


def fit_curve(steps: np.ndarray, values: np.ndarray, r0: float | None) -> Fit:
    """Least-squares fit of :func:`saturating` to a run's trained checkpoints (steps > 0), ``r0`` fixed when given.

    Parameters are fitted as A, log t_mid, log B (and R0) from A = the largest value, t_mid = the middle step, B = 1,
    with A in [0, 1]; a fit that does not converge, whose t_mid or B ends on a bound, or whose t_mid lies beyond twice
    the last checkpoint (the curve is far from half its gain, so the asymptote is extrapolated, not measured) is
    reported as failed."""
    trained = steps > 0
    t, y = steps[trained].astype(float), values[trained].astype(float)
    need = MIN_POINTS + (r0 is None)
    if len(t) < need:
        return Fit(f"too few checkpoints ({len(t)} < {need})")
    log_t = np.log([t.min() / T_MID_SPAN, t.max() * T_MID_SPAN])
    log_b = np.log(B_BOUNDS)
    start = [min(max(y.max(), 1e-3), 1.0), np.log(np.median(t)), 0.0]
    low, high = [0.0, log_t[0], log_b[0]], [1.0, log_t[1], log_b[1]]
    if r0 is None:
        start, low, high = [*start, float(y[0])], [*low, 0.0], [*high, 1.0]

    residuals, jacobian = fit_objective(t, y, r0)

    try:
        result = optimize.least_squares(
            residuals, np.clip(start, low, high), jac=jacobian, bounds=(low, high), method="trf"
        )
    except (ValueError, FloatingPointError) as error:
        return Fit(f"failed: {error}")
    if not result.success:
        return Fit(f"did not converge: {result.message}")
    p = result.x
    span = np.subtract(high, low)
    pinned = [name for name, i in (("t_mid", 1), ("b", 2)) if min(p[i] - low[i], high[i] - p[i]) < 1e-6 * span[i]]
    if pinned:
        return Fit(f"{' and '.join(pinned)} at a bound")
    base = r0 if r0 is not None else p[3]
    if abs(p[0] - base) < MIN_GAIN:  # a curve that never leaves R0 has no t_mid or B: they stay where they started
        return Fit(f"not identified: the curve does not move from R0 (gain {p[0] - base:+.2g}), so t_mid and B are not")
    if min(p[0] - low[0], high[0] - p[0]) < 1e-6:
        return Fit(f"asymptote at a bound ({p[0]:.3g})")
    if np.exp(p[1]) > 2 * t.max():  # not half-way by twice the last checkpoint: the asymptote is a guess
        return Fit(
            f"not identified: half the gain at step {np.exp(p[1]):.3g}, beyond twice the last checkpoint {t.max():g}"
        )
    return Fit("ok", float(r0 if r0 is not None else p[3]), float(p[0]), float(np.exp(p[1])), float(np.exp(p[2])))


def seen_through(fraction: float, last: float) -> float:
    """The last step a forecast at ``fraction`` of a run ending at ``last`` sees: f x last, with a tolerance for
    floating point (0.29 x 100 is 28.999999999999996, and step 29 is seen)."""
    return fraction * last + 1e-9


def fit_runs(matrix: pd.DataFrame, fractions: Sequence[float]) -> tuple[pd.DataFrame, dict]:
    """Every run's fit at every fraction of training (``matrix``: runs x steps, step 0 the base where present);
    the table (:data:`FIT_COLUMNS`) and the fits by (arm, seed, fraction)."""
    steps = matrix.columns.to_numpy(dtype=float)
    last = steps.max()
    rows, fits = [], {}
    for (arm, seed), row in matrix.iterrows():
        values = row.to_numpy(dtype=float)
        present = ~np.isnan(values)
        r0 = float(values[steps == 0][0]) if (steps == 0).any() and present[steps == 0].all() else None
        for fraction in fractions:
            seen = present & (steps <= seen_through(fraction, last))
            fit = fit_curve(steps[seen], values[seen], r0)
            fits[arm, seed, fraction] = fit
            n_points = int((seen & (steps > 0)).sum())
            rows.append([arm, seed, fraction, last, n_points, fit.status, fit.r0, fit.asymptote, fit.t_mid, fit.b])
    return pd.DataFrame(rows, columns=FIT_COLUMNS), fits


def forecasts(
    families: Sequence[tuple[Comparison, pd.DataFrame]], settings: Settings, fractions: Sequence[float]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The fits (:func:`fit_runs`) and, per comparison and fraction, the forecast of the final paired difference
    (:data:`FORECAST_COLUMNS`; see the module docstring). ``families``: each comparison with its runs (runs x steps,
    the same seeds and steps for every run, as :func:`armlab.analysis.learning_curves.curves.family_runs` checks). Seeds
    whose fit failed for the arm or its reference are left out of that row and counted in ``n_failed``; fewer than 2
    left: verdict ``no forecast``."""
    fit_tables, rows = [], []
    for comparison, runs in families:
        fit_table, fits = fit_runs(runs, fractions)
        fit_tables.append(fit_table)
        last = float(runs.columns.max())
        seeds = sorted(runs.loc[comparison.reference].index)
        for fraction in fractions:
            family_rows = []
            for arm in comparison.arms:
                usable = [
                    s
                    for s in seeds
                    if fits[arm, s, fraction].status == "ok" and fits[comparison.reference, s, fraction].status == "ok"
                ]
                diffs = np.array(
                    [fits[arm, s, fraction].at(last) - fits[comparison.reference, s, fraction].at(last) for s in usable]
                )
                row = {
                    "family": comparison.family,
                    "arm": arm,
                    "reference": comparison.reference,
                    "fraction": fraction,
                    "n_seeds": len(usable),
                    "n_failed": len(seeds) - len(usable),
                    "forecast_diff": diffs.mean() if len(diffs) else np.nan,
                }
                if len(diffs) >= 2:
                    test = resampling.sign_flip(
                        diffs[None, :],
                        confidence=settings.confidence,
                        alpha=settings.alpha,
                        margin=settings.equivalence_margin,
                        max_exact=settings.exact_max_seeds,
                        resamples=settings.sign_flip_resamples,
                        rng=np.random.default_rng(settings.bootstrap_seed),
                    )
                    row |= {
                        "ci_low": test["ci"][0, 0],
                        "ci_high": test["ci"][0, 1],
                        "p_value": test["p_value"][0],
                        "p_equivalence": test["p_equivalence"][0],
                    }
                family_rows.append(row)
            frame = pd.DataFrame(family_rows).reindex(columns=FORECAST_COLUMNS)
            tested = frame["p_value"].notna().to_numpy()
            decided = np.zeros(len(frame), dtype=bool)
            if tested.any():
                reject, adjusted = multiplicity.holm(frame.loc[tested, "p_value"].to_numpy(), settings.alpha)
                frame.loc[tested, "p_holm"] = adjusted
                decided[tested] = reject
            frame["verdict"] = [_verdict(row, bool(d), settings.alpha) for row, d in zip(frame.itertuples(), decided)]
            rows.append(frame)
    fit_table = pd.concat(fit_tables, ignore_index=True).drop_duplicates(["arm", "seed", "fraction"])
    return fit_table.reset_index(drop=True), pd.concat(rows, ignore_index=True)


def _verdict(row, decided: bool, alpha: float) -> str:
    """better / worse (Holm-decided difference), equivalent (TOST within the margin), open, or no forecast."""
    if row.n_seeds < 2:
        return "no forecast"
    if decided:
        return "better" if row.forecast_diff > 0 else "worse"
    if row.p_equivalence <= alpha:
        return "equivalent"
    return "open"


PARAMETERS = {"asymptote": True, "log10_t_mid": False, "b": True}  # measure -> higher is better


def fit_parameters(fit_table: pd.DataFrame) -> pd.DataFrame:
    """Runs (index arm, seed) x the whole-curve fit's asymptote, log10 t_mid and B, for the runs whose fit is ok."""
    whole = fit_table[(fit_table["fraction"] == FULL) & (fit_table["status"] == "ok")]
    return whole.set_index(["arm", "seed"]).assign(log10_t_mid=lambda f: np.log10(f["t_mid"]))[list(PARAMETERS)]


DECIDED = ("better", "worse", "equivalent")  # the verdicts a forecast or a final comparison can reach


def with_final_verdicts(forecast_table: pd.DataFrame, comparisons: pd.DataFrame) -> pd.DataFrame:
    """``final_verdict`` beside each forecast: the verdict on the final checkpoint from the curve comparisons'
    primary cells: better or worse (gatekept Holm), equivalent (its TOST within the margin), else undecided."""
    cells = comparisons.drop_duplicates(["family", "arm", "measure"])
    primary = cells[cells["stage"] == "primary"].set_index(["family", "arm"])
    final = np.where(
        primary["reject"],
        np.where(primary["mean_diff"] > 0, "better", "worse"),
        np.where(primary["equivalent"], "equivalent", "undecided"),
    )
    verdicts = pd.Series(final, index=primary.index, name="final_verdict")
    return forecast_table.join(verdicts, on=["family", "arm"])


def backtest(forecast_table: pd.DataFrame) -> pd.DataFrame:
    """Per fraction below 1: of the comparisons whose final verdict is clear (better, worse or equivalent), the share
    the forecast decided (said better, worse or equivalent) and the share it decided wrongly (said another of the
    three); how many undecided final verdicts the forecast decided anyway; and the share of the compared arms'
    training steps that stopping every arm whose forecast decided at f would have skipped, (1 - f) for each (one
    look at f: stopping at the first of several fractions that decides is several looks, which this does not
    count)."""
    rows = []
    for fraction, group in forecast_table[forecast_table["fraction"] < FULL].groupby("fraction"):
        clear = group[group["final_verdict"] != "undecided"]
        decided = clear["verdict"].isin(DECIDED)
        wrong = decided & (clear["verdict"] != clear["final_verdict"])
        unclear = group[group["final_verdict"] == "undecided"]
        rows.append(
            {
                "fraction": fraction,
                "clear_final_verdicts": len(clear),
                "decided_share": decided.mean() if len(clear) else np.nan,
                "wrong_share": wrong.mean() if len(clear) else np.nan,
                "undecided_finals_decided": int(unclear["verdict"].isin(DECIDED).sum()),
                "undecided_finals": len(unclear),
                "training_saved_share": group["verdict"].isin(DECIDED).mean() * (1 - fraction),
            }
        )
    return pd.DataFrame(rows)
