"""The experiment that runs is the one configured: each stage view the workflow writes comes from that file alone.

Run from a copy of the repository root with the README's command, so that `config/config.yaml` sits where a
user's checkout has it (on e2d0814 the job processes merged it back into every other experiment).
"""

import json
import subprocess
from pathlib import Path

import fork_server
import pytest
from conftest import REPO, copy_of_the_repository

from armlab.configfile import load_mapping
from armlab.experiment.stages import stage_config
from armlab.experiment.validate import load_config

WORKFLOW_CONFIGS = sorted(
    str(path.relative_to(REPO))
    for path in [*REPO.glob("config/**/*.yaml"), *REPO.glob("tests/fixtures/*.yaml")]
    # workflow configs: not the shared testbed block, nor analysis-only ones that read results from elsewhere, nor
    # ones that evaluate checkpoints made by another experiment's run (their start reads those runs' folders:
    # tests/workflows/test_checkpoints_workflow.py runs the example after the run it reads)
    if "arms" in load_mapping(path)
    and "input" not in load_mapping(path)
    and load_mapping(path).get("backend") != "checkpoints"
)


def test_every_workflow_config_is_covered():
    assert {
        "config/config.yaml",
        "tests/fixtures/tiny.yaml",
        "config/experiments/verl_example.yaml",
        "config/experiments/dataflex_rl.yaml",
        "config/experiments/estimators.yaml",
    } <= set(WORKFLOW_CONFIGS)


@pytest.mark.workflow
@pytest.mark.parametrize("configfile", WORKFLOW_CONFIGS)
def test_stage_views_equal_the_file_alone(configfile, tmp_path):
    root = copy_of_the_repository(tmp_path / "checkout")
    expected = load_config([root / configfile])
    out = Path("results") / expected["experiment"] / "config"
    views = {f"{stage}.json": stage_config(expected, stage) for stage in ("data", "base", "eval", "analysis")}
    views.update({f"train/{arm}.json": stage_config(expected, "train", arm) for arm in expected["arms"]})
    # the README's command, from a warm snakemake process (tests/fork_server.py): the same run, without 17 imports
    proc = fork_server.run_snakemake(
        [*(str(out / name) for name in views), "--cores", "2", "--configfile", configfile, "--replace-workflow-config"],
        root,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name, view in views.items():
        assert json.loads((root / out / name).read_text()) == view, f"{configfile}: {name}"
    written = {str(p.relative_to(root / out)) for p in (root / out).rglob("*.json")}
    assert written == set(views)


@pytest.mark.workflow
def test_the_default_runs_when_no_configfile_is_given(snakemake_bin, tmp_path):
    root = copy_of_the_repository(tmp_path / "checkout")
    proc = subprocess.run(
        [snakemake_bin, "results/demo/config/data.json", "--profile", "profiles/default", "--cores", "1"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    view = json.loads((root / "results/demo/config/data.json").read_text())
    assert view == stage_config(load_config([REPO / "config" / "config.yaml"]), "data")
