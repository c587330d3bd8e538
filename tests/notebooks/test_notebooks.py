"""Notebooks: each is paired with a jupytext ``.py`` file, and all run (nbmake) against small fixtures.

The notebooks read their inputs from environment variables (``ARMLAB_CONFIG``, ``ARMLAB_SCORES``,
``ARMLAB_RUNS``, ``ARMLAB_DATAFLEX_CSV``); here they point at the synthetic fixtures of
tests/fixtures/report/, so the notebooks run without results/ or the DataFlex-RL table.
"""

import os
import runpy
import subprocess
import sys

import jupytext
import pytest
from conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "report"
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_the_three_notebooks_are_there():
    assert [n.stem for n in NOTEBOOKS] == ["01_results_overview", "02_reanalysis_dataflex_rl", "03_how_many_seeds"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_each_notebook_is_paired_with_its_py_file_and_kept_without_outputs(notebook):
    ipynb, script = jupytext.read(notebook), jupytext.read(notebook.with_suffix(".py"))
    assert ipynb.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    assert [(c.cell_type, c.source) for c in ipynb.cells] == [(c.cell_type, c.source) for c in script.cells]
    assert all(not cell.outputs and cell.execution_count is None for cell in ipynb.cells if cell.cell_type == "code")


@pytest.mark.notebook
def test_the_notebooks_run_against_small_fixtures(tmp_path):
    build = runpy.run_path(str(FIXTURE / "build.py"))
    results = build["write_experiment"](tmp_path)
    env = {
        **os.environ,
        "ARMLAB_CONFIG": str(FIXTURE / "experiment.yaml"),
        "ARMLAB_SCORES": str(results / "scores.parquet"),
        "ARMLAB_RUNS": str(results / "runs"),
        "ARMLAB_DATAFLEX_CSV": str(build["write_wide_csv"](tmp_path / "wide.csv")),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbmake",
            "--nbmake-timeout=120",
            "-q",
            "-p",
            "no:cacheprovider",
            *map(str, NOTEBOOKS),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    assert "3 passed" in proc.stdout


@pytest.mark.notebook
def test_notebook_02_says_how_to_get_the_table_when_it_is_missing(tmp_path, monkeypatch):
    """A user who cloned the repository has no DataFlex-RL table: the notebook runs and says where to get it."""
    import nbformat
    from nbclient import NotebookClient

    missing = tmp_path / "absent.csv"
    monkeypatch.setenv("ARMLAB_DATAFLEX_CSV", str(missing))  # the kernel inherits the environment
    notebook = nbformat.read(REPO / "notebooks" / "02_reanalysis_dataflex_rl.ipynb", as_version=4)
    NotebookClient(notebook, timeout=120, resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()
    shown = "\n".join(
        str(output.get("data", {}).get("text/markdown", ""))
        for cell in notebook.cells
        for output in cell.get("outputs", [])
    )
    assert f"DataFlex-RL's table is not at `{missing}`" in shown
    assert "results/all_runs_171.csv" in shown and "ARMLAB_DATAFLEX_CSV" in shown and "synthetic" in shown
