"""Figures of an analysis, in one colour-blind-safe style, as SVG and PNG.

Every plotting function takes frames as the analysis writes them (the rows
of ``comparisons.csv``, ``rankings.csv``, the step logs of the runs) and
returns a :class:`matplotlib.figure.Figure`; :func:`render` turns a figure
into SVG and PNG bytes and :func:`save` writes them. Figures are built
without pyplot, so nothing is kept in a global figure registry.

- :func:`forest_plot` -- one comparison family: Δ and interval per arm and summary;
- :func:`benchmark_heatmap` -- mean paired difference per arm and benchmark;
- :func:`training_curves` -- reward, zero-variance and kept fractions per arm, band over seeds;
- :func:`ranking_plot` -- the rank of each arm under each summary;
- :func:`power_plot` -- seeds against the minimum detectable effect at the observed spread;
- :func:`profile_plot` -- performance profiles of one family's arms, band over seeds;
- :func:`pass_at_k_plot` -- one family's pass@k curves against k, the base policy's, and the paired differences;
- :func:`forecast_plot` -- each arm's forecast of its final paired difference from part of training;
- :func:`curve_differences` -- each arm's paired difference over training with its simultaneous band;
- :func:`sequential_plot` -- a sequential design: each arm's statistic at each look against its boundary, and its stop.

Colours are the Okabe-Ito palette (Okabe & Ito 2008), distinguishable with
every common colour-vision deficiency (its yellow, too pale on white, is left
out); reference arms are black, and beyond six other arms colours repeat with
another line style. The heatmap uses ColorBrewer's PuOr, a colour-blind-safe
diverging map.
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from armlab.analysis.samples.sampled import BENCHMARK_SEPARATOR
from armlab.analysis.stats import power, resampling
from armlab.analysis.tables import NOT_TESTED, higher_is_better, is_unpaired, sizes_text, verdicts
from armlab.contract import BASE_ARM

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

    from armlab.analysis.settings import Settings

REFERENCE_COLOR = "#000000"
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9")  # Okabe-Ito without yellow
LINESTYLES = ("-", "--", ":", "-.")
DIVERGING = "PuOr"
WARNING_COLOR = "#D55E00"
MARKERS = {"better": "o", "worse": "o", "equivalent": "D", "inconclusive": "o", NOT_TESTED: "x"}
FILLED = {"better": True, "worse": True, "equivalent": False, "inconclusive": False, NOT_TESTED: True}
CURVES = {
    "reward": "mean reward",
    "frac_zero_var": "zero-variance groups (fraction)",
    "kept_frac": "kept prompts (fraction)",
}

STYLE: dict[RcKeyType, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "legend.fontsize": 8,
    "text.parse_math": False,  # labels come from configs: a '$' is a character, not mathtext
    "svg.fonttype": "path",  # text as outlines: the SVG looks the same without any font installed
    "svg.hashsalt": "armlab",  # stable element ids, so an unchanged figure is an unchanged file
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "figure.facecolor": "white",
}


def styled(function: Callable[..., Figure]) -> Callable[..., Figure]:
    """Run a plotting function inside :data:`STYLE`."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Figure:
        with matplotlib.rc_context(STYLE):
            return function(*args, **kwargs)

    return wrapper


