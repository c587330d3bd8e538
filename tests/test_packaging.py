"""What armlab installs: ranges in pyproject.toml (a light base, extras for the rest), exact pins in
environment.yml and the lock file, and a base install that analyses and reports without the heavy extras."""

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib

import pandas as pd
import pytest
import yaml
from conftest import HEAVY, REPO, TINY, report_build, without_extras
from packaging.requirements import Requirement

from armlab import cli

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
BASE = {"numpy", "pandas", "fastparquet", "scipy", "matplotlib", "pyyaml", "jsonschema"}


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


def test_the_base_environment_cannot_import_any_extra(tmp_path):
    """The test below would pass vacuously if the blocker let a module through."""
    code = (
        f"import importlib.util\nfor name in {HEAVY!r}:\n    print(name, importlib.util.find_spec(name) is not None)\n"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert found.split() == [word for name in HEAVY for word in (name, "True")]  # all there in the full environment
    env = without_extras(tmp_path / "base")
    base = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert base.split() == [word for name in HEAVY for word in (name, "False")]  # as a package never installed
    imported = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert imported.returncode == 1 and "ModuleNotFoundError: No module named 'torch'" in imported.stderr


# run by one process of the base install, in this order: (name, argv); every subcommand at least once
RUNS_IN_THE_BASE_INSTALL = (
    ("analyze", ["analyze", "{config}", "--scores", "{scores}", "--out", "analysis"]),
    ("report", ["report", "{config}", "--analysis", "analysis", "--runs", "{runs}", "--out", "report"]),
    ("plan", ["plan", "{config}"]),
    ("summary", ["summary", "analysis"]),
    ("curves", ["curves", "--table", "checkpoints.csv", "--scores", "{scores}", "--config", "{config}", "--out", "c"]),
    ("steps", ["steps", "jsonl", "--pattern", "logs/{{arm}}/seed-{{seed}}.jsonl", "--experiment", "x", "--out", "s"]),
    ("benchmarks", ["benchmarks"]),
    ("benchmarks gsm8k", ["benchmarks", "gsm8k"]),
    ("benchmarks math500 --path", ["benchmarks", "math500", "--path", "{math500}"]),
    ("arms", ["arms"]),
    ("probe", ["probe", "{tiny}", "--out", "probe.json"]),
    ("rescore", ["rescore", "{results}", "--verifier", "math_verify"]),
)
# what the base install lacks for them: the extra each one's single line names
NEEDS = {"benchmarks math500 --path": "eval", "arms": "train", "probe": "train", "rescore": "eval"}
BASE_INSTALL_SCRIPT = """
import contextlib, io, json, sys
import pandas as pd
from armlab import cli
from armlab.analysis.config import load_config
from armlab.analysis.pipeline import run_analysis

runs, config, scores, heavy = json.loads(sys.argv[1])
record = {}
for name, argv in runs:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exit:
            code = exit.code
    record[name] = [code, out.getvalue(), err.getvalue()]
result = run_analysis(load_config(config), pd.read_parquet(scores))
record["api"] = [len(result.comparisons), sorted(m for m in sys.modules if m.split(".")[0] in heavy)]
print(json.dumps(record))
"""


@pytest.fixture(scope="module")
def base_install(tmp_path_factory):
    """Every subcommand and the Python API run by one process whose Python finds no extra's module (the base
    install), from a folder holding the fixture experiment: the folder, the experiment's results and what each
    run returned, printed and wrote to stderr."""
    tmp_path = tmp_path_factory.mktemp("base_install")
    build = report_build()
    results = build["write_experiment"](tmp_path / "work")
    scores = pd.read_parquet(results / "scores.parquet")
    scores[scores.arm != "base"].assign(step=40).to_csv(tmp_path / "checkpoints.csv", index=False)
    for arm, seed in (("grpo", 1), ("dr_grpo", 1)):
        (tmp_path / "logs" / arm).mkdir(parents=True, exist_ok=True)
        (tmp_path / "logs" / arm / f"seed-{seed}.jsonl").write_text('{"step": 1, "reward": 0.5}\n')
    values = {
        "config": str(build["CONFIG"]),
        "scores": str(results / "scores.parquet"),
        "runs": str(results / "runs"),
        "math500": str(REPO / "config/experiments/local_benchmarks/math500_format_synthetic.jsonl"),
        "tiny": str(TINY),
        "results": str(results),
    }
    runs = [(name, [arg.format(**values) for arg in argv]) for name, argv in RUNS_IN_THE_BASE_INSTALL]
    arguments = json.dumps([runs, values["config"], values["scores"], HEAVY])
    run = subprocess.run(
        [sys.executable, "-c", BASE_INSTALL_SCRIPT, arguments],
        cwd=tmp_path,
        env=without_extras(tmp_path / "base"),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return tmp_path, results, json.loads(run.stdout)


def test_every_subcommand_works_or_names_the_extra_it_needs_in_the_base_install(base_install):
    """`pip install .` (no extras): each subcommand does its work, or exits 2 with one line naming the extra to
    install; `armlab arms` printed a 20-line traceback of torch's absence and "internal failure (a bug in armlab)"."""
    _, _, record = base_install
    subcommands = cli.build_parser()._subparsers._group_actions[0].choices
    assert {argv[0] for _, argv in RUNS_IN_THE_BASE_INSTALL} == set(subcommands)  # a new one needs its run here
    for name, _ in RUNS_IN_THE_BASE_INSTALL:
        code, out, err = record[name]
        if name in NEEDS:
            line = (
                f"armlab {name.split()[0]}: error: .*needs the \\S+ package.*: pip install 'armlab\\[{NEEDS[name]}\\]'"
            )
            assert code == 2 and re.fullmatch(line, err.strip()) and len(err.splitlines()) == 1, (name, err)
        else:
            assert code == 0 and err == "", (name, err[-2000:])
    assert "smallest Holm p" in record["plan"][1] and "Verdicts (analysis/comparisons.csv)" in record["summary"][1]
    assert "verifier 'math_verify' needs the math-verify package" in record["benchmarks math500 --path"][2]


def test_the_analysis_runs_without_any_extra_as_in_the_full_install(base_install):
    """The base install's analysis, report and Python API import no extra's module and write what the full
    environment writes, where pandas reads the parquet scores through pyarrow."""
    tmp_path, results, record = base_install
    compared, heavy_imported = record["api"]
    assert compared > 0 and heavy_imported == []
    config, scores = str(report_build()["CONFIG"]), str(results / "scores.parquet")
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


def test_make_setup_installs_armlab_editable_without_setuptools_boxed_notice(tmp_path):
    """`make setup` ended in setuptools' boxed notice that folders named like the package may take precedence at
    import (its editable install of mapped folders); the Makefile filters that one notice by its text (here the
    folder is armlab's own source), and the build of the editable wheel, as pip runs it, shows it no more."""
    makefile = (REPO / "Makefile").read_text()
    notice = re.search(r"^EDITABLE_NOTICE := (.+)$", makefile, re.M).group(1)
    install = next(line for line in makefile.splitlines() if "pip install" in line and " -e ." in line)
    assert install.strip().startswith('PYTHONWARNINGS="$(EDITABLE_NOTICE)" ')
    for name in ("pyproject.toml", "LICENSE"):
        (tmp_path / name).write_bytes((REPO / name).read_bytes())
    for package in ("armlab", "training", "evals", "analysis"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    build = "import setuptools.build_meta as backend; backend.build_editable('dist')"

    def shown(warnings: str | None) -> str:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
        env.update({"PYTHONWARNINGS": warnings} if warnings else {})
        run = subprocess.run([sys.executable, "-c", build], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
        return run.stderr

    assert "Please be careful with folders" in shown(None)  # what make setup printed
    quiet = shown(notice)
    assert "Please be careful with folders" not in quiet and "Invalid -W option" not in quiet
    assert any(p.suffix == ".whl" for p in (tmp_path / "dist").iterdir())
