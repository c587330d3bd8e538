"""The static HTML report of an experiment: one self-contained file that opens from disk.

``armlab report CONFIG --analysis DIR [--runs DIR] --out DIR [--figures DIR]``
reads what ``armlab analyze`` wrote to ``DIR`` and, for our own experiments,
the step logs and manifests of the runs (``runs/<arm>/seed-<seed>/``), and
writes ``OUT/index.html``. Figures are inline (base64 SVG in ``<img>``, which
cannot run scripts), the page has no JavaScript and loads nothing, and every
string that comes from a config or a results file is HTML-escaped.

Sections: what was run (config, arms, seeds, recipe, provenance); headline
verdicts per family in plain words; forest plots and tables; under a
sequential seed design, where each arm stopped and the runs it saved;
per-benchmark differences; score distributions (performance profiles and the
paired probability of improvement); training dynamics; ranking sensitivity;
power and warnings. Results converted from elsewhere (a wide CSV, lm-eval logs)
have no runs: the report then says so where training curves and provenance
would be. It reads an analysis of this armlab's format only (:mod:`armlab.analysis.outputs`); one written by
another armlab is refused with one line that says to rerun `armlab analyze`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from armlab import files
from armlab.analysis import tables
from armlab.analysis.config import load_raw, parse_config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.reporting import figures, sections
from armlab.analysis.reporting.html import STYLE, esc, html_figure
from armlab.analysis.reporting.read import (
    Analysis,
    Curves,
    Runs,
    read_analysis,
    read_checkpoints,
    read_curves,
    read_runs,
)

if TYPE_CHECKING:
    import pandas as pd

    from armlab.analysis.config import Config


# independent runs (analysis.pairing: unpaired): the captions that would otherwise speak of paired differences
UNPAIRED_CAPTIONS = {
    "forest": "Difference of the arms' mean scores from the reference's, in points (independent runs, unpaired), "
    "with the permutation test's interval, per arm and summary (where lower is better, as for the optimality gap, "
    "a negative difference is an improvement). Grey band: the equivalence margin. Filled: Holm-significant; "
    "diamond: equivalent; open: inconclusive.",
    "benchmarks": "Difference of mean scores (points, independent runs) of every arm on every benchmark; bold "
    "numbers are significant under the family's gatekept Holm: tested only once every arm's primary comparison "
    "is significant, then with Holm over all benchmarks and secondary summaries of the family.",
    "power": "Smallest true difference the permutation test detects with the target power, against the number "
    "of runs per arm, at the observed sd of runs within an arm.",
}
CAPTIONS = {
    "forest": "Paired difference from the reference, in points, with its interval over seeds, per arm and summary "
    "(where lower is better, as for the optimality gap, a negative difference is an improvement). "
    "Grey band: the equivalence margin. Filled: Holm-significant; diamond: equivalent; open: inconclusive.",
    "benchmarks": "Mean paired difference (points) of every arm on every benchmark; bold numbers are "
    "significant under the family's gatekept Holm: tested only once every arm's primary comparison is "
    "significant, then with Holm over all benchmarks and secondary summaries of the family.",
    "training": "Reward, fraction of zero-variance groups and fraction of kept prompts per training step: "
    "mean over seeds, band from the lowest to the highest seed.",
    "rankings": "Rank of every arm under every summary (1 = best: the highest mean, the lowest where lower is "
    "better); crossing lines mean the order depends on the summary.",
    "curves": "Each arm minus its reference, seed-matched: the mean over seeds and a band that covers the whole "
    "difference curve at once (Bonferroni t over every step, or budget, of every arm of the family); filled markers "
    "where the max-statistic sign-flip test, adjusted for all of them, decides.",
    "forecasts": "The final paired difference forecast from saturating fits (ScaleRL's form) of the first fraction of "
    "each run, with the sign-flip interval over seeds; dashed: the difference observed at the last step.",
    "power": "Smallest true difference detected with the target power, against the number of matched seeds, "
    "at the observed spread of each arm's paired differences.",
    "pass_at_k": "pass@k (unbiased estimator of Chen et al. 2021 from the k answers sampled per item) against k. "
    "Left: mean over seeds per arm, with the t interval over its seeds against the base policy (dashed) as a "
    "band. Right: each arm minus the reference, seed-matched, with the comparison's interval.",
    "profiles": "Performance profile (rliable's score distribution): the fraction of an arm's runs, over seeds and "
    "benchmarks, whose accuracy exceeds each threshold; a curve above another is better at every "
    "threshold. Band: percentile bootstrap over seeds, too narrow at few seeds (analysis/README.md).",
    "sequential": "Each arm's statistic z (the sum of its paired differences over the root of their sum of "
    "squares) at each look, against the seeds it had then. Bars at ±boundary: its efficacy boundary at the Holm "
    "level it was tested at; crossing one stops the arm for a difference. A look without bars has an infinite "
    "boundary: the design allows no rejection with so few seeds yet. The last marker is where the arm stopped "
    "(filled: differs; diamond: equivalent; open: inconclusive at the last look); dotted: the fixed design's seeds.",
}


def render_figures(
    cfg: Config, analysis: Analysis, runs: Runs | None, formats: Iterable[str] = ("svg",), curves: Curves | None = None
) -> dict[str, tuple[str, str, dict[str, bytes]]]:
    """Every figure of the report: ``{name: (title, caption, {format: bytes})}``."""
    comparisons, settings = analysis.comparisons, analysis.settings
    arms = cfg.compared_arms + sorted(set(analysis.summaries["arm"]) - set(cfg.compared_arms))
    styles = figures.arm_styles(arms, [c.reference for c in cfg.comparisons])
    made = {}
    for i, (family, group) in enumerate(comparisons.groupby("family", sort=False), start=1):
        made[f"forest-{i}"] = (f"Forest plot: {family}", "forest", figures.forest_plot(group, settings.alpha, styles))
    if (comparisons["level"] == "benchmark").any():
        made["benchmarks"] = (
            "Per-benchmark differences",
            "benchmarks",
            figures.benchmark_heatmap(comparisons, cfg.benchmarks),
        )
    if runs is not None:
        made["training"] = ("Training dynamics", "training", figures.training_curves(runs.steps, styles))
    if curves is not None:
        made["curve-differences"] = (
            "Paired differences over training",
            "curves",
            figures.curve_differences(curves.band),
        )
        if curves.compute_band is not None:
            at_budgets = figures.curve_differences(curves.compute_band, position="budget")
            made["equal-compute"] = ("Paired differences at equal compute", "curves", at_budgets)
        made["forecasts"] = (
            "Forecasts of the final difference",
            "forecasts",
            figures.forecast_plot(curves.forecasts, curves.band),
        )
    if len(analysis.rankings):
        made["rankings"] = ("Ranking sensitivity", "rankings", figures.ranking_plot(analysis.rankings, styles))
    made["power"] = ("Power", "power", figures.power_plot(comparisons, settings, styles))
    if comparisons["measure"].str.startswith("pass@").any():
        vs_base = analysis.pass_at_k_vs_base
        for i, comp in enumerate(cfg.comparisons, start=1):
            made[f"pass-at-k-{i}"] = (
                f"{comp.family}: pass@k",
                "pass_at_k",
                figures.pass_at_k_plot(analysis.summaries, comparisons, vs_base, comp.family, styles),
            )
    if sections.has_sequential(analysis):
        made["sequential"] = (
            "Sequential design",
            "sequential",
            figures.sequential_plot(analysis.sequential_looks, analysis.sequential, styles),
        )
    for i, comp in enumerate(cfg.comparisons, start=1):
        title = f"{comp.family}: performance profiles"
        made[f"profile-{i}"] = (
            title,
            "profiles",
            figures.profile_plot(analysis.performance_profiles, [comp.reference, *comp.arms], title, styles),
        )
    captions = {**CAPTIONS, **UNPAIRED_CAPTIONS} if tables.is_unpaired(comparisons) else CAPTIONS
    return {name: (title, captions[kind], figures.render(fig, formats)) for name, (title, kind, fig) in made.items()}


def render_html(
    cfg: Config,
    analysis: Analysis,
    runs: Runs | None,
    rendered: Mapping[str, tuple[str, str, Mapping[str, bytes]]],
    config_text: str,
    curves: Curves | None = None,
    checkpoints: pd.DataFrame | None = None,
) -> str:
    """The whole report as one HTML string."""
    inline = {name: html_figure(r, title, caption) for name, (title, caption, r) in rendered.items()}
    page = sections.Page(cfg, analysis, runs, inline, config_text, curves, checkpoints)
    registry = sections.SECTIONS  # looked up at each call: the registry, not a copy taken at import
    shown = {anchor: found.render(page) for anchor, found in registry.items()}
    nav = "".join(f'<a href="#{anchor}">{registry[anchor].nav}</a>' for anchor, html in shown.items() if html)
    title = esc(f"armlab report: {cfg.experiment}")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="icon" href="data:,"><title>{title}</title><style>{STYLE}</style></head>'
        f"<body><header><h1>{title}</h1><nav>{nav}</nav></header>{''.join(shown.values())}</body></html>\n"
    )


def _separate(out_dir: Path | str, figures_dir: Path | str) -> None:
    """Refuse --out and --figures inside one another: each is replaced as a whole."""
    out, figs = Path(out_dir).resolve(), Path(figures_dir).resolve()
    if out == figs or out.is_relative_to(figs) or figs.is_relative_to(out):
        raise AnalysisInputError(
            f"--figures {figures_dir} and --out {out_dir}: expected separate directories (each is replaced as a whole)"
        )


def write_report(
    config_path: Path | str,
    analysis_dir: Path | str,
    out_dir: Path | str,
    runs_dir: Path | str | None = None,
    figures_dir: Path | str | None = None,
    curves_dir: Path | str | None = None,
) -> Path:
    """Write ``out_dir/index.html`` (and each figure as SVG and PNG to ``figures_dir``); return its path.

    Each directory is new, empty or an earlier output of the report, and is replaced as a whole
    (:func:`armlab.files.output_directory`), so a killed run leaves no file that looks complete and
    nothing else is ever deleted; both are checked before any work.
    """
    files.check_output_directory(out_dir, "report")
    if figures_dir is not None:
        _separate(out_dir, figures_dir)
        files.check_output_directory(figures_dir, "report --figures")
    raw = load_raw(config_path)
    analysis = read_analysis(analysis_dir, parse_config(raw, str(config_path)).experiment)
    # every setting as the analysis recorded it (its manifest), not as the config may say since: one α on the page
    cfg = parse_config(raw, str(config_path), settings=analysis.settings)
    runs = read_runs(runs_dir) if runs_dir is not None else None
    checkpoints = read_checkpoints(runs_dir) if runs_dir is not None else None
    curves = read_curves(curves_dir) if curves_dir is not None else None
    formats = ("svg", "png") if figures_dir is not None else ("svg",)
    rendered = render_figures(cfg, analysis, runs, formats, curves)
    page = render_html(cfg, analysis, runs, rendered, Path(config_path).read_text(), curves, checkpoints)
    if figures_dir is not None:
        with files.output_directory(figures_dir, "report --figures") as tmp:
            for name, (_, _, images) in rendered.items():
                figures.save(images, tmp, name)
    with files.output_directory(out_dir, "report") as tmp:
        (tmp / "index.html").write_text(page)
    return Path(out_dir) / "index.html"
