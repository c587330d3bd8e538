"""The ``armlab`` command line, at the top of the import graph: each package brings its own subcommands.

A subcommand is one function ``register(subparsers)`` that adds its parser and sets ``run`` (the parsed
arguments -> an exit status), listed in its package's ``commands.SUBCOMMANDS`` (``analysis.commands``:
analyze, report, curves, plan; ``training.commands``: arms) or added with :func:`subcommand`. A refused input — an
:class:`~analysis.errors.AnalysisInputError`, a :class:`~armlab.files.BadFile` (a refused ``--out``, a corrupt
file) or a :class:`~armlab.configfile.ConfigError` — is printed as one line without a traceback, status 2.

    armlab analyze CONFIG --out DIR        (or: python -m armlab_cli analyze ...)
"""

import argparse
import sys

from analysis import commands as analysis_commands
from analysis.errors import AnalysisInputError
from armlab.configfile import ConfigError
from armlab.files import BadFile
from training import commands as training_commands

_SUBCOMMANDS = [*analysis_commands.SUBCOMMANDS, *training_commands.SUBCOMMANDS]


def subcommand(register):
    """Add a function ``register(subparsers)`` that adds one subcommand."""
    _SUBCOMMANDS.append(register)
    return register


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
    except (AnalysisInputError, BadFile, ConfigError) as exc:
        print(f"armlab {args.command}: error: {exc}", file=sys.stderr)
        return 2
