"""The analysis's subcommands of the ``armlab`` command line: ``armlab analyze``, ``report``, ``curves``, ``plan``,
``summary`` and ``steps``: their arguments and what they print; the work is :mod:`armlab.analysis`'s.

Each is one function ``register(subparsers)`` that adds its parser and sets ``run`` (parsed arguments ->
exit status); :data:`SUBCOMMANDS` lists them for :mod:`armlab.cli`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from armlab.analysis.config import load_config
from armlab.analysis.errors import AnalysisInputError
from armlab.files import check_output_directory

if TYPE_CHECKING:
    import argparse

    from armlab.analysis.learning_curves.curves import CurveInference


def add_out_argument(parser: argparse.ArgumentParser, command: str, what: str = "output directory") -> None:
    """``--out``: a directory the subcommand replaces as a whole (armlab.files.check_output_directory)."""
    help_text = f"{what}, replaced as a whole: new, empty, or an earlier output of `armlab {command}`"
    parser.add_argument("--out", required=True, help=help_text)


def analyze(subparsers: argparse._SubParsersAction) -> None:
    """``armlab analyze CONFIG --out DIR``: the whole statistical analysis."""
    parser = subparsers.add_parser(
        "analyze",
        help="paired comparisons, intervals, tests and rankings from a config",
        description="Run the analysis of a config (YAML or JSON) and write its tables to --out.",
    )
    parser.add_argument("config", help="experiment config, YAML or JSON")
    add_out_argument(parser, "analyze")
    parser.add_argument("--scores", help="tidy scores file (parquet or CSV); replaces the config's input section")
    parser.add_argument(
        "--jobs",
        help="the experiment's results folder (runs/ and evals/ manifests): job times for the advice on whether "
        "one more seed or more samples per item buys more precision per job-minute",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="override a config value, e.g. --set input.path=runs.csv (repeatable)",
    )

    def run(args: argparse.Namespace) -> int:
        from armlab.analysis import pipeline  # scipy and pandas only for the subcommands that need them

        check_output_directory(args.out, "analyze")  # before the work, not after
        result = pipeline.analyze(load_config(args.config, args.overrides), args.scores, args.jobs)
        pipeline.write_outputs(result, args.out)
        print(f"armlab analyze: wrote {args.out} ({len(result.comparisons)} comparison rows)")
        for note in result.notes:
            print(f"note: {note}")
        print_verdicts(args.out)
        return 0

    parser.set_defaults(run=run)


def report(subparsers: argparse._SubParsersAction) -> None:
    """``armlab report CONFIG --analysis DIR [--runs DIR] --out DIR``: the static HTML report."""
    parser = subparsers.add_parser(
        "report",
        help="one self-contained HTML report from an analysis directory",
        description="Write OUT/index.html (figures inline, opens from disk) from the output of `armlab analyze`, "
        "with training curves and provenance when --runs is given.",
    )
    parser.add_argument("config", help="experiment config, YAML or JSON (the one the analysis used)")
    parser.add_argument("--analysis", required=True, help="output directory of `armlab analyze`")
    parser.add_argument(
        "--runs",
        help="runs directory (<arm>/seed-<seed>/steps.parquet and manifest.json); "
        "omit for results converted from elsewhere",
    )
    add_out_argument(parser, "report", "report directory (index.html)")
    parser.add_argument(
        "--figures", help="also write every figure as SVG and PNG to this directory (replaced as a whole, like --out)"
    )
    parser.add_argument(
        "--curves", help="output directory of `armlab curves --config` (curves_summary/): add a learning-curves section"
    )

    def run(args: argparse.Namespace) -> int:
        from armlab.analysis.reporting.report import write_report  # matplotlib only for this subcommand

        path = write_report(
            args.config, args.analysis, args.out, runs_dir=args.runs, figures_dir=args.figures, curves_dir=args.curves
        )
        print(f"armlab report: wrote {path}" + (f" and figures to {args.figures}" if args.figures else ""))
        return 0

    parser.set_defaults(run=run)


def curves(subparsers: argparse._SubParsersAction) -> None:
    """``armlab curves --curves DIR [--scores FILE] [--config CONFIG] --out DIR``: accuracy over training, table and
    figure; with the config, paired inference over the curves."""
    parser = subparsers.add_parser(
        "curves",
        help="accuracy over training from checkpoint evaluations (evals/curves.py), and its paired inference",
        description="Write OUT/curves.csv (arm, seed, step, summary, value) and OUT/accuracy_curves.svg/.png from "
        "the checkpoint evaluations --curves names; the base policy's rows of --scores are every run's step 0. "
        "With --config, also each comparison's paired difference per step with a simultaneous band and a p adjusted "
        "for all steps (OUT/curve_band.csv, OUT/curve_differences.svg/.png), and the curve measures (final, "
        "area_under_curve, steps_to_threshold, best_checkpoint) per run (OUT/curve_measures.csv) compared seed by "
        "seed with the final value as the primary of a gatekept Holm (OUT/curve_comparisons.csv).",
    )
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument(
        "--curves",
        nargs="+",
        help="checkpoint evaluations: their manifest.json files, or a directory of <arm>/seed-<seed>/ ones",
    )
    given.add_argument(
        "--table",
        help="checkpoint evaluations from elsewhere: one tidy table (.parquet or .csv) with a step column and, "
        "optionally, compute-ledger columns (docs/contracts.md)",
    )
    parser.add_argument("--scores", help="the experiment's scores.parquet (its arm base is step 0)")
    parser.add_argument("--config", help="experiment config (its comparisons and analysis settings): paired inference")
    add_out_argument(parser, "curves")

    def run(args: argparse.Namespace) -> int:
        from armlab.analysis.learning_curves import curves as accuracy_curves
        from armlab.analysis.reporting import figures
        from armlab.files import output_directory, write_csv

        check_output_directory(args.out, "curves")
        config = load_config(args.config) if args.config else None  # a bad config fails before any file is read
        evaluations = (
            accuracy_curves.read_curve_table(args.table) if args.table else accuracy_curves.read_curves(args.curves)
        )
        table = accuracy_curves.curve_summaries(evaluations, accuracy_curves.base_rows(args.scores))
        inference = accuracy_curves.compare_curves(table, config) if config else None
        with output_directory(args.out, "curves") as tmp:
            write_csv(table, tmp / "curves.csv")
            figures.save(figures.render(figures.accuracy_curves(table)), tmp, "accuracy_curves")
            if inference is not None:
                write_csv(inference.band, tmp / "curve_band.csv")
                write_csv(inference.verdicts, tmp / "curve_verdicts.csv")
                write_csv(inference.fits, tmp / "curve_fits.csv")
                write_csv(inference.forecasts, tmp / "curve_forecasts.csv")
                write_csv(inference.backtest, tmp / "curve_backtest.csv")
                if inference.parameters is not None:
                    write_csv(inference.parameters, tmp / "fit_comparisons.csv")
                forecast_figure = figures.forecast_plot(inference.forecasts, inference.band)
                figures.save(figures.render(forecast_figure), tmp, "forecasts")
                if inference.compute_band is not None:
                    write_csv(inference.compute_band, tmp / "curve_compute_band.csv")
                    equal_compute = figures.curve_differences(inference.compute_band, position="budget")
                    figures.save(figures.render(equal_compute), tmp, "equal_compute")
                write_csv(inference.measures, tmp / "curve_measures.csv")
                write_csv(inference.comparisons, tmp / "curve_comparisons.csv")
                figures.save(figures.render(figures.curve_differences(inference.band)), tmp, "curve_differences")
        print(f"armlab curves: wrote {args.out} ({table.step.nunique()} steps, {len(table)} rows)")
        if inference is not None:
            print_curve_verdicts(inference)
        return 0

    parser.set_defaults(run=run)


def print_curve_verdicts(inference: CurveInference) -> None:
    """Per comparison: its verdict sentence, the steps where one arm is ahead after adjusting for all steps, and
    each curve measure's gatekept verdict; then the notes."""
    first = inference.comparisons.drop_duplicates(["family", "measure", "arm"])
    for verdict in inference.verdicts.itertuples():
        rows = inference.band[(inference.band["family"] == verdict.family) & (inference.band["arm"] == verdict.arm)]
        ahead = rows[rows["ahead"] != "neither"]
        where = ", ".join(f"{step} ({who})" for step, who in zip(ahead["step"], ahead["ahead"])) or "none"
        cells = first[(first["family"] == verdict.family) & (first["arm"] == verdict.arm)]
        measures = ", ".join(
            f"{m} {d:+.4f} (p_holm {p:.3g}{', decided' if r else ''})"
            for m, d, p, r in zip(cells["measure"], cells["mean_diff"], cells["p_holm"], cells["reject"])
        )
        print(f"{verdict.family}: {verdict.verdict}")
        print(f"  steps where one is ahead (simultaneous): {where}; {measures}")
        forecast = inference.forecasts[
            (inference.forecasts["family"] == verdict.family) & (inference.forecasts["arm"] == verdict.arm)
        ]
        said = "; ".join(
            f"f = {f:g}: {v}" + (f" {d:+.4f} [{lo:+.4f}, {hi:+.4f}]" if n >= 2 else "")
            for f, v, d, lo, hi, n in zip(
                forecast["fraction"],
                forecast["verdict"],
                forecast["forecast_diff"],
                forecast["ci_low"],
                forecast["ci_high"],
                forecast["n_seeds"],
            )
        )
        print(f"  forecast of the final difference: {said}")
    for note in inference.notes:
        print(f"note: {note}")


