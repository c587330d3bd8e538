"""Provenance: a manifest's commit names the code only when the checkout was clean, so manifests and locks record
whether tracked files had uncommitted changes, and the report says so."""

import subprocess

import pandas as pd
import pytest

from armlab import files
from armlab.analysis.reporting.read import Runs
from armlab.analysis.reporting.sections import runs_summary


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    _git(tmp_path, "add", "code.py")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    return tmp_path


def test_a_clean_checkout_is_not_dirty_and_an_untracked_file_does_not_make_it_so(repo):
    (repo / "results.parquet").write_text("untracked")
    assert files.git_dirty(repo) is False
    assert len(files.git_commit(repo)) == 40


def test_a_changed_tracked_file_makes_the_checkout_dirty(repo):
    (repo / "code.py").write_text("x = 2\n")
    assert files.git_dirty(repo) is True


def test_outside_a_checkout_neither_is_known(tmp_path):
    assert files.git_dirty(tmp_path) is None and files.git_commit(tmp_path) is None


def test_manifests_record_it_and_the_report_counts_the_runs_with_uncommitted_changes():
    assert files.environment_record(1)["git_dirty"] == files.git_dirty()
    assert "numerics" not in files.environment_record(1)  # only a job that pinned its numerics records them
    steps = pd.DataFrame({"arm": ["a", "a"], "seed": [1, 2], "step": [1, 1]})
    manifests = [{"git_commit": "c" * 40, "git_dirty": True}, {"git_commit": "c" * 40, "git_dirty": False}]
    runs = Runs(steps=steps, manifests=manifests)
    assert runs_summary(runs).endswith(f"commit {'c' * 40} (1 run(s) with uncommitted changes to tracked files)")
    clean = Runs(steps=steps, manifests=[{"git_commit": "c" * 40, "git_dirty": False}] * 2)
    assert runs_summary(clean).endswith(f"commit {'c' * 40}")