def arm_styles(arms: Iterable[str], references: Iterable[str] = ()) -> dict[str, dict[str, str]]:
    """``{arm: {"color", "linestyle"}}`` for ``arms`` in order: references black, the others in colour."""
    arms = list(dict.fromkeys(arms))
    black = [a for a in arms if a in set(references)]
    others = [a for a in arms if a not in set(references)]
    styles = {a: {"color": REFERENCE_COLOR, "linestyle": LINESTYLES[i % len(LINESTYLES)]} for i, a in enumerate(black)}
    for i, arm in enumerate(others):
        styles[arm] = {"color": PALETTE[i % len(PALETTE)], "linestyle": LINESTYLES[i // len(PALETTE) % len(LINESTYLES)]}
    return styles


def label_width(labels: Iterable[object]) -> float:
    """Inches that the longest of ``labels`` takes at the style's font size (a generous estimate)."""
    return 0.075 * max(len(str(label)) for label in labels)


def first_method(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the first interval method: one row per (family, measure, arm)."""
    return table[table["ci_method"] == table["ci_method"].iloc[0]]


def cannot_reach_alpha(table: pd.DataFrame, alpha: float) -> str | None:
    """Plain words when no comparison of ``table`` (one family) can reach ``alpha``, else ``None``."""
    worst = table.loc[table["min_attainable_p"].idxmax()]
    if worst["min_attainable_p"] <= alpha:
        return None
    return (
        f"With {sizes_text(worst)} no Holm-adjusted p in this family can be below "
        f"{worst['min_attainable_p']:.3g} > α = {alpha:g}: nothing here can be significant, whatever the data."
    )


@styled
def forest_plot(table: pd.DataFrame, alpha: float, styles: Mapping[str, Mapping[str, str]] | None = None) -> Figure:
    """Forest plot of one comparison family at the summary level.

    One panel per summary (the primary one first), one row per arm: the
    mean paired difference in points with the interval that supports its verdict
    (:func:`armlab.analysis.tables.verdict_evidence`): the sign-flip interval at Holm's
    level (it excludes 0 exactly when the arm is significant; dotted across
    the panel where unbounded), or for an equivalent arm (or a secondary summary
    whose equivalence alone was tested) the TOST's interval at its Holm level
    (inside the band exactly when equivalent), a line at 0 and the equivalence band ±δ shaded.
    Filled circles are Holm-significant, open diamonds equivalent within
    ±δ, open circles inconclusive. The seed-count warning of
    :func:`cannot_reach_alpha` is printed above the panels when it applies.
    """
    rows = first_method(table[table["level"] == "summary"])
    measures = list(dict.fromkeys(rows["measure"]))
    arms = list(dict.fromkeys(rows["arm"]))
    reference = rows["reference"].iloc[0]
    styles = styles or arm_styles([reference, *arms], [reference])
    margin = 100 * rows["equivalence_margin"].iloc[0]
    fig = Figure(figsize=(1.0 + label_width(arms) + 2.4 * len(measures), 1.2 + 0.38 * len(arms)), layout="constrained")
    axes = fig.subplots(1, len(measures), sharey=True, squeeze=False)[0]
    for ax, measure in zip(axes, measures):
        block = rows[rows["measure"] == measure].set_index("arm").loc[arms]
        block = block.assign(verdict=verdicts(block))
        ax.axvspan(-margin, margin, color="#eeeeee", lw=0)
        ax.axvline(0, color=REFERENCE_COLOR, lw=0.8)
        for y, (arm, row) in enumerate(block.iterrows()):
            color = styles[arm]["color"]
            # the equivalence's interval where it decided, or where only equivalence was tested (its gate alone open)
            only_tost = np.isnan(row["decision_level"]) and not np.isnan(row["eq_decision_level"])
            kind = "eq_decision" if row["verdict"] == "equivalent" or only_tost else "decision"
            low, high = row[f"{kind}_low"], row[f"{kind}_high"]
            if np.isinf(low) and np.isinf(high):  # no data could bound it: a dotted line across the panel
                ax.plot([0, 1], [y, y], color=color, lw=1.0, ls=":", transform=ax.get_yaxis_transform())
            elif np.isfinite(low) and np.isfinite(high):  # (a gatekept cell never tested has none)
                ax.plot([100 * low, 100 * high], [y, y], color=color, lw=1.6)
            ax.plot(
                100 * row["mean_diff"],
                y,
                marker=MARKERS[row["verdict"]],
                ms=6,
                mec=color,
                mfc=color if FILLED[row["verdict"]] else "white",
                mew=1.4,
                ls="none",
            )
        ax.set_title(measure if higher_is_better(block).iloc[0] else f"{measure} (lower is better)")
        ax.set_xlabel(f"Δ vs {reference} (points)")
        ax.grid(axis="y", visible=False)
    axes[0].set_yticks(range(len(arms)), arms)
    axes[0].set_ylim(len(arms) - 0.5, -0.5)
    sizes = sizes_text(rows.loc[rows["n_seeds"].idxmax()])
    handles = [
        Line2D([], [], marker="o", color="#444444", mfc="#444444", ls="none", label="Holm-significant"),
        Line2D([], [], marker="D", color="#444444", mfc="white", ls="none", label=f"equivalent (±{margin:g})"),
        Line2D([], [], marker="o", color="#444444", mfc="white", ls="none", label="inconclusive"),
    ]
    if (verdicts(rows) == NOT_TESTED).any():  # a secondary summary behind a closed gate
        handles.append(Line2D([], [], marker="x", color="#444444", ls="none", label="not tested (gate closed)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles))
    test = "permutation" if is_unpaired(rows) else "sign-flip"
    title = (
        f"{rows['family'].iloc[0]}: arms vs {reference}, {sizes}, {test} intervals at Holm's level "
        f"(equivalent: the TOST's)"
    )
    warning = cannot_reach_alpha(rows[rows["measure"] == measures[0]], alpha)  # the primary summary decides first
    fig.suptitle(
        title + (f"\n{warning}" if warning else ""), fontsize=10, color=WARNING_COLOR if warning else REFERENCE_COLOR
    )
    return fig


@styled
def benchmark_heatmap(table: pd.DataFrame, domains: Mapping[str, str] | None = None) -> Figure:
    """Mean paired difference (points) of every arm's accuracy on every benchmark, over all families.

    Rows are ``family: arm − reference``; columns are benchmarks, grouped by
    domain when ``domains`` (benchmark -> domain) is given. Bold numbers are
    significant under the family's gatekept Holm (the benchmarks are tested
    only once every primary comparison of the family is significant).
    """
    rows = first_method(table[table["level"] == "benchmark"])
    rows = rows[~rows["measure"].str.contains(BENCHMARK_SEPARATOR, regex=False)]  # accuracy; pass@k, maj@k have tables
    rows = rows.assign(row=rows["family"] + ": " + rows["arm"] + " − " + rows["reference"])
    values = rows.pivot(index="row", columns="measure", values="mean_diff") * 100
    significant = rows.pivot(index="row", columns="measure", values="reject").astype(bool)
    order = list(dict.fromkeys(rows["row"]))
    benchmarks = list(dict.fromkeys(rows["measure"]))
    if domains:
        benchmarks = sorted(benchmarks, key=lambda b: list(dict.fromkeys(domains.values())).index(domains[b]))
    values, significant = values.loc[order, benchmarks], significant.loc[order, benchmarks]
    limit = float(np.nanmax(np.abs(values.to_numpy()))) or 1.0
    fig = Figure(
        figsize=(
            1.6 + label_width(order) + 0.62 * len(benchmarks),
            1.4 + label_width(benchmarks) * 0.7 + 0.36 * len(order),
        ),
        layout="constrained",
    )
    ax = fig.subplots()
    image = ax.imshow(values.to_numpy(), cmap=DIVERGING, vmin=-limit, vmax=limit, aspect="auto")
    for (i, j), value in np.ndenumerate(values.to_numpy()):
        ax.text(
            j,
            i,
            f"{value:+.1f}",
            ha="center",
            va="center",
            fontsize=7,
            fontweight="bold" if significant.iat[i, j] else "normal",
            color="white" if abs(value) > 0.6 * limit else REFERENCE_COLOR,
        )
    ax.set_xticks(range(len(benchmarks)), benchmarks, rotation=45, ha="right")
    ax.set_yticks(range(len(order)), order)
    ax.grid(False)
    if domains:
        groups = pd.Series([domains[b] for b in benchmarks])
        for j in np.flatnonzero(groups.ne(groups.shift()).to_numpy())[1:]:
            ax.axvline(j - 0.5, color="white", lw=2)
        secondary = ax.secondary_xaxis("top")
        secondary.set_xticks(
            [np.mean(np.flatnonzero(groups == d)) for d in dict.fromkeys(groups)], list(dict.fromkeys(groups))
        )
        secondary.tick_params(length=0)
    fig.colorbar(image, ax=ax, label="Δ (points)", shrink=0.8)
    kind = "Difference of mean scores (unpaired runs)" if is_unpaired(table) else "Mean paired difference"
    ax.set_title(f"{kind} per benchmark (bold: significant, gatekept Holm over the family)")
    return fig


def smooth_steps(steps: pd.DataFrame, metrics: list[str], window: int) -> pd.DataFrame:
    """Per run, the rolling mean of ``metrics`` over ``window`` logged steps (shorter at the start)."""
    ordered = steps.sort_values(["arm", "seed", "step"])
    rolled = ordered.groupby(["arm", "seed"], sort=False)[metrics].transform(
        lambda col: col.rolling(window, min_periods=1).mean()
    )
    return ordered[["arm", "seed", "step"]].join(rolled)


def seed_band(ax, runs: pd.DataFrame, column: str, label: str, style: Mapping[str, str], scale=1.0, **line) -> None:
    """One arm's ``column`` per step: the mean over seeds as a line, a band from the lowest to the highest seed."""
    over_seeds = scale * runs.groupby("step")[column].agg(["mean", "min", "max"])
    ax.fill_between(over_seeds.index, over_seeds["min"], over_seeds["max"], color=style["color"], alpha=0.18, lw=0)
    ax.plot(over_seeds.index, over_seeds["mean"], label=label, **style, **line)


def seed_legend(fig: Figure, axes, runs: pd.DataFrame, title: str, note: str = "") -> None:
    """The arms' legend under the panels, and a title saying what the lines and bands of :func:`seed_band` are."""
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 6))
    n_seeds = runs.groupby("arm")["seed"].nunique().max()
    fig.suptitle(f"{title}: mean over seeds, band from lowest to highest of {n_seeds} seeds{note}", fontsize=10)


