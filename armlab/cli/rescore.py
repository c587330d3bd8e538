"""The grader sensitivity's subcommand of the ``armlab`` command line: ``armlab rescore`` (the work is
:mod:`armlab.experiment.rescore`, imported when it runs)."""

from __future__ import annotations

from pathlib import Path

from armlab import layout


def rescore(subparsers) -> None:
    """``armlab rescore RESULTS_DIR [--verifier NAME ...]``: the stored answers re-graded and the analysis rerun per
    verifier (armlab/experiment/rescore.py, above the stages: imported only when it runs)."""
    from armlab.evals.verifiers import VERIFIERS

    parser = subparsers.add_parser(
        "rescore",
        help="re-grade the stored answers under other verifiers and say which verdicts change",
        description="Re-grade every answer the evaluations stored under each verifier (nothing is generated), "
        "rerun the paired analysis per verifier and write RESULTS_DIR/analysis/verifier_sensitivity.csv (each "
        "verdict beside the configured one) and RESULTS_DIR/verifiers/; the configured results are left as they are.",
    )
    parser.add_argument("results", help="an experiment's results folder, results/<experiment>, after its analysis")
    parser.add_argument(
        "--verifier",
        action="append",
        dest="verifiers",
        metavar="NAME",
        help=f"a verifier to re-grade under (repeatable): {', '.join(VERIFIERS)}; default the config's "
        "analysis.verifiers, else every one",
    )

    def run(args) -> int:
        return print_rescore(args.results, args.verifiers)

    parser.set_defaults(run=run)


def print_rescore(results_dir: Path | str, names: list[str] | None) -> int:
    """``armlab rescore``: rescore, then say what was written, what it cost and every flip."""
    from armlab.analysis.screens import verifier_sensitivity
    from armlab.experiment.rescore import rescore

    found = rescore(results_dir, names)
    results = Path(results_dir)
    share = f", {100 * found.seconds / found.evaluation_seconds:.1f}% of" if found.evaluation_seconds else " beside"
    print(
        f"armlab rescore: wrote {results / layout.RESCORED} and {results / 'analysis' / verifier_sensitivity.TABLE} "
        f"({len(found.table)} cells under {found.table['verifier'].nunique()} verifier(s)); {found.seconds:.1f} s"
        f"{share} the evaluation jobs' {found.evaluation_seconds:.0f} s"
    )
    for listed, said in (
        (found.idle, "no stored answer has a reference it reads, nothing re-graded"),
        (found.unchanged, "every answer judged as the evaluation did: the configured analysis"),
    ):
        if listed:
            print(f"armlab rescore: {', '.join(listed)}: {said}")
    flips = verifier_sensitivity.flip_lines(found.table)
    print(f"Flips ({len(flips)}):" if flips else "Flips: none; every verdict is the same under every verifier")
    for line in flips:
        print(f"  {line}")
    return 0


SUBCOMMANDS = [rescore]
