"""What armlab installs: ranges in pyproject.toml (a light base, extras for the rest), exact pins in
environment.yml and the lock file, and a base install that analyses and reports without the heavy extras."""

import re
import subprocess
import sys
import tomllib

import yaml
from conftest import REPO, report_build
from packaging.requirements import Requirement

from armlab import cli

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
BASE = {"numpy", "pandas", "fastparquet", "scipy", "matplotlib", "pyyaml", "jsonschema"}
# import names of what the base install leaves out (torch and pyarrow, the workflow, evaluation, TRL, the development
# tools)
HEAVY = (
    "torch",
    "pyarrow",
    "snakemake",
    "lm_eval",
    "datasets",
    "trl",
    "transformers",
    "accelerate",
    "selenium",
    "pytest",
    "ruff",
    "statsmodels",
)


def _pins(lines):
    return {
        name.lower().replace("_", "-"): version
        for name, version in (
            re.fullmatch(r"([A-Za-z0-9_.\-]+)==(\S+)", line.strip()).groups() for line in lines if "==" in line
        )
    }


def _requirements():
    """Every dependency pyproject.toml names, base and extras (not armlab's own extras), as Requirements."""
    lines = PROJECT["dependencies"] + [d for deps in PROJECT["optional-dependencies"].values() for d in deps]
    return [r for r in map(Requirement, lines) if r.name != "armlab"]


def test_the_base_install_is_the_analysis_libraries_only():
    assert {Requirement(d).name for d in PROJECT["dependencies"]} == BASE
    assert set(PROJECT["optional-dependencies"]) == {"workflow", "train", "eval", "trl", "dev", "reasoning_gym", "all"}
    assert set(PROJECT["optional-dependencies"]["all"]) == {"armlab[workflow,eval,trl,dev,reasoning_gym]"}


def test_environment_yml_and_the_lock_pin_every_dependency_inside_its_range():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    conda_pins = _pins(next(dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict)))
    lock = _pins((REPO / "requirements.txt").read_text().splitlines())
    named = {r.name.lower(): r for r in _requirements()}
    assert set(conda_pins) == set(named)
    for name, requirement in named.items():
        assert conda_pins[name] == lock.get(name), name
        assert requirement.specifier.contains(conda_pins[name]), (name, str(requirement.specifier), conda_pins[name])
    assert conda_pins["torch"] == "2.13.0"  # the CPU wheel on this machine; any other spec pulls a CUDA build


def _without_extras(folder):
    """An environment whose Python cannot import any extra's module: a ``sitecustomize`` in ``folder`` that
    refuses them (the base install, without building one)."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        "import sys\n"
        f"HEAVY = {set(HEAVY)!r}\n"
        "class Blocker:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in HEAVY:\n"
        "            raise ModuleNotFoundError(f'{name} is not in the base install', name=name)\n"
        "sys.meta_path.insert(0, Blocker())\n"
    )
    return {"PYTHONPATH": str(folder), "PATH": "/usr/bin:/bin", "MPLBACKEND": "agg"}


def test_the_base_environment_cannot_import_any_extra(tmp_path):
    """The test below would pass vacuously if the blocker let a module through."""
    code = (
        f"import importlib.util\nfor name in {HEAVY!r}:\n    print(name, importlib.util.find_spec(name) is not None)\n"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert found.split() == [word for name in HEAVY for word in (name, "True")]  # all there in the full environment
    base = subprocess.run([sys.executable, "-c", code], env=_without_extras(tmp_path / "base"), capture_output=True)
    assert base.returncode != 0 and b"is not in the base install" in base.stderr


def test_analyze_report_and_plan_run_without_any_extra(tmp_path):
    """The base install's commands and Python API (one process), with every extra's modules made unimportable."""
    build = report_build()
    results = build["write_experiment"](tmp_path / "work")
    config, scores = str(build["CONFIG"]), str(results / "scores.parquet")
    code = (
        "import sys, pandas as pd\n"
        "from armlab import cli\n"
        "from armlab.analysis.config import load_config\n"
        "from armlab.analysis.pipeline import run_analysis\n"
        f"assert cli.main(['analyze', {config!r}, '--scores', {scores!r}, '--out', 'analysis']) == 0\n"
        f"assert cli.main(['report', {config!r}, '--analysis', 'analysis', '--runs', {str(results / 'runs')!r},"
        " '--out', 'report']) == 0\n"
        f"assert cli.main(['plan', {config!r}]) == 0\n"
        f"result = run_analysis(load_config({config!r}), pd.read_parquet({scores!r}))\n"
        f"print('compared', len(result.comparisons), sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=_without_extras(tmp_path / "base"),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "smallest Holm p" in run.stdout
    assert re.search(r"^compared [1-9]\d* \[\]$", run.stdout, re.M), run.stdout[-2000:]
    # the same outputs as the full environment's, where pandas reads the parquet scores through pyarrow
    full = tmp_path / "full"
    assert cli.main(["analyze", config, "--scores", scores, "--out", str(full / "analysis")]) == 0
    assert (
        cli.main(
            ["report", config, "--analysis", str(full / "analysis"), "--runs", str(results / "runs")]
            + ["--out", str(full / "report")]
        )
        == 0
    )
    tables = sorted(p.name for p in (full / "analysis").glob("*.csv"))
    assert "comparisons.csv" in tables and tables == sorted(p.name for p in (tmp_path / "analysis").glob("*.csv"))
    for name in tables:
        assert (tmp_path / "analysis" / name).read_bytes() == (full / "analysis" / name).read_bytes(), name
    assert (tmp_path / "report" / "index.html").read_text() == (full / "report" / "index.html").read_text()