def plan(subparsers: argparse._SubParsersAction) -> None:
    """``armlab plan CONFIG``: what the design can decide and what it costs, before any seed is spent."""
    parser = subparsers.add_parser(
        "plan",
        help="what the configured seeds can decide, the seeds an effect needs, the wall time: before spending",
        description="Per comparison family: the smallest Holm-adjusted p any data could give, whether equivalence "
        "is attainable, the detectable effect and the seeds needed at a paired sd, and the wall time from measured "
        "job times (analysis/design/planning.py). The workflow prints the same lines at every start and dry run.",
    )
    parser.add_argument("config", help="experiment config, YAML or JSON")
    parser.add_argument("--seeds", type=int, help="seeds per arm to plan for (default: the config's)")
    spread = parser.add_mutually_exclusive_group()
    spread.add_argument("--sd", type=float, help="sd of the primary summary's paired differences (score units)")
    spread.add_argument("--sd-from", help="an earlier experiment's tidy scores: the sd measured there")
    parser.add_argument(
        "--jobs", help="an earlier experiment's results folder: job times (default: results/<experiment>)"
    )
    parser.add_argument("--cores", type=int, default=2, help="cores the jobs share (default 2)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides", help="override a config value"
    )

    def run(args: argparse.Namespace) -> int:
        from armlab.analysis.config import load_raw, parse_config
        from armlab.analysis.design import planning
        from armlab.configfile import check_limit

        for name in ("seeds", "cores"):
            value = getattr(args, name)
            if value is not None and value < 1:
                raise AnalysisInputError(f"--{name}: expected a positive whole number, got {value}")
        if args.sd is not None and not 0 < args.sd < float("inf"):
            raise AnalysisInputError(f"--sd: expected a positive number (score units), got {args.sd}")
        raw = load_raw(args.config, args.overrides)
        config = parse_config(raw, source=args.config)
        if args.seeds is not None:  # under the config's own limit on seeds, as its seed list is
            check_limit(args.config, "--seeds", args.seeds, dict(config.limits), "seeds")
        print(
            planning.plan_text(
                raw, config, seeds=args.seeds, sd=args.sd, sd_from=args.sd_from, jobs=args.jobs, cores=args.cores
            )
        )
        return 0

    parser.set_defaults(run=run)