@styled
def training_curves(
    steps: pd.DataFrame,
    styles: Mapping[str, Mapping[str, str]] | None = None,
    metrics: Sequence[str] = tuple(CURVES),
    window: int = 10,
) -> Figure:
    """Training curves per arm: mean over seeds, with a band from the lowest to the highest seed.

    ``steps`` is the step logs of all runs (columns arm, seed, step and the
    metrics); each run is first smoothed over ``window`` logged steps
    (:func:`smooth_steps`). Metrics absent from the logs are left out.
    """
    metrics = [m for m in metrics if m in steps.columns]
    smoothed = smooth_steps(steps, metrics, window)
    styles = styles or arm_styles(pd.unique(steps["arm"]))
    fig = Figure(figsize=(3.4 * len(metrics), 3.0), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics):
        for arm in [a for a in styles if a in set(smoothed["arm"])]:
            group = smoothed[smoothed["arm"] == arm]
            seed_band(ax, group, metric, arm, styles[arm])
        ax.set_title(CURVES.get(metric, metric))
        ax.set_xlabel("training step")
    seed_legend(fig, axes, steps, "Training dynamics", f" (rolling mean over {window} steps)")
    return fig


@styled
def accuracy_curves(summaries: pd.DataFrame, styles: Mapping[str, Mapping[str, str]] | None = None) -> Figure:
    """Accuracy over training per arm, one panel per summary: mean over seeds, band from lowest to highest seed.

    ``summaries`` is long (arm, seed, step, summary, value in [0, 1]), as
    :func:`armlab.analysis.learning_curves.curves.curve_summaries` gives it; panels follow the order of first appearance
    of the summaries.
    """
    names = list(pd.unique(summaries["summary"]))
    styles = styles or arm_styles(pd.unique(summaries["arm"]))
    fig = Figure(figsize=(3.2 * len(names), 3.0), layout="constrained")
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    for ax, name in zip(axes, names):
        panel = summaries[summaries["summary"] == name]
        for arm in [a for a in styles if a in set(panel["arm"])]:
            seed_band(ax, panel[panel["arm"] == arm], "value", arm, styles[arm], scale=100, marker="o", markersize=2.5)
        ax.set_title(name)
        ax.set_xlabel("training step")
    axes[0].set_ylabel("accuracy (%)")
    seed_legend(fig, axes, summaries, "Accuracy over training (every kept checkpoint; step 0 = the base policy)")
    return fig


