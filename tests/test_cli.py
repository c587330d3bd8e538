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
