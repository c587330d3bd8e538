"""The ``armlab`` command line.

A subcommand is one function decorated with :func:`subcommand`: it receives
the argparse sub-parsers object, adds its parser and sets ``run`` to a
callable taking the parsed arguments and returning an exit status.
:class:`AnalysisInputError` is printed without a traceback, with status 2.
"""

import argparse
import sys

from analysis.config import load_config
from analysis.errors import AnalysisInputError

_SUBCOMMANDS = []


def subcommand(register):
    """Register a function ``register(subparsers)`` that adds one subcommand."""
    _SUBCOMMANDS.append(register)
    return register


@subcommand
def analyze(subparsers):
    """``armlab analyze CONFIG --out DIR``: the whole statistical analysis."""
    parser = subparsers.add_parser(
        "analyze", help="paired comparisons, intervals, tests and rankings from a config",
        description="Run the analysis of a config (YAML or JSON) and write its tables to --out.",
    )
    parser.add_argument("config", help="experiment config, YAML or JSON")
    parser.add_argument("--out", required=True, help="output directory (replaced as a whole)")
    parser.add_argument("--scores", help="tidy scores file (parquet or CSV); replaces the config's input section")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="override a config value, e.g. --set input.path=runs.csv (repeatable)")

    def run(args):
        from analysis import pipeline  # scipy and pandas only for the subcommands that need them

        result = pipeline.analyze(load_config(args.config, args.overrides), args.scores)
        pipeline.write_outputs(result, args.out)
        print(f"armlab analyze: wrote {args.out} ({len(result.comparisons)} comparison rows)")
        for note in result.notes:
            print(f"note: {note}")
        return 0

    parser.set_defaults(run=run)


@subcommand
def report(subparsers):
    """``armlab report CONFIG --analysis DIR [--runs DIR] --out DIR``: the static HTML report."""
    parser = subparsers.add_parser(
        "report", help="one self-contained HTML report from an analysis directory",
        description="Write OUT/index.html (figures inline, opens from disk) from the output of `armlab analyze`, "
                    "with training curves and provenance when --runs is given.",
    )
    parser.add_argument("config", help="experiment config, YAML or JSON (the one the analysis used)")
    parser.add_argument("--analysis", required=True, help="output directory of `armlab analyze`")
    parser.add_argument("--runs", help="runs directory (<arm>/seed-<seed>/steps.parquet and manifest.json); "
                                       "omit for results converted from elsewhere")
    parser.add_argument("--out", required=True, help="report directory; index.html is written there")
    parser.add_argument("--figures", help="also write every figure as SVG and PNG to this directory")

    def run(args):
        from analysis.report import write_report  # matplotlib only for this subcommand

        path = write_report(args.config, args.analysis, args.out, runs_dir=args.runs, figures_dir=args.figures)
        print(f"armlab report: wrote {path}" + (f" and figures to {args.figures}" if args.figures else ""))
        return 0

    parser.set_defaults(run=run)


@subcommand
def arms(subparsers):
    """``armlab arms``: every registered advantage estimator and data policy, with its parameters."""
    parser = subparsers.add_parser("arms", help="list the estimators and data policies a config may name",
                                   description="List every registered estimator and data policy with its "
                                               "one-line description and parameters (defaults).")

    def run(args):
        from training.data_policies import list_policies
        from training.estimators import list_estimators

        for title, listing in (("estimators", list_estimators()), ("data policies", list_policies())):
            print(f"{title} ({len(listing)}):")
            for entry in listing:
                params = ", ".join(f"{k}={v!r}" for k, v in entry["params"].items()) or "no parameters"
                print(f"  {entry['name']:22s} {entry['description']}\n  {'':22s} parameters: {params}")
        return 0

    parser.set_defaults(run=run)


def build_parser():
    parser = argparse.ArgumentParser(prog="armlab", description="RLVR ablation harness")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for register in _SUBCOMMANDS:
        register(subparsers)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except AnalysisInputError as exc:
        print(f"armlab {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