def comparison_panels(
    frame: pd.DataFrame, styles: Mapping[str, Mapping[str, str]] | None, width: float
) -> tuple[Figure, Any, list[tuple[str, str, pd.DataFrame, str]]]:
    """A figure with one panel per (family, arm) of ``frame``, and per panel its family, arm, rows and colour."""
    groups = list(frame.groupby(["family", "arm"], sort=False))
    styles = styles or arm_styles(pd.unique(frame["arm"]))
    fig = Figure(figsize=(width * len(groups), 3.0), layout="constrained")
    axes = fig.subplots(1, len(groups), squeeze=False)[0]
    return fig, axes, [(family, arm, rows, styles[arm]["color"]) for (family, arm), rows in groups]


@styled
def curve_differences(
    band: pd.DataFrame, styles: Mapping[str, Mapping[str, str]] | None = None, position: str = "step"
) -> Figure:
    """Each compared arm's paired difference from its reference over training, one panel per (family, arm): the mean
    over seeds and its simultaneous band over the steps; filled markers where the step's adjusted p is <= alpha.

    ``band`` has :data:`armlab.analysis.learning_curves.curves.BAND_COLUMNS`, as
    :func:`armlab.analysis.learning_curves.curves.simultaneous_band` gives it; ``position="budget"``: at equal compute,
    against the budgets of its ``compute`` column.
    """
    fig, axes, panels = comparison_panels(band, styles, width=3.4)
    for ax, (family, arm, rows, colour) in zip(axes, panels):
        steps = rows[position].to_numpy()
        ax.fill_between(steps, 100 * rows["band_low"], 100 * rows["band_high"], color=colour, alpha=0.2, lw=0)
        ax.plot(steps, 100 * rows["mean_diff"], color=colour, marker="o", markersize=3, markerfacecolor="white")
        decided = rows[rows["ahead"] != "neither"]
        ax.plot(decided[position], 100 * decided["mean_diff"], ls="none", marker="o", markersize=4, color=colour)
        ax.axhline(0, color=REFERENCE_COLOR, lw=0.8)
        ax.set_title(f"{family}: {arm} - {rows['reference'].iloc[0]}")
        ax.set_xlabel("training step" if position == "step" else f"compute: {rows['compute'].iloc[0]}")
    axes[0].set_ylabel("paired difference (points)")
    level = band["band_confidence"].iloc[0]
    fig.suptitle(
        f"Paired differences {'over training' if position == 'step' else 'at equal compute'}: mean over seeds, "
        f"{level:.0%} simultaneous band; filled where the {position} differs after adjusting for all of them",
        fontsize="medium",
    )
    return fig


