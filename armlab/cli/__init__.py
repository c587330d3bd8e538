"""The ``armlab`` command line, at the top of the import graph: the parsing of arguments and the printing of every
subcommand, one module per group of them, over the stages' library code.

A subcommand is one function ``register(subparsers)`` that adds its parser and sets ``run`` (the parsed
arguments -> an exit status), listed in its module's ``SUBCOMMANDS`` (:mod:`armlab.cli.analysis`: analyze, report,
curves, plan, summary, steps; :mod:`armlab.cli.training`: arms; :mod:`armlab.cli.evals`: probe, benchmarks;
:mod:`armlab.cli.rescore`: rescore) or added with :func:`subcommand`. A subcommand imports the library it runs
when it runs (``armlab --help`` loads no torch, lm-eval nor matplotlib). A refused input — an
:class:`~armlab.analysis.errors.AnalysisInputError`, a :class:`~armlab.files.BadFile` (a refused ``--out``, a
corrupt file) or a :class:`~armlab.configfile.ConfigError` — is printed as one line without a traceback, status 2
(:data:`BAD_INPUT`, as argparse's usage errors), and so is a package that an extra installs and this install lacks
(the analysis-only ``pip install .`` has no torch: ``armlab arms`` names ``pip install 'armlab[train]'``); any other
exception is a failure of armlab itself: its traceback and status 3 (:data:`INTERNAL_FAILURE`).

    armlab analyze CONFIG --out DIR        (or: python -m armlab analyze ...)
"""

import argparse
import os
import re
import sys
import traceback
from importlib import metadata

from armlab.analysis.errors import AnalysisInputError
from armlab.cli import analysis, evals, rescore, training
from armlab.configfile import ConfigError
from armlab.files import BadFile

BAD_INPUT = 2  # the input was refused: fix the config, the file or the argument named in the message
INTERNAL_FAILURE = 3  # armlab itself failed: a bug to report, with the traceback printed above
CLOSED_OUTPUT = 141  # the reader of the output went away (`armlab arms | head`): 128 + SIGPIPE, as a shell's tools
EPILOG = (
    f"exit status: 0 done; {BAD_INPUT} bad input (one line names what); {INTERNAL_FAILURE} internal failure; "
    f"{CLOSED_OUTPUT} the output's reader stopped early"
)


_SUBCOMMANDS = [*analysis.SUBCOMMANDS, *training.SUBCOMMANDS, *evals.SUBCOMMANDS, *rescore.SUBCOMMANDS]


def subcommand(register):
    """Add a function ``register(subparsers)`` that adds one subcommand."""
    _SUBCOMMANDS.append(register)
    return register


def _version() -> str:
    try:
        return metadata.version("armlab")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def extra_providing(module: str) -> str | None:
    """The extra of the installed armlab whose requirements name the package of top-level module ``module`` (every
    dependency of an extra is spelt as its import name with ``-`` for ``_``: ``lm_eval`` is ``lm-eval``), the one
    naming it directly (torch: train, not eval, which includes train); None where no extra names it."""
    try:
        requirements = metadata.requires("armlab") or []
    except metadata.PackageNotFoundError:
        return None
    wanted = module.lower().replace("_", "-")
    for requirement in requirements:
        found = re.fullmatch(r"\s*([A-Za-z0-9._-]+)[^;]*;\s*extra\s*==\s*[\"']([^\"']+)[\"']\s*", requirement)
        if found and re.sub(r"[-_.]+", "-", found.group(1).lower()) == wanted:
            return found.group(2)
    return None


def build_parser():
    parser = argparse.ArgumentParser(prog="armlab", description="RLVR ablation harness", epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"armlab {_version()}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for register in _SUBCOMMANDS:
        register(subparsers)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (AnalysisInputError, BadFile, ConfigError) as exc:
        print(f"armlab {args.command}: error: {exc}", file=sys.stderr)
        return BAD_INPUT
    except ModuleNotFoundError as exc:
        # a package itself missing, not a module inside one, and one that an extra installs
        extra = extra_providing(exc.name) if exc.name and "." not in exc.name else None
        if extra is not None:
            package = exc.name.replace("_", "-")
            message = f"needs the {package} package, which this install lacks: pip install 'armlab[{extra}]'"
            print(f"armlab {args.command}: error: {message}", file=sys.stderr)
            return BAD_INPUT
        print_internal_failure(args.command)
        return INTERNAL_FAILURE
    except BrokenPipeError:
        # quietly, as `seq | head` does; what is still buffered goes nowhere instead of failing again at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return CLOSED_OUTPUT
    except Exception:
        print_internal_failure(args.command)
        return INTERNAL_FAILURE


def print_internal_failure(command: str) -> None:
    """Print the exception being handled as a failure of armlab itself: its traceback and one line."""
    traceback.print_exc()
    print(f"armlab {command}: internal failure (a bug in armlab; the traceback is above)", file=sys.stderr)
