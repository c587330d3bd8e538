"""The command line (armlab/cli/): what a shell user sees when armlab's output is cut short."""

import subprocess
import sys

from conftest import REPO


def test_a_reader_that_stops_early_gets_no_traceback():
    """`armlab arms | head -1`: armlab printed a BrokenPipeError traceback and "internal failure" (status 3)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "armlab", "arms"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # the reader goes away before armlab writes a line: every write fails
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and stderr == ""


def test_the_help_lists_every_subcommand_without_loading_a_heavy_library():
    """Each subcommand imports the library it runs when it runs: `armlab --help` parses every subcommand's
    arguments (armlab/cli/) and loads none of torch, lm-eval, transformers or matplotlib."""
    code = (
        "import runpy, sys\n"
        "sys.argv = ['armlab', '--help']\n"
        "try:\n    runpy.run_module('armlab', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "heavy = ('torch', 'lm_eval', 'transformers', 'matplotlib')\n"
        "print('loaded:', [name for name in heavy if name in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    listed = out.split("{", 1)[1].split("}", 1)[0].split(",")
    assert set(listed) == {
        "analyze",
        "report",
        "curves",
        "plan",
        "summary",
        "steps",
        "arms",
        "probe",
        "benchmarks",
        "rescore",
    }
    assert out.splitlines()[-1] == "loaded: []"