@styled
def forecast_plot(
    forecasts: pd.DataFrame, band: pd.DataFrame, styles: Mapping[str, Mapping[str, str]] | None = None
) -> Figure:
    """Each compared arm's forecast of its final paired difference from the first fraction of training, with its
    interval over seeds, one panel per (family, arm); the dashed line is the difference observed at the last step.

    ``forecasts`` has :data:`armlab.analysis.learning_curves.forecasts.FORECAST_COLUMNS`; ``band`` is the curve band
    (its last step's ``mean_diff`` is the observed final difference)."""
    fig, axes, panels = comparison_panels(forecasts, styles, width=3.0)
    for ax, (family, arm, rows, colour) in zip(axes, panels):
        shown = rows[rows["n_seeds"] >= 2]
        centre = 100 * shown["forecast_diff"]
        spread = [centre - 100 * shown["ci_low"].clip(-1, 1), 100 * shown["ci_high"].clip(-1, 1) - centre]
        ax.errorbar(
            shown["fraction"], centre, yerr=spread, color=colour, marker="o", markersize=4, ls="none", capsize=3
        )
        observed = band[(band["family"] == family) & (band["arm"] == arm)].sort_values("step")["mean_diff"]
        if len(observed):
            ax.axhline(100 * observed.iloc[-1], color=colour, ls="--", lw=1)
        ax.axhline(0, color=REFERENCE_COLOR, lw=0.8)
        ax.set_xlim(0, 1.05)
        ax.set_title(f"{family}: {arm} - {rows['reference'].iloc[0]}")
        ax.set_xlabel("fraction of training fitted")
    axes[0].set_ylabel("forecast final difference (points)")
    fig.suptitle(
        "Forecasts of the final paired difference from saturating fits of the first part of each run "
        "(interval over seeds; dashed: observed at the last step)",
        fontsize="medium",
    )
    return fig


def wrap_name(name: str, width: int) -> str:
    """A long snake_case name on several lines, broken after underscores, so neighbouring tick labels do not collide."""
    lines = [""]
    for part in re.findall(r"[^_]+_?|_", name):
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
    return "\n".join(lines)


@styled
def ranking_plot(rankings: pd.DataFrame, styles: Mapping[str, Mapping[str, str]] | None = None) -> Figure:
    """Rank of every arm under every summary, one panel per ranking set (1 = best mean at the top).

    Lines that cross mean the order of arms depends on the summary chosen.
    """
    sets = list(dict.fromkeys(rankings["ranking"]))
    styles = styles or arm_styles(pd.unique(rankings["arm"]))
    widest = rankings.groupby("ranking")["arm"].nunique().max()
    fig = Figure(figsize=(4.4 * len(sets), 1.2 + 0.34 * widest), layout="constrained")
    axes = fig.subplots(1, len(sets), squeeze=False)[0]
    for ax, name in zip(axes, sets):
        block = rankings[rankings["ranking"] == name]
        summaries = list(dict.fromkeys(block["summary"]))
        table = block.pivot(index="arm", columns="summary", values="rank")[summaries]
        tied = table.groupby(table.iloc[:, -1]).cumcount()  # arms sharing the last rank: labels stacked, not overlaid
        for arm, ranks in table.iterrows():
            ax.plot(range(len(summaries)), ranks.to_numpy(), marker="o", ms=4, **styles[arm])
            ax.annotate(
                arm,
                (len(summaries) - 1, ranks.iloc[-1]),
                xytext=(6, -9 * tied[arm]),
                textcoords="offset points",
                va="center",
                fontsize=8,
                color=styles[arm]["color"],
            )
        ax.set_xticks(range(len(summaries)), [wrap_name(name, 12) for name in summaries])
        ax.set_xlim(-0.2, len(summaries) - 0.2 + 0.5)
        ax.set_yticks(range(1, len(table) + 1))
        ax.set_ylim(len(table) + 0.5, 0.5)
        ax.set_ylabel("rank (1 = best mean)")
        ax.set_title(name)
        ax.grid(axis="x", visible=False)
    fig.suptitle("Ranking sensitivity: does the order of arms depend on the summary?", fontsize=10)
    return fig


