"""The hostile-input harness shared by tests/workflows/test_hostile_outputs.py and
tests/analysis/inputs/test_hostile_results_files.py.

A refused case must (1) exit with status 2 and one error line naming the path or key, without a traceback,
(2) fail before any expensive work (the step that would do it is replaced by a tripwire), and (3) leave the
temporary folder, which holds everything the case can reach, byte for byte as it was (:func:`assert_refused`).
The fixtures are a pristine experiment (scores, runs, an analysis, a report) and the tiny experiment's data and
base policy, each built once per module and copied per test.
"""

import copy
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import REPORT_FIXTURE, TINY, report_build

FIXTURE = REPORT_FIXTURE
EXPERIMENT = "demo_synthetic"  # tests/fixtures/report/experiment.yaml
FAST = ["--set", "analysis.resamples=200", "--set", "analysis.per_benchmark=false"]


# ----------------------------------------------------------------------------- the harness


def tree(root: Path) -> dict:
    """Every path below ``root``: sha256 of a file, the target of a link, "dir", or "fifo" (never opened: that would
    wait for a writer)."""
    found = {}
    for path in sorted(root.rglob("*")):
        key = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[key] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            found[key] = "dir"
        elif path.is_fifo():
            found[key] = "fifo"
        else:
            found[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def tripwire(monkeypatch, *targets):
    """Make each ``module.attribute`` fail the test if it is called: the work it does must not start."""
    for target in targets:
        module, attribute = target.rsplit(".", 1)

        def fail(*args, _target=target, **kwargs):
            raise AssertionError(f"{_target} ran: expensive work started before the error")

        monkeypatch.setattr(f"{module}.{attribute}", fail)


EXPENSIVE = {
    "armlab": (
        "armlab.analysis.comparisons.paired.compare",
        "armlab.analysis.reporting.report.render_figures",
        "armlab.experiment.probe.probe",
    ),
    "armlab.evals.run": ("armlab.evals.run.load_model", "armlab.evals.run.evaluate"),
    "armlab.evals.merge": ("armlab.evals.merge.atomic_path",),
    "armlab.training.train": ("armlab.training.train.load_model", "armlab.training.train.arm_pools"),
}


def run_entry(entry, argv):
    """Run a command line in-process; its exit status."""
    from armlab import cli

    if entry == "armlab":
        return cli.main(argv)
    module = __import__(entry, fromlist=["main"])
    try:
        module.main(argv)
    except SystemExit as exit_:
        return exit_.code
    return 0


def assert_refused(root, monkeypatch, capsys, entry, argv, *expected, one_line=True, cwd=None):
    """Run ``entry argv`` from ``cwd`` (default ``root``); it must fail cleanly, early, naming ``expected``, touching
    nothing below ``root``.

    The error is one line, or with ``one_line=False`` one line followed by the offending rows (indented).
    """
    monkeypatch.chdir(cwd or root)
    monkeypatch.setenv("HOME", str(root / "home"))
    tripwire(monkeypatch, *EXPENSIVE[entry])
    capsys.readouterr()
    before = tree(root)
    status = run_entry(entry, [str(a) for a in argv])
    err = capsys.readouterr().err
    assert status == 2, err
    lines = err.splitlines()
    assert "Traceback" not in err and err.endswith("\n"), err
    assert len(lines) == 1 if one_line else len(lines) > 1 and all(line.startswith("  ") for line in lines[1:]), err
    assert lines[0].startswith(f"{entry if entry != 'armlab' else 'armlab ' + str(argv[0])}: error: "), err
    for text in expected:
        assert str(text) in err, (text, err)
    assert tree(root) == before
    return err


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """An experiment as the pipeline leaves it: scores, runs with manifests, an analysis, a report, a home."""
    from armlab import cli

    root = tmp_path_factory.mktemp("pristine")
    results = report_build()["write_experiment"](root)
    config = FIXTURE / "experiment.yaml"
    assert (
        cli.main(
            [
                "analyze",
                str(config),
                "--scores",
                str(results / "scores.parquet"),
                "--out",
                str(results / "analysis"),
                *FAST,
            ]
        )
        == 0
    )
    assert (
        cli.main(
            [
                "report",
                str(config),
                "--analysis",
                str(results / "analysis"),
                "--runs",
                str(results / "runs"),
                "--out",
                str(results / "report"),
            ]
        )
        == 0
    )
    (root / "home").mkdir()
    (root / "home" / ".bashrc").write_text("# the user's\n")
    return root


@pytest.fixture
def work(pristine, tmp_path):
    """A private copy of the pristine experiment; returns (root, results dir)."""
    root = tmp_path / "root"
    shutil.copytree(pristine, root, symlinks=True)
    return root, root / "results" / EXPERIMENT


def analyze(results, out, *extra):
    """``armlab analyze`` of the experiment's scores into ``out``, as command-line words."""
    return [
        str(word)
        for word in [
            "analyze",
            FIXTURE / "experiment.yaml",
            "--scores",
            results / "scores.parquet",
            "--out",
            out,
            *FAST,
            *extra,
        ]
    ]


def report(results, out, *extra):
    """``armlab report`` of the experiment's analysis and runs into ``out``, as command-line words."""
    return [
        str(word)
        for word in [
            "report",
            FIXTURE / "experiment.yaml",
            "--analysis",
            results / "analysis",
            "--runs",
            results / "runs",
            "--out",
            out,
            *extra,
        ]
    ]


def eval_argv(results, *which):
    """``python -m armlab.evals.run`` of grpo seed 1 of the tiny experiment (:func:`tiny`), as words; ``which``
    names the model (``--checkpoint`` or ``--run-manifest`` and its path)."""
    return [
        "--config",
        results.parent.parent / "config.json",
        "--tasks",
        results / "lm_eval_tasks",
        *which,
        "--arm",
        "grpo",
        "--seed",
        "1",
        "--out",
        results / "evals" / "grpo" / "seed-1",
    ]


@pytest.fixture(scope="module")
def tiny_pipeline(tmp_path_factory):
    """The tiny experiment's data and a (2-step) base policy with its manifest, and its config as JSON."""
    from armlab.experiment.validate import load_config
    from armlab.training import base, data

    root = tmp_path_factory.mktemp("tiny")
    config = copy.deepcopy(load_config([TINY]))
    config["base"]["steps"] = 2
    data.write(config, root / "results" / "tiny" / "data")
    base.train_base(config, root / "results" / "tiny" / "data", root / "results" / "tiny" / "base")
    (root / "config.json").write_text(json.dumps(config))
    return root


@pytest.fixture
def tiny(tiny_pipeline, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(tiny_pipeline, root)
    return root, root / "results" / "tiny"
