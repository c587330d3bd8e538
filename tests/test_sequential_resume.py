"""A sequential design's wave killed midway resumes to the decisions of the uninterrupted run.

A module of its own, so that the killed run goes on one worker of `make test` while the other makes the
uninterrupted run (``sequential_run`` of tests/test_sequential_workflow.py, shared through the session)."""

import pytest
from conftest import copy_of_the_repository, start_and_kill_when

# sequential_run: the session's fixture, imported so that this module can ask for it
from test_sequential_workflow import CONFIG, OUT, SNAKEMAKE, _decisions, _ledger, _snakemake, sequential_run  # noqa: F401

pytestmark = pytest.mark.workflow


def test_a_wave_killed_midway_resumes_to_the_same_decisions(request, tmp_path):
    workdir = copy_of_the_repository(tmp_path / "checkout")
    # look 1 is decided and the second wave's jobs are starting
    second_wave = OUT / "logs" / "train" / "grpo" / "seed-3.log"
    start_and_kill_when(SNAKEMAKE, workdir, CONFIG, lambda root: (root / second_wave).exists())
    assert len(_ledger(workdir)) == 1
    assert _snakemake(workdir, "--unlock").returncode == 0
    dry = _snakemake(workdir, "-n")  # what the next wave holds, before it is resumed
    assert (
        "armlab sequential: look 1 of 3 recorded; open: controls: grpo_copy, grpo_aa; next wave (look 2, 3 seeds): "
        "3 new runs, 9 in all (fixed design: 12)" in dry.stdout
    ), dry.stdout[-2000:]
    resumed = _snakemake(workdir)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    # the uninterrupted run only now: until here this test runs beside the worker that makes it
    reference = request.getfixturevalue("sequential_run")[0]
    assert _decisions(workdir) == _decisions(reference)