@styled
def power_plot(
    table: pd.DataFrame, settings: Settings, styles: Mapping[str, Mapping[str, str]] | None = None, max_seeds: int = 40
) -> Figure:
    """Minimum detectable effect (points) against the number of seeds, one panel per family.

    Each arm's line uses the observed standard deviation of its paired
    differences on the primary summary, at the family's first Holm level
    α/k and ``settings.power``: the power of the exact sign-flip test
    (:func:`armlab.analysis.stats.power.minimum_detectable_effect`); unpaired, of the
    permutation test with as many runs of each arm, at the pooled sd of runs.
    Seeds with which the test cannot reach α/k at all are shaded;
    the dotted line is the seeds used, the dashed one ``settings.power_effect``.
    """
    rows = first_method(table[table["level"] == "summary"])
    primary = rows["measure"].iloc[0]
    rows = rows[rows["measure"] == primary]
    families = list(dict.fromkeys(rows["family"]))
    seeds = np.arange(2, max_seeds + 1)
    unpaired = is_unpaired(rows)
    other = seeds if unpaired else 0  # unpaired: as many runs of the reference as of the arm
    fig = Figure(figsize=(4.2 * len(families), 3.2), layout="constrained")
    axes = fig.subplots(1, len(families), squeeze=False)[0]
    for ax, family in zip(axes, families):
        block = rows[rows["family"] == family]
        level = settings.alpha / len(block)
        styles_here = styles or arm_styles(block["arm"])
        limits: Mapping[str, Any] = settings.power_options()
        for row in block.itertuples():
            mde = power.minimum_detectable_effect(
                np.full(len(seeds), row.sd_diff), seeds, level=level, n_reference=other, **limits
            )
            ax.plot(seeds, 100 * np.where(np.isfinite(mde), mde, np.nan), label=row.arm, **styles_here[row.arm])
        exact = {"max_exact": settings.exact_max_seeds, "resamples": settings.sign_flip_resamples}
        unreachable = resampling.min_pvalue(seeds, other, **exact) > level
        if unreachable.any():
            ax.axvspan(
                1.5, seeds[unreachable].max() + 0.5, color="#eeeeee", lw=0, label=f"test cannot reach α/k = {level:.3g}"
            )
        ax.axvline(
            block["n_seeds"].max(),
            color=REFERENCE_COLOR,
            ls=":",
            lw=1,
            label=f"{int(block['n_seeds'].max())} {'runs' if unpaired else 'seeds'} used",
        )
        ax.axhline(
            100 * settings.power_effect,
            color=REFERENCE_COLOR,
            ls="--",
            lw=0.8,
            label=f"{100 * settings.power_effect:g}-point effect",
        )
        ax.set_xlim(1.5, max_seeds + 0.5)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("runs per arm (unpaired)" if unpaired else "matched seeds")
        ax.set_title(f"{family} (vs {block['reference'].iloc[0]})")
        ax.legend(fontsize=7, loc="upper right")
    axes[0].set_ylabel("detectable effect (points)")
    fig.suptitle(
        f"Power on {primary}: smallest effect the {'permutation' if unpaired else 'sign-flip'} test detects with "
        f"probability "
        f"{settings.power:g} at the observed spread",
        fontsize=10,
    )
    return fig