def print_verdicts(directory: Path | str) -> None:
    """Print one verdict line per compared arm from an analysis output folder (``armlab summary``; the workflow's
    last lines)."""
    from armlab.analysis.reporting import read

    path, lines = read.verdict_lines(directory)
    print(f"Verdicts ({path}):")
    for line in lines:
        print(f"  {line}")


def summary(subparsers: argparse._SubParsersAction) -> None:
    """``armlab summary DIR``: reprint the verdicts the workflow and `armlab analyze` end with."""
    parser = subparsers.add_parser(
        "summary",
        help="one line per compared arm: verdict, difference and the interval beside it",
        description="Reprint the verdicts of an analysis: DIR is the output folder of `armlab analyze` or an "
        "experiment's results folder (results/<experiment>).",
    )
    parser.add_argument("directory", help="analysis output folder, or results/<experiment>")

    def run(args: argparse.Namespace) -> int:
        print_verdicts(args.directory)
        return 0

    parser.set_defaults(run=run)


def steps(subparsers: argparse._SubParsersAction) -> None:
    """``armlab steps KIND --pattern P --experiment E --out DIR``: step logs from elsewhere as armlab's."""
    from armlab.analysis.inputs.steps import STEP_LOGS

    parser = subparsers.add_parser(
        "steps",
        help="training step logs from elsewhere (TRL, W&B, metrics.jsonl) as run folders the report reads",
        description="Write OUT/<arm>/seed-<seed>/steps.parquet and its manifest from each run's step log, so that "
        "`armlab report --runs OUT` draws the training curves (analysis/inputs/steps.py). Kinds: "
        + "; ".join(f"{name}: {log.file}" for name, log in STEP_LOGS.items()),
    )
    parser.add_argument("kind", help=f"what the logs are: one of {sorted(STEP_LOGS)}")
    parser.add_argument("--pattern", required=True, help="the log files, with {arm} and {seed}: logs/{arm}/{seed}.csv")
    parser.add_argument("--experiment", required=True, help="the experiment the runs belong to")
    parser.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="NAME=SOURCE",
        help="take armlab's NAME from the log's SOURCE field (repeatable): step=global_step, reward=train/reward",
    )
    add_out_argument(parser, "steps", "runs directory")

    def run(args: argparse.Namespace) -> int:
        from armlab.analysis.inputs.runs import runs_from_pattern
        from armlab.analysis.inputs.steps import import_steps

        check_output_directory(args.out, "steps")
        STEP_LOGS.entry(args.kind, "armlab steps: kind", AnalysisInputError)
        malformed = [f for f in args.field if f.count("=") != 1 or not all(f.split("="))]
        if malformed:
            raise AnalysisInputError(f"--field {malformed[0]!r}: expected NAME=SOURCE, e.g. reward=train/reward")
        fields = dict(f.split("=") for f in args.field)
        runs = runs_from_pattern(args.pattern, args.experiment, files=True, key="--pattern")
        for line in import_steps(args.kind, runs, args.experiment, fields, args.out):
            print(f"armlab steps: {line}")
        print(f"armlab steps: wrote {args.out}; `armlab report --runs {args.out}` draws the training curves")
        return 0

    parser.set_defaults(run=run)


SUBCOMMANDS = [analyze, report, curves, plan, summary, steps]
