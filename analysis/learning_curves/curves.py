"""Accuracy over training, from the checkpoint evaluations of evals/curves.py: per (arm, seed, step) each domain's
accuracy and the primary summary (the analysis's own summaries,
:func:`armlab.analysis.comparisons.summaries.domain_summaries`), with the base policy at step 0, and their figure.

    armlab curves --curves results/<exp>/curves --scores results/<exp>/scores.parquet --out results/<exp>/curves_summary
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from armlab import layout
from armlab.analysis.comparisons import paired
from armlab.analysis.comparisons.summaries import PRIMARY, domain_summaries
from armlab.analysis.errors import AnalysisInputError, describe_rows
from armlab.analysis.inputs import tidy
from armlab.analysis.learning_curves import forecasts
from armlab.analysis.stats import bands
from armlab.contract import BASE_ARM, LEDGER
from armlab.files import MANIFEST, verify_manifest

if TYPE_CHECKING:
    from armlab.analysis.config import Comparison, Config
    from armlab.analysis.settings import Settings

CURVE_COLUMNS = ["arm", "seed", "step", "summary", "value"]


class NoCommonCompute(AnalysisInputError):
    """A family's runs cannot be compared at equal compute (a run without a ledger, or no range every run covers):
    :func:`compare_curves` says so in a note and compares that family at equal steps only."""


def read_curves(paths: list[Path | str]) -> pd.DataFrame:
    """The checkpoint scores of the runs ``paths`` name: each a checkpoint evaluation's manifest.json, or a
    directory holding <arm>/seed-<seed>/manifest.json ones; every manifest is checked first."""
    manifests = []
    for path in map(Path, paths):
        manifests += layout.files_of_runs(path, MANIFEST) if path.is_dir() else [path]
    if not manifests:
        raise AnalysisInputError(
            f"{', '.join(map(str, paths))}: no checkpoint evaluation (<arm>/seed-<seed>/{MANIFEST})"
        )
    for manifest in manifests:
        verify_manifest(manifest)
    return pd.concat([pd.read_parquet(m.parent / "scores.parquet") for m in manifests], ignore_index=True)


def read_curve_table(path: Path | str) -> pd.DataFrame:
    """Checkpoint evaluations from elsewhere: one tidy table (``.parquet`` or ``.csv``) with the tidy scores columns
    (docs/contracts.md), a ``step`` column of whole numbers >= 0 and, optionally, compute-ledger columns
    (:data:`armlab.contract.LEDGER`: running totals, numbers >= 0, one per checkpoint, never falling along a run);
    every (arm, seed, step, benchmark, item) once, scores in [0, 1].
    A bad table is a one-line error naming the file, the column and the rows."""
    frame, source = tidy.read_tidy(path), str(path)
    if "step" not in frame.columns:
        raise AnalysisInputError(
            f"{source}: no step column; a table of checkpoint evaluations has the tidy scores columns and step "
            f"(the training step each model was kept at; 0 for the base policy)"
        )

    def refuse(bad: pd.Series, column: str, expected: str) -> None:
        if bad.any():
            shown = describe_rows(frame[bad.to_numpy()], ["arm", "seed", "step", column])
            raise AnalysisInputError(f"{source}: {column}: expected {expected}; got\n{shown}")

    ledger = [c for c in LEDGER if c in frame.columns]
    numbers = {c: pd.to_numeric(frame[c], errors="coerce") for c in ["step", *ledger]}
    refuse(
        numbers["step"].isna() | (numbers["step"] < 0) | (numbers["step"].fillna(0) % 1 != 0),
        "step",
        "whole numbers >= 0",
    )
    for column in ledger:
        refuse(numbers[column].isna() | (numbers[column] < 0), column, "numbers >= 0")
    scores = tidy.coerce_tidy(frame, source)
    scores = scores.assign(**{c: numbers[c].to_numpy() for c in ledger}, step=numbers["step"].astype(int).to_numpy())
    refuse(~scores["score"].between(0, 1), "score", "numbers in [0, 1]")
    checkpoints = scores.groupby(["arm", "seed", "step"])
    for column in ledger:  # a running total: one value per checkpoint, never falling as the run goes on
        refuse(checkpoints[column].transform("nunique") > 1, column, "one value per (arm, seed, step)")
        totals = checkpoints[column].first()
        falls = totals[totals.groupby(level=["arm", "seed"]).diff() < 0].index
        refuse(
            pd.Series(pd.MultiIndex.from_frame(scores[["arm", "seed", "step"]]).isin(falls)),
            column,
            "a running total, never lower at a later step of the run",
        )
    key = ["arm", "seed", "step", "benchmark", "item"]
    twice = scores.duplicated(key, keep=False)
    if twice.any():
        raise AnalysisInputError(f"{source}: {tuple(key)} more than once:\n{describe_rows(scores[twice], key)}")
    return scores


def curve_summaries(curves: pd.DataFrame, base_scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """Long (arm, seed, step, summary, value): each domain's accuracy and the primary summary per run and step;
    ``base_scores`` (the base policy's evaluations: the mean over them when it was evaluated at several seeds) is every
    run's step 0. Where the checkpoint evaluations carry
    their runs' compute ledger (:data:`armlab.contract.LEDGER`), its columns follow (NaN for runs without one)."""
    per_step = [domain_summaries(group).assign(step=step) for step, group in curves.groupby("step", sort=True)]
    if base_scores is not None and len(base_scores):
        base = domain_summaries(base_scores).mean()
        runs = curves[["arm", "seed"]].drop_duplicates().sort_values(["arm", "seed"])
        index = pd.MultiIndex.from_frame(runs)
        per_step.insert(0, pd.DataFrame([base.to_dict()] * len(index), index=index).assign(step=0))
    wide = pd.concat(per_step).reset_index()
    long = wide.melt(id_vars=["arm", "seed", "step"], var_name="summary", value_name="value")
    ledger = [c for c in LEDGER if c in curves]  # the runs' compute at each step; the base policy's is 0
    if ledger:
        spent = curves[["arm", "seed", "step", *ledger]].drop_duplicates(["arm", "seed", "step"])
        long = long.merge(spent, on=["arm", "seed", "step"], how="left")
        long.loc[long["step"] == 0, ledger] = 0.0
    columns = [*CURVE_COLUMNS, *ledger]
    return long[columns].sort_values(["summary", "arm", "seed", "step"], kind="stable", ignore_index=True)


def base_rows(scores_path: Path | str | None) -> pd.DataFrame | None:
    """The base policy's rows of a scores table (arm ``base``), or None without one."""
    if scores_path is None:
        return None
    scores = pd.read_parquet(scores_path)
    return scores[scores["arm"] == BASE_ARM]


# The per-run measures of a curve that the comparisons test (:func:`curve_measures`), the primary first: the final
# checkpoint is the run's evaluation, so it gates the others as the primary summary does in the analysis.
FINAL, AREA, TO_THRESHOLD, BEST = "final", "area_under_curve", "steps_to_threshold", "best_checkpoint"
BAND_COLUMNS = [
    "family",
    "arm",
    "reference",
    "summary",
    "step",
    "n_seeds",
    "mean_diff",
    "band_low",
    "band_high",
    "band_confidence",
    "p_simultaneous",
    "ahead",
]


def curve_matrix(summaries: pd.DataFrame, summary: str) -> pd.DataFrame:
    """Runs (index arm, seed) x evaluated steps of one summary, from :func:`curve_summaries`' long table."""
    rows = summaries[summaries["summary"] == summary]
    return rows.pivot_table(index=["arm", "seed"], columns="step", values="value", aggfunc="first").sort_index()


def family_threshold(matrix: pd.DataFrame, threshold: float | None) -> float:
    """The level whose first crossing :func:`curve_measures` times: ``threshold``, or halfway from the first
    evaluated step's mean to the last step's mean over all the family's runs (arms treated alike, so swapping an arm
    with its reference at a seed leaves it unchanged, as the sign-flip test needs)."""
    if threshold is not None:
        return threshold
    return float((matrix.iloc[:, 0].mean() + matrix.iloc[:, -1].mean()) / 2)


def curve_measures(matrix: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Per run (index arm, seed): the value at the last step (``final``); the mean over training, the trapezoid
    area under the curve divided by the step range (``area_under_curve``); the first step at which the curve reaches
    ``threshold``, interpolated linearly between checkpoints and the last step for a run that never reaches it
    (``steps_to_threshold``, censored: reported by :func:`censored_runs`); the best checkpoint's value
    (``best_checkpoint``, step 0 excluded: the base policy is no run's checkpoint)."""
    steps = matrix.columns.to_numpy(dtype=float)
    values = matrix.to_numpy(dtype=float)
    trained = steps > 0
    return pd.DataFrame(
        {
            FINAL: values[:, -1],
            AREA: np.trapezoid(values, steps, axis=1) / (steps[-1] - steps[0]) if len(steps) > 1 else values[:, 0],
            TO_THRESHOLD: [_first_crossing(steps, row, threshold) for row in values],
            BEST: values[:, trained].max(axis=1) if trained.any() else values[:, -1],
        },
        index=matrix.index,
    )


def _first_crossing(steps: np.ndarray, values: np.ndarray, threshold: float) -> float:
    """The first step the piecewise-linear curve reaches ``threshold``; the last step if it never does."""
    reached = np.flatnonzero(values >= threshold)
    if not len(reached):
        return float(steps[-1])
    i = reached[0]
    if i == 0:
        return float(steps[0])
    before, after = values[i - 1], values[i]
    return float(steps[i - 1] + (steps[i] - steps[i - 1]) * (threshold - before) / (after - before))


def censored_runs(matrix: pd.DataFrame, threshold: float) -> list[tuple[str, int]]:
    """The runs whose curve never reaches ``threshold`` (their steps_to_threshold is the last step)."""
    return [run for run, row in matrix.iterrows() if not (row.to_numpy() >= threshold).any()]


def simultaneous_band(
    runs: pd.DataFrame, comparison: Comparison, settings: Settings, summary: str, position: str = "step"
) -> pd.DataFrame:
    """Per arm of one family and trained step: the mean paired difference, its band and its adjusted p, simultaneous
    over every trained step of every arm of the family (:func:`armlab.analysis.stats.bands.t_band` at
    ``settings.confidence``, :func:`armlab.analysis.stats.bands.max_t_sign_flip` over the arms' differences side
    by side, so a sign pattern flips a seed in every arm at once); ``ahead`` names the arm whose curve is higher at a
    step where that p is <= alpha, else ``neither``. ``runs`` are the family's runs as :func:`family_runs` checks
    them (the same seeds and steps); step 0 (the base policy, the same for both) is left out. The columns may be
    compute budgets instead of steps (:func:`compute_matrix`): the table then names them ``position``."""
    trained = runs.loc[:, runs.columns > 0]
    pairs = paired.paired_differences(trained, [comparison])
    d = np.hstack([pair.diffs.to_numpy(dtype=float) for pair in pairs])
    low, high = bands.t_band(d, settings.confidence)
    p = bands.max_t_sign_flip(
        d,
        max_exact=settings.exact_max_seeds,
        resamples=settings.sign_flip_resamples,
        rng=np.random.default_rng(settings.bootstrap_seed),
    )
    mean, steps = d.mean(axis=0), trained.columns
    rows = []
    for i, pair in enumerate(pairs):
        part = slice(i * len(steps), (i + 1) * len(steps))
        rows.append(
            pd.DataFrame(
                {
                    "family": pair.family,
                    "arm": pair.arm,
                    "reference": pair.reference,
                    "summary": summary,
                    "step": steps.astype(int) if position == "step" else steps,
                    "n_seeds": len(d),
                    "mean_diff": mean[part],
                    "band_low": low[part],
                    "band_high": high[part],
                    "band_confidence": settings.confidence,
                    "p_simultaneous": p[part],
                    "ahead": np.where(
                        p[part] <= settings.alpha, np.where(mean[part] > 0, pair.arm, pair.reference), "neither"
                    ),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)[BAND_COLUMNS].rename(columns={"step": position})


def family_runs(
    matrix: pd.DataFrame, comparison: Comparison, settings: Settings, source: str
) -> tuple[pd.DataFrame, list[str]]:
    """The runs of one family (runs x steps), checked: finite values, every run evaluated at the same steps, and
    every arm run with the reference's seeds (or, with ``analysis.common_seeds_only``, the seeds every arm ran, the
    others noted as dropped), as the paired analysis requires; a one-line error otherwise."""
    arms = [comparison.reference, *comparison.arms]
    runs = matrix.loc[arms].dropna(axis=1, how="all")
    where = f"{source}: family {comparison.family}"
    infinite = [(run, step) for run, row in runs.iterrows() for step, v in row.items() if np.isinf(v)]
    if infinite:
        raise AnalysisInputError(f"{where}: non-finite accuracy at (run, step) {infinite[:3]}")
    lacking = {run: [int(s) for s in row.index[row.isna()]] for run, row in runs.iterrows() if row.isna().any()}
    if lacking:
        (run, steps), more = next(iter(lacking.items())), len(lacking) - 1
        raise AnalysisInputError(
            f"{where}: run {run} lacks step(s) {steps} that other runs of the family were evaluated at"
            f"{f' (and {more} more run(s))' if more else ''}; every run of a family needs the same checkpoints "
            f"(recipe.steps and checkpoint_every)"
        )
    seeds = {arm: set(runs.loc[arm].index) for arm in arms}
    common = set.intersection(*seeds.values())
    notes = []
    if any(s != common for s in seeds.values()):
        if not settings.common_seeds_only:
            listed = ", ".join(f"{arm} {sorted(s)}" for arm, s in seeds.items())
            raise AnalysisInputError(
                f"{where}: the arms ran different seeds ({listed}); analysis.common_seeds_only: true keeps the seeds "
                f"every arm ran"
            )
        dropped = sorted((arm, seed) for arm, s in seeds.items() for seed in s - common)
        notes.append(
            f"Family {comparison.family}: runs {dropped} dropped: their seed was not run by every arm "
            f"(analysis.common_seeds_only)."
        )
        runs = runs[runs.index.get_level_values("seed").isin(sorted(common))]
    if len(common) < 2 or not (runs.columns > 0).any():
        raise AnalysisInputError(
            f"{where}: {len(common)} common seed(s) and {int((runs.columns > 0).sum())} trained step(s); the curves "
            f"need at least 2 seeds and 1 trained step"
        )
    return runs, notes


def compute_matrix(
    summaries: pd.DataFrame, summary: str, runs: pd.Index, axis: str, budgets: Sequence[float] | None, points: int = 10
) -> pd.DataFrame:
    """Runs (index arm, seed) x compute budgets: each run's curve of ``summary`` as a function of its ledger column
    ``axis`` (:data:`armlab.contract.LEDGER`), linearly interpolated at ``budgets``; by default ``points`` budgets
    evenly spaced over the range every run covers (from the largest first to the smallest last compute of the runs),
    so no run's curve is extrapolated. A budget outside that range is refused."""
    rows = summaries[summaries["summary"] == summary].set_index(["arm", "seed"]).loc[runs]
    if axis not in rows or rows[axis].isna().any():
        lacking = sorted(set(rows.index[rows[axis].isna()] if axis in rows else runs))
        raise NoCommonCompute(f"run(s) {lacking} have no compute ledger (ledger.parquet)")
    curves = {run: curve.sort_values("step").groupby(axis)["value"].last() for run, curve in rows.groupby(level=[0, 1])}
    low = max(curve.index[0] for curve in curves.values())
    high = min(curve.index[-1] for curve in curves.values())
    if not high > low:
        raise NoCommonCompute(
            f"no range of {axis} that every run covers (one run's last {high:.6g} is not beyond another's first "
            f"{low:.6g})"
        )
    if budgets is None:
        grid = np.linspace(low, high, points + 1)[1:] if low == 0 else np.linspace(low, high, points)
    else:
        grid = np.asarray(budgets, dtype=float)
    outside = [float(b) for b in grid if not low <= b <= high]
    if outside:
        raise AnalysisInputError(
            f"analysis.curve_budgets: {outside} outside [{low:.6g}, {high:.6g}], the {axis} every "
            f"compared run covers (no run's curve is extrapolated)"
        )
    values = [np.interp(grid, curve.index.to_numpy(float), curve.to_numpy(float)) for curve in curves.values()]
    index = pd.MultiIndex.from_tuples(list(curves), names=["arm", "seed"])
    return pd.DataFrame(values, index=index, columns=pd.Index(grid, name=axis))


def curve_verdicts(band: pd.DataFrame, compute_band: pd.DataFrame | None, comparisons: pd.DataFrame) -> pd.DataFrame:
    """One row per comparison: where each arm is ahead at equal steps and at equal compute (after adjusting for
    all of them), the final value's gatekept verdict, and a sentence: an arm "gets there faster" when it is ahead at
    some equal-compute budget before the last (at some step before the last without a compute ledger), and "ends
    higher" (or lower) when its final value is decided."""
    primary = (
        comparisons[comparisons["stage"] == "primary"].drop_duplicates(["family", "arm"]).set_index(["family", "arm"])
    )
    rows = []
    for (family, arm, reference), steps in band.groupby(["family", "arm", "reference"], sort=False):
        budgets = (
            None if compute_band is None else compute_band[(compute_band.family == family) & (compute_band.arm == arm)]
        )
        if budgets is not None and budgets.empty:  # this family's runs had no common compute range or no ledger
            budgets = None
        positions = steps if budgets is None else budgets
        where = "step" if budgets is None else str(budgets["compute"].iloc[0])
        column = "step" if budgets is None else "budget"
        ahead = positions[positions["ahead"] == arm][column]
        behind = positions[positions["ahead"] == reference][column]
        final = primary.loc[(family, arm)]
        end = "undecided" if not final["reject"] else ("higher" if final["mean_diff"] > 0 else "lower")
        words = []
        if (ahead < positions[column].max()).any():  # a lead at the last position alone is how it ends, not speed
            words.append(f"gets there faster (ahead at equal {where} {_span(ahead)})")
        elif len(ahead):
            words.append(f"ahead at the last equal {where} only ({_span(ahead)})")
        if len(behind):
            words.append(f"falls behind (at equal {where} {_span(behind)})")
        words.append(f"ends {end}" if end != "undecided" else "no decided difference at the end")
        rows.append(
            {
                "family": family,
                "arm": arm,
                "reference": reference,
                "ahead_at_steps": _span(steps[steps["ahead"] == arm]["step"]),
                "behind_at_steps": _span(steps[steps["ahead"] == reference]["step"]),
                "compute": None if budgets is None else where,
                "ahead_at_budgets": None if budgets is None else _span(ahead),
                "behind_at_budgets": None if budgets is None else _span(behind),
                "final": end,
                "verdict": f"{arm} vs {reference}: " + "; ".join(words),
            }
        )
    return pd.DataFrame(rows)


def _span(positions: pd.Series) -> str:
    """Positions as text, comma-separated, to 4 significant digits (``10, 20, 30``; ``1.2e+09, 2.4e+09``)."""
    return ", ".join(f"{p:.4g}" for p in positions)


@dataclass(frozen=True)
class CurveInference:
    """Paired inference over learning curves (:func:`compare_curves`)."""

    band: pd.DataFrame  # BAND_COLUMNS: one row per comparison and trained step
    compute_band: pd.DataFrame | None  # the same at equal compute: ``budget`` for ``step``, and ``compute``
    verdicts: pd.DataFrame  # curve_verdicts: one row per comparison
    measures: pd.DataFrame  # arm, seed, family, measure, value, threshold
    comparisons: pd.DataFrame  # armlab.analysis.comparisons.paired.COLUMNS over the curve measures, per family
    fits: pd.DataFrame  # armlab.analysis.learning_curves.forecasts.FIT_COLUMNS: every run at every fraction
    forecasts: pd.DataFrame  # FORECAST_COLUMNS and final_verdict: per comparison and fraction
    backtest: pd.DataFrame  # per fraction: decided and wrong shares of the clear final verdicts
    parameters: pd.DataFrame | None  # the whole-curve fits' parameters compared seed by seed
    notes: list[str]


def compare_curves(summaries: pd.DataFrame, config: Config, summary: str = PRIMARY) -> CurveInference:
    """Every comparison family of ``config`` on the curves of ``summary``: the simultaneous band over steps, and the
    curve measures compared seed by seed as the analysis compares its measures
    (:func:`armlab.analysis.comparisons.paired.compare`: exact sign-flip p, intervals, gatekept Holm with ``final`` as
    the primary and the other measures as secondary cells). ``steps_to_threshold`` is better when lower."""
    settings = config.settings
    if settings.pairing == "unpaired":
        raise AnalysisInputError(
            f"{config.source}: analysis.pairing: unpaired: the curve comparisons pair runs by seed; compare the "
            f"curves of independent runs with analysis.pairing: paired and matched seeds, or not at all"
        )
    matrix = curve_matrix(summaries, summary)
    missing = sorted(set(config.compared_arms) - set(matrix.index.get_level_values("arm")))
    if missing:
        raise AnalysisInputError(f"{config.source}: compared arm(s) {missing} have no checkpoint evaluations")
    families, notes = [], []
    for comparison in config.comparisons:
        runs, family_notes = family_runs(matrix, comparison, settings, config.source)
        families.append((comparison, runs))
        notes += family_notes
    axis = settings.curve_compute
    if axis is not None and axis not in summaries:
        notes.append(
            f"No comparison at equal compute: no run has a compute ledger (ledger.parquet), so curves.csv has no "
            f"{axis}; the curves are compared at equal steps only."
        )
        axis = None
    bands_at_steps, bands_at_budgets, measures, tables = [], [], [], []
    for comparison, runs in families:
        bands_at_steps.append(simultaneous_band(runs, comparison, settings, summary))
        if axis is not None:
            try:
                grid = compute_matrix(summaries, summary, runs.index, axis, settings.curve_budgets)
            except NoCommonCompute as reason:
                notes.append(f"Family {comparison.family}: no comparison at equal compute: {reason}.")
            else:
                at_budgets = simultaneous_band(grid, comparison, settings, summary, position="budget")
                bands_at_budgets.append(at_budgets.assign(compute=axis))
        threshold = family_threshold(runs, settings.curve_threshold)
        values = curve_measures(runs, threshold)
        censored = censored_runs(runs, threshold)
        if censored:
            notes.append(
                f"Family {comparison.family}: {len(censored)} run(s) never reach {threshold:.4g} ({censored}); "
                f"their {TO_THRESHOLD} is the last step, which shrinks differences in speed toward 0."
            )
        table, family_notes = paired.compare(
            values,
            [comparison],
            settings,
            levels=dict.fromkeys(values.columns, "summary"),
            higher_is_better={TO_THRESHOLD: False},
        )
        tables.append(table)
        notes += family_notes
        long = values.rename_axis(columns="measure").stack().rename("value").reset_index()
        measures.append(long.assign(family=comparison.family, threshold=threshold))
    band, comparisons = pd.concat(bands_at_steps, ignore_index=True), pd.concat(tables, ignore_index=True)
    compute_band = pd.concat(bands_at_budgets, ignore_index=True) if bands_at_budgets else None
    verdicts = curve_verdicts(band, compute_band, comparisons)
    fit_table, forecast_table = forecasts.forecasts(families, settings, (*settings.curve_fractions, forecasts.FULL))
    forecast_table = forecasts.with_final_verdicts(forecast_table, comparisons)
    failed = fit_table[fit_table["status"] != "ok"]
    if len(failed):
        counts = ", ".join(f"{n} at f = {f:g}" for f, n in failed.groupby("fraction").size().items())
        notes.append(
            f"{len(failed)} saturating fit(s) failed or lacked checkpoints ({counts}); curve_fits.csv says why."
        )
    parameters, parameter_notes = _compare_fit_parameters(fit_table, config.comparisons, settings)
    return CurveInference(
        band,
        compute_band,
        verdicts,
        pd.concat(measures, ignore_index=True),
        comparisons,
        fit_table,
        forecast_table,
        forecasts.backtest(forecast_table),
        parameters,
        list(dict.fromkeys(notes + parameter_notes)),
    )


def _compare_fit_parameters(
    fit_table: pd.DataFrame, comparisons: Sequence[Comparison], settings: Settings
) -> tuple[pd.DataFrame | None, list[str]]:
    """The whole-curve fits' asymptote, log10 t_mid and B compared seed by seed, per family, as the analysis compares
    its measures (the asymptote the primary of a gatekept Holm), over the seeds whose fits succeeded for both the arm
    and the reference; an arm with under 2 such seeds is left out of its family's Holm and named in a note."""
    values, tables, notes = forecasts.fit_parameters(fit_table), [], []
    fitted_seeds = values.reset_index().groupby("arm")["seed"].agg(set).to_dict()
    for comparison in comparisons:
        reference = fitted_seeds.get(comparison.reference, set())
        testable = tuple(a for a in comparison.arms if len(fitted_seeds.get(a, set()) & reference) >= 2)
        left_out = [a for a in comparison.arms if a not in testable]
        if left_out:
            notes.append(
                f"Family {comparison.family}: the saturating-fit parameters of {left_out} are not compared: under 2 "
                f"seeds whose whole-curve fits succeeded for both the arm and {comparison.reference} "
                f"(curve_fits.csv says why)."
            )
        if not testable:
            continue
        fitted = values[values.index.get_level_values("arm").isin([comparison.reference, *testable])]
        table, family_notes = paired.compare(
            fitted,
            [replace(comparison, arms=testable)],
            settings,
            levels=dict.fromkeys(fitted.columns, "summary"),
            higher_is_better=forecasts.PARAMETERS,
        )
        tables.append(table)
        notes += [f"Saturating-fit parameters (fit_comparisons.csv): {note}" for note in family_notes]
    return (pd.concat(tables, ignore_index=True) if tables else None), notes