@styled
def profile_plot(
    profiles: pd.DataFrame, arms: Sequence[str], title: str, styles: Mapping[str, Mapping[str, Any]] | None = None
) -> Figure:
    """Performance profiles of ``arms`` (rows of performance_profiles.csv): share of runs above each threshold.

    One line per arm, the share of its seed x benchmark accuracies above tau
    (rliable's score distribution, :mod:`armlab.analysis.comparisons.profiles`), with the band
    of its percentile bootstrap over seeds.
    """
    styles = styles or arm_styles(arms)
    fig = Figure(figsize=(5.6, 3.4), layout="constrained")
    ax = fig.subplots()
    for arm in arms:
        block = profiles[profiles["arm"] == arm]
        tau = 100 * block["tau"]
        ax.fill_between(
            tau, block["ci_low"], block["ci_high"], color=styles[arm]["color"], alpha=0.18, lw=0, step="post"
        )
        ax.step(tau, block["fraction"], where="post", label=arm, **styles[arm])
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("accuracy threshold τ (points)")
    ax.set_ylabel("fraction of runs with score > τ")
    ax.legend(loc="lower left")
    row = profiles.iloc[0]
    ax.set_title(f"{title}, {100 * row['ci_level']:g}% {row['ci_method']} bootstrap band over seeds")
    return fig


@styled
def pass_at_k_plot(
    summaries: pd.DataFrame,
    comparisons: pd.DataFrame,
    versus_base: pd.DataFrame,
    family: str,
    styles: Mapping[str, Mapping[str, str]] | None = None,
) -> Figure:
    """pass@k against k (log scale) for one family: the curves, and each arm's paired difference.

    Left: the mean over seeds of each arm's pass@k (rows of summaries.csv), with the band of its interval
    against the base policy (pass_at_k_vs_base.csv, the base's own sampling noise in it) where there is a base
    and the interval is bounded, and the base's curve dashed.
    Right: each arm minus the reference, seed-matched, with the comparison's first interval
    (comparisons.csv), so a curve that crosses the reference's does so with its uncertainty shown.
    """
    mine = comparisons[comparisons["family"] == family]
    rows = first_method(mine[mine["measure"].str.startswith("pass@")])
    if (summaries["summary"] == "pass@1").any():  # pass@1 is the primary summary, compared as such
        rows = pd.concat([first_method(mine[mine["stage"] == "primary"]).assign(measure="pass@1"), rows])
    reference = rows["reference"].iloc[0]
    arms = [reference, *dict.fromkeys(rows["arm"])]
    styles = styles or arm_styles(arms, [reference])
    curves = summaries[summaries["summary"].str.startswith("pass@")].assign(
        k=lambda f: f["summary"].str.removeprefix("pass@").astype(int)
    )
    fig = Figure(figsize=(9.0, 3.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    base = curves[curves["arm"] == BASE_ARM].groupby("k")["value"].mean()
    if len(base):
        left.plot(base.index, 100 * base, color="#777777", ls="--", marker="s", ms=3, label="base policy")
    for arm in arms:
        mean = curves[curves["arm"] == arm].groupby("k")["value"].mean()
        left.plot(mean.index, 100 * mean, marker="o", ms=3, label=arm, **styles[arm])
        band = versus_base[versus_base["arm"] == arm].set_index("k").reindex(mean.index)
        band = band[["ci_low", "ci_high"]].where(np.isfinite(band[["ci_low", "ci_high"]]))  # unbounded: no band
        if len(base) and band["ci_low"].notna().any():
            low, high = (100 * (base.reindex(mean.index) + band[c]) for c in ("ci_low", "ci_high"))
            left.fill_between(mean.index, low, high, color=styles[arm]["color"], alpha=0.15, lw=0)
    right.axhline(0, color=REFERENCE_COLOR, lw=0.8)
    for arm in rows["arm"].unique():
        block = rows[rows["arm"] == arm].assign(k=lambda f: f["measure"].str.removeprefix("pass@").astype(int))
        block = block.sort_values("k")
        right.plot(block["k"], 100 * block["mean_diff"], marker="o", ms=3, label=arm, **styles[arm])
        right.fill_between(
            block["k"], 100 * block["ci_low"], 100 * block["ci_high"], color=styles[arm]["color"], alpha=0.18, lw=0
        )
    ks = sorted(curves["k"].unique())
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])  # plain numbers: the style turns off mathtext labels
        ax.minorticks_off()
        ax.set_xlabel("k (answers drawn per item)")
        ax.legend(fontsize=7)
    left.set_ylabel("pass@k (points)")
    left.set_title(f"{family}: pass@k, band = interval vs the base")
    right.set_ylabel(f"Δ pass@k vs {reference} (points)")
    right.set_title(f"paired difference, {rows['ci_method'].iloc[0]} interval")
    return fig


