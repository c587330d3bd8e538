"""One namespace: armlab installs only ``armlab`` (its stages as ``armlab.analysis``, ``armlab.training``,
``armlab.evals``, its command line as ``armlab.cli``), so a researcher's own ``analysis``, ``training`` or ``evals``
package and armlab import side by side."""

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest
from conftest import REPO, report_build

USER_PACKAGES = ("analysis", "training", "evals")
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "armlab", "analysis", "evals", "training")


@pytest.fixture
def user_project(tmp_path):
    """A researcher's project folder with packages named like armlab's stages, each saying whose it is."""
    project = tmp_path / "project"
    for name in USER_PACKAGES:
        (project / name).mkdir(parents=True)
        (project / name / "__init__.py").write_text("WHOSE = 'the user'\n")
    return project


def test_armlab_analyze_runs_from_a_project_with_its_own_analysis_training_and_evals(user_project):
    """Run from the user's folder (first on sys.path), `python -m armlab analyze` used to import the user's
    ``analysis`` package in place of its own and stop with ModuleNotFoundError."""
    build = report_build()
    results = build["write_experiment"](user_project / "work")
    out = user_project / "out"
    run = subprocess.run(
        [sys.executable, "-m", "armlab", "analyze", str(build["CONFIG"]), "--scores", str(results / "scores.parquet")]
        + ["--out", str(out)],
        cwd=user_project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert (out / "comparisons.csv").exists()
    code = (
        "import analysis, training, evals\n"
        "from armlab.analysis import pipeline\n"
        "print(analysis.WHOSE, training.WHOSE, evals.WHOSE, pipeline.__name__)\n"
    )
    both = subprocess.run([sys.executable, "-c", code], cwd=user_project, capture_output=True, text=True, timeout=120)
    assert both.stdout.split() == ["the", "user"] * 3 + ["armlab.analysis.pipeline"], both.stderr[-2000:]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """armlab built as a wheel (what `pip install armlab` installs), from a copy of its sources."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    for name in BUILD_INPUTS:
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy
        copy(
            REPO / name,
            source / name,
            **({"ignore": shutil.ignore_patterns("__pycache__")} if copy is shutil.copytree else {}),
        )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out), "."],
        cwd=source,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return next(out.glob("armlab-*.whl"))


def test_the_wheel_installs_only_the_armlab_package(wheel):
    with zipfile.ZipFile(wheel) as archive:
        top = {name.split("/")[0] for name in archive.namelist()}
        stages = {name.split("/")[1] for name in archive.namelist() if name.startswith("armlab/")}
    assert {name for name in top if not name.endswith(".dist-info")} == {"armlab"}
    assert {"analysis", "training", "evals", "experiment", "layout.py", "cli", "__main__.py"} <= stages
    assert "backends" in {name.split("/")[2] for name in archive.namelist() if name.startswith("armlab/training/")}
    with zipfile.ZipFile(wheel) as archive:
        licence = [name for name in archive.namelist() if name.endswith(".dist-info/licenses/LICENSE")]
        assert len(licence) == 1 and archive.read(licence[0]).startswith(b"MIT License")
        assert "License-Expression: MIT" in archive.read(licence[0].replace("licenses/LICENSE", "METADATA")).decode()


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """``(site, env)``: the wheel unpacked as a site-packages folder, and the environment in which ``python -S``
    (no site: no .pth, so not this checkout's editable install) finds it, then the environment's libraries."""
    site = tmp_path_factory.mktemp("installed") / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    libraries = sysconfig.get_paths()["purelib"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{site}{os.pathsep}{libraries}", "HF_HUB_OFFLINE": "1"}
    return site, env


def test_the_installed_wheel_imports_beside_a_users_own_packages(installed, user_project):
    site, env = installed
    code = (
        "import analysis, training, evals\n"
        "import armlab.analysis.pipeline, armlab.training.checks, armlab.evals.merge, armlab.cli\n"
        "print(analysis.WHOSE == 'the user', armlab.analysis.pipeline.__file__)\n"
    )
    run = subprocess.run([sys.executable, "-S", "-c", code], cwd=user_project, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    user, pipeline = run.stdout.split()
    assert user == "True" and pipeline.startswith(str(site / "armlab" / "analysis")), run.stdout


def test_a_checkout_imports_its_own_stages_over_an_installed_wheel(installed):
    """Run from the checkout (as Snakemake and its jobs are), the checkout's armlab/ comes first on sys.path and
    shadows an installed (not editable) armlab; its stages, in folders beside it, must import all the same."""
    _, env = installed
    code = (
        "import armlab.analysis.pipeline, armlab.training.checks, armlab.cli; print(armlab.analysis.pipeline.__file__)"
    )
    run = subprocess.run([sys.executable, "-S", "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == str(REPO / "analysis" / "pipeline.py")