@styled
def sequential_plot(
    looks: pd.DataFrame, decisions: pd.DataFrame, styles: Mapping[str, Mapping[str, str]] | None = None
) -> Figure:
    """The path of each arm's statistic over the looks of a sequential design, one panel per family.

    ``looks``: rows of ``sequential_looks.csv``; ``decisions``: rows of ``sequential.csv``. One line per
    arm joins its z at each look against the seeds it had then; bars at ±boundary_z mark its efficacy
    boundary there (at the Holm level it was tested at). A look whose boundary is infinite (the design
    allows no rejection yet) has no bar. The arm's stop is marked as in :func:`forest_plot` (filled:
    differs; diamond: equivalent; open: inconclusive) and named; the dotted line is the fixed design's seeds.
    """
    families = list(dict.fromkeys(decisions["family"]))
    styles = styles or arm_styles(decisions["arm"])
    max_seeds = int(decisions["max_seeds"].max())
    ticks = sorted({*looks["n_seeds"].astype(int), max_seeds})
    fig = Figure(figsize=(4.6 * len(families), 3.4), layout="constrained")
    axes = fig.subplots(1, len(families), squeeze=False)[0]
    for ax, family in zip(axes, families):
        stops = decisions[decisions["family"] == family]
        ax.axhline(0, color=REFERENCE_COLOR, lw=0.8)
        ax.axvline(max_seeds, color=REFERENCE_COLOR, ls=":", lw=1, label=f"fixed design: {max_seeds} seeds")
        for stop in stops.itertuples():
            color = styles[stop.arm]["color"]
            path = looks[(looks["family"] == family) & (looks["arm"] == stop.arm)].sort_values("look")
            ax.plot(path["n_seeds"], path["z"], marker=".", label=stop.arm, **styles[stop.arm])
            bounded = path[np.isfinite(path["boundary_z"])]
            ax.plot(
                np.tile(bounded["n_seeds"], 2),
                np.concatenate([bounded["boundary_z"], -bounded["boundary_z"]]),
                marker="_",
                ms=12,
                mew=1.6,
                color=color,
                ls="none",
            )
            verdict = stop.direction or stop.decision  # a difference is marked as better/worse in forest_plot
            ax.plot(
                stop.n_seeds,
                stop.z,
                marker=MARKERS[verdict],
                ms=7,
                mec=color,
                mfc=color if FILLED[verdict] else "white",
                mew=1.4,
                ls="none",
            )
            ax.annotate(
                stop.decision,
                (stop.n_seeds, stop.z),
                xytext=(6, 0),
                textcoords="offset points",
                va="center",
                fontsize=7,
                color=color,
            )
        ax.set_xticks(ticks)
        ax.set_xlim(ticks[0] - 1, max_seeds + 2)  # room for the name of a stop at the last look
        ax.set_xlabel("seeds at the look")
        ax.set_title(f"{family} (vs {stops['reference'].iloc[0]})")
        ax.legend(fontsize=7, loc="best")
    axes[0].set_ylabel("z = Σd / √Σd²  (d: paired differences)")
    handles = [
        Line2D([], [], marker="_", color="#444444", ms=12, mew=1.6, ls="none", label="efficacy boundary ±"),
        Line2D([], [], marker="o", color="#444444", mfc="#444444", ls="none", label="stopped: differs"),
        Line2D([], [], marker="D", color="#444444", mfc="white", ls="none", label="stopped: equivalent"),
        Line2D([], [], marker="o", color="#444444", mfc="white", ls="none", label="inconclusive at the last look"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=4)
    fig.suptitle("Sequential design: each arm's statistic at each look against its efficacy boundary", fontsize=10)
    return fig


def render(fig: Figure, formats: Iterable[str] = ("svg", "png")) -> dict[str, bytes]:
    """``{format: bytes}`` of a figure (SVG and PNG), without dates, so that reruns give the same bytes."""
    metadata = {"svg": {"Date": None}, "png": {"Software": None}}
    out = {}
    with matplotlib.rc_context(STYLE):
        for fmt in formats:
            buffer = io.BytesIO()
            fig.savefig(buffer, format=fmt, metadata=metadata[fmt])
            out[fmt] = buffer.getvalue()
    return out


def save(rendered: Mapping[str, bytes], directory: Path | str, name: str) -> list[Path]:
    """Write rendered figure bytes as ``directory/name.svg`` and ``.png`` (temporary name, then renamed)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt, data in rendered.items():
        path = directory / f"{name}.{fmt}"
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
        paths.append(path)
    return paths
