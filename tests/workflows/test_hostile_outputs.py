"""Hostile outputs: --out that is not ours, corrupt checkpoints and results, and unsafe command templates.

Every refused case must (1) exit with status 2 and one error line naming the path or key, without a
traceback, (2) fail before any expensive work (the step that would do it is replaced by a tripwire),
and (3) leave the temporary folder, which holds everything the case can reach, byte for byte as it was.
The harness and its fixtures live in tests/hostile.py, shared with
tests/analysis/inputs/test_hostile_results_files.py.
"""

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import TINY, readme_run
from hostile import (
    analyze,
    assert_refused,
    eval_argv,
    report,
    tree,
)

from armlab import cli, files

# ----------------------------------------------------------------------------- item 5: --out is never someone else's


def _symlink_to_analysis(root, results):
    (root / "link").symlink_to(results / "analysis")
    return root / "link"


def _marker(results, text):
    (results / "analysis" / files.OUTPUT_MARKER).write_text(text)
    return results / "analysis"


def _user_file_in_analysis(results):
    (results / "analysis" / "my-notes.txt").write_text("mine")
    return results / "analysis"


def _file(root):
    (root / "notes.txt").write_text("mine")
    return root / "notes.txt"


OUT_CASES = {
    # name: (make the --out path from (root, results), the argv builder, expected in the error)
    "analyze into the experiment": (
        lambda root, results: results,
        analyze,
        ["not empty and not an earlier output of `armlab analyze`"],
    ),
    "analyze into home": (lambda root, results: root / "home", analyze, ["home: not empty", ".armlab-output.json"]),
    "analyze into the working directory": (lambda root, results: Path("."), analyze, [".: names a folder by '.'"]),
    "analyze onto a file": (lambda root, results: _file(root), analyze, ["notes.txt: exists and is not a directory"]),
    "analyze below a file": (
        lambda root, results: _file(root) / "out",
        analyze,
        ["cannot be created", "notes.txt is a file"],
    ),
    "analyze into a symlink": (_symlink_to_analysis, analyze, ["link: is a symbolic link"]),
    "analyze into the report": (lambda root, results: results / "report", analyze, ["says `armlab report`"]),
    "analyze over a marker that is not JSON": (
        lambda root, results: _marker(results, "{trunc"),
        analyze,
        [".armlab-output.json: file is not valid JSON"],
    ),
    "analyze over a forged marker": (
        lambda root, results: _marker(results, '{"command": "analyze"}'),
        analyze,
        ["is not armlab's output marker"],
    ),
    "analyze over a user's file in an earlier output": (
        lambda root, results: _user_file_in_analysis(results),
        analyze,
        ["holds ['my-notes.txt']"],
    ),
    "report into the analysis": (lambda root, results: results / "analysis", report, ["says `armlab analyze`"]),
    "report into the experiment": (lambda root, results: results, report, ["not an earlier output of `armlab report`"]),
}


@pytest.mark.parametrize("case", OUT_CASES)
def test_an_out_that_is_not_an_earlier_output_is_refused(case, work, monkeypatch, capsys):
    root, results = work
    make, argv, expected = OUT_CASES[case]
    out = make(root, results)
    assert_refused(root, monkeypatch, capsys, "armlab", argv(results, out), *expected)


@pytest.mark.parametrize(
    "figures, expected",
    [
        (
            lambda root, results: results / "runs",
            ["runs: not empty and not an earlier output of `armlab report --figures`"],
        ),
        (lambda root, results: root / "out", ["expected separate directories"]),
        (lambda root, results: root / "out" / "figures", ["expected separate directories"]),
    ],
)
def test_a_figures_directory_that_is_not_ours_is_refused(figures, expected, work, monkeypatch, capsys):
    root, results = work
    assert_refused(
        root,
        monkeypatch,
        capsys,
        "armlab",
        report(results, root / "out", "--figures", figures(root, results)),
        *expected,
    )


def test_an_earlier_output_is_replaced_whole_and_never_missing(work, monkeypatch):
    root, results = work
    out = results / "analysis"
    old_inode = out.stat().st_ino
    seen = []
    real_exchange = files.exchange

    def watched_exchange(first, second):
        swapped = real_exchange(first, second)
        seen.append((swapped, out.is_dir(), (out / "comparisons.csv").exists()))
        return swapped

    monkeypatch.setattr(files, "exchange", watched_exchange)
    (out / "accuracy.csv").unlink()  # as Snakemake deletes a job's declared outputs before it runs
    assert cli.main(analyze(results, out, "--set", "analysis.alpha=0.1")) == 0
    assert seen == [(True, True, True)]  # one atomic exchange; --out was there before and after it
    assert out.stat().st_ino != old_inode and (out / "accuracy.csv").exists()
    assert json.loads((out / "manifest.json").read_text())["settings"]["alpha"] == 0.1
    assert [p.name for p in results.iterdir() if p.name.startswith(".")] == []  # no temporary left behind


def test_without_rename_exchange_the_replacement_still_completes(work, monkeypatch):
    root, results = work
    monkeypatch.setattr(files, "exchange", lambda first, second: False)  # another OS, or a filesystem without it
    assert cli.main(report(results, results / "report")) == 0
    assert "armlab report" in (results / "report" / "index.html").read_text()
    assert sorted(p.name for p in (results / "report").iterdir()) == [files.OUTPUT_MARKER, "index.html"]


DOT_OUT_COMMANDS = {
    "analyze": lambda results: analyze(results, "."),
    "report": lambda results: report(results, "."),
    "curves": lambda results: ["curves", "--curves", results / "runs", "--out", "."],
    "probe": lambda results: ["probe", TINY, "--out", "."],
}


@pytest.mark.parametrize("command", DOT_OUT_COMMANDS)
def test_out_dot_in_an_empty_working_folder_is_refused(command, work, monkeypatch, capsys):
    """On b67b5b0 an empty folder passed the check and the work ran, then replacing '.' failed with a traceback."""
    root, results = work
    (root / "empty").mkdir()
    argv = DOT_OUT_COMMANDS[command](results)
    assert_refused(root, monkeypatch, capsys, "armlab", argv, ".: names a folder by '.'", cwd=root / "empty")


def test_probe_onto_a_directory_is_refused_before_timing(work, monkeypatch, capsys):
    """On b67b5b0 the probe timed every arm, then swapped its file in for the directory and deleted the directory."""
    root, results = work
    argv = ["probe", TINY, "--out", results / "runs"]
    assert_refused(root, monkeypatch, capsys, "armlab", argv, "runs: is a directory; expected the name of a file")


def _failing_temporaries(monkeypatch, folder, code):
    """Make creating a directory in ``folder`` fail with errno ``code``, as a read-only, forbidden or full folder
    does (the tests run as root, whom permissions do not stop)."""
    make = tempfile.mkdtemp

    def mkdtemp(*args, dir=None, **kwargs):
        if Path(dir) == folder:
            raise OSError(code, os.strerror(code))
        return make(*args, dir=dir, **kwargs)

    monkeypatch.setattr(files.tempfile, "mkdtemp", mkdtemp)


UNWRITABLE = {"read-only": errno.EROFS, "forbidden": errno.EACCES, "full": errno.ENOSPC}


@pytest.mark.parametrize("command", [analyze, report], ids=["analyze", "report"])
@pytest.mark.parametrize("case", UNWRITABLE)
def test_an_out_in_a_folder_that_cannot_be_written_is_refused_before_the_work(case, command, work, monkeypatch, capsys):
    root, results = work
    folder = root / "shared"
    folder.mkdir()
    _failing_temporaries(monkeypatch, folder, UNWRITABLE[case])
    argv = command(results, folder / "out")
    assert_refused(root, monkeypatch, capsys, "armlab", argv, "out: cannot write there", os.strerror(UNWRITABLE[case]))


def test_an_out_whose_temporary_name_is_too_long_is_refused_before_the_work(work, monkeypatch, capsys):
    """A name the file system takes, whose temporary (29 characters longer) it does not."""
    root, results = work
    out = root / ("o" * (os.pathconf(root, "PC_NAME_MAX") - 10))
    assert_refused(root, monkeypatch, capsys, "armlab", analyze(results, out), "cannot write there (File name too long")


def _another_writer(monkeypatch, out):
    """A live process whose temporary of ``out`` is there, as a concurrent ``armlab analyze --out`` leaves it."""
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    (out.parent / f".{out.name}.armlab-tmp-{writer.pid}-abcdefgh").mkdir()
    return writer, f"process {writer.pid} is writing it now"


def _mount_point(monkeypatch, out):
    ismount = os.path.ismount
    monkeypatch.setattr(files.os.path, "ismount", lambda path: Path(path) == out or ismount(path))
    return None, "is a mount point, which cannot be replaced"


@pytest.mark.parametrize("busy", [_another_writer, _mount_point], ids=["another-writer", "mount-point"])
def test_a_busy_out_is_refused_before_the_work(busy, work, monkeypatch, capsys):
    root, results = work
    out = root / "busy"
    out.mkdir()
    writer, expected = busy(monkeypatch, out)
    try:
        assert_refused(root, monkeypatch, capsys, "armlab", analyze(results, out), expected)
    finally:
        if writer is not None:
            writer.kill()
            writer.wait()


WRITE_FAULTS = {
    "disk full while writing": ("write_csv", errno.ENOSPC),
    "busy when swapped in": ("exchange", errno.EBUSY),
}


@pytest.mark.parametrize("case", WRITE_FAULTS)
def test_a_fault_while_writing_is_one_line_and_keeps_the_earlier_output(case, work, monkeypatch, capsys):
    """The fault comes after the work, which cannot be checked for in advance; the old output stays whole."""
    root, results = work
    function, code = WRITE_FAULTS[case]

    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(files, function, fail)
    monkeypatch.chdir(root)
    before = tree(root)
    out = results / "analysis"
    assert cli.main(analyze(results, out)) == 2
    assert capsys.readouterr().err == (
        f"armlab analyze: error: {out}: could not write the output ({os.strerror(code)}); "
        f"the old one, if any, is kept\n"
    )
    assert tree(root) == before


def test_temporaries_of_killed_jobs_are_removed_by_the_next_run_and_nothing_else(work):
    root, results = work
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    killed = results / f".analysis.armlab-tmp-{dead.stdout.strip()}-abcd_123"
    (killed / "analysis").mkdir(parents=True)
    (killed / "analysis" / "comparisons.csv").write_text("half written")
    running = results / f".analysis.armlab-tmp-{os.getpid()}-zzzzzzzz"  # a concurrent write on this machine
    running.mkdir()
    users = [results / ".analysis.backup", results / ".analysis.armlab-tmp-notes"]
    for path in users:
        path.mkdir()
    assert cli.main(analyze(results, results / "analysis")) == 0
    assert not killed.exists()
    assert running.exists() and all(path.exists() for path in users)


# ----------------------------------------------------------------------------- item 6: corruption is detected


def _truncate(path, keep=0.5):
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


def _rewrite_manifest(path, change):
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


CORRUPT_REPORT_CASES = {
    "analysis table changed": (
        lambda r: (r / "analysis" / "comparisons.csv").write_text("family\nx\n"),
        ["analysis/comparisons.csv: sha256", "does not match", "analysis/manifest.json"],
    ),
    "analysis manifest truncated": (
        lambda r: _truncate(r / "analysis" / "manifest.json"),
        ["analysis/manifest.json: manifest is not valid JSON"],
    ),
    "analysis manifest without checksums": (
        lambda r: _rewrite_manifest(r / "analysis" / "manifest.json", lambda m: m.pop("files")),
        ["analysis/manifest.json: no 'files' with the sha256"],
    ),
    "step log truncated": (
        lambda r: _truncate(r / "runs" / "grpo" / "seed-2" / "steps.parquet"),
        ["runs/grpo/seed-2/steps.parquet: sha256"],
    ),
    "step log missing from its manifest": (
        lambda r: _rewrite_manifest(
            r / "runs" / "rloo" / "seed-1" / "manifest.json", lambda m: m.update(files={"other.pt": "0" * 64})
        ),
        ["runs/rloo/seed-1/steps.parquet: not recorded in"],
    ),
    "run manifest truncated": (
        lambda r: _truncate(r / "runs" / "rloo" / "seed-3" / "manifest.json"),
        ["runs/rloo/seed-3/manifest.json: manifest is not valid JSON"],
    ),
    "run manifest gone": (
        lambda r: (r / "runs" / "dr_grpo" / "seed-1" / "manifest.json").unlink(),
        ["runs/dr_grpo/seed-1/manifest.json: manifest not found"],
    ),
    "run manifest pointing outside its run": (
        lambda r: _rewrite_manifest(
            r / "runs" / "grpo" / "seed-1" / "manifest.json",
            lambda m: m["files"].update({"../../../../home/.bashrc": "0" * 64}),
        ),
        ["'../../../../home/.bashrc' is not a path inside"],
    ),
    "run manifest with a non-digest": (
        lambda r: _rewrite_manifest(
            r / "runs" / "grpo" / "seed-1" / "manifest.json", lambda m: m["files"].update({"steps.parquet": "abc"})
        ),
        ["files.steps.parquet: expected a sha256 hex digest, got 'abc'"],
    ),
}


@pytest.mark.parametrize("case", CORRUPT_REPORT_CASES)
def test_the_report_names_a_corrupt_input(case, work, monkeypatch, capsys):
    root, results = work
    corrupt, expected = CORRUPT_REPORT_CASES[case]
    corrupt(results)
    assert_refused(root, monkeypatch, capsys, "armlab", report(results, root / "new-report"), *expected)


def _fake_run(out, checkpoint_files, **manifest):
    """A run directory as the command backend leaves it: trainer/<checkpoint> and a manifest with checksums."""
    for name, text in checkpoint_files.items():
        (out / "trainer" / "model" / name).parent.mkdir(parents=True, exist_ok=True)
        (out / "trainer" / "model" / name).write_text(text)
    files.write_manifest(out, {"checkpoint": str((out / "trainer" / "model").resolve()), **manifest}, "trainer/model")
    return out / "manifest.json"


def _train_argv(results, base_policy):
    return [
        "--config",
        results.parent.parent / "config.json",
        "--arm",
        "grpo",
        "--seed",
        "1",
        "--data",
        results / "data",
        "--base",
        base_policy,
        "--out",
        results / "runs" / "grpo" / "seed-1",
    ]


def _run_manifest_outside(results):
    manifest = _fake_run(results / "runs" / "grpo" / "seed-1", {"config.json": "{}"})
    _rewrite_manifest(manifest, lambda m: m.update(checkpoint=str(results / "base")))
    return manifest


def _run_manifest_truncated_weights(results):
    manifest = _fake_run(results / "runs" / "grpo" / "seed-1", {"model.safetensors": "w" * 1000})
    _truncate(results / "runs" / "grpo" / "seed-1" / "trainer" / "model" / "model.safetensors")
    return manifest


def _two_scores(results, corrupt):
    """Two evaluations' scores.parquet with manifests (as evals/run.py writes them); ``corrupt`` spoils the second."""
    paths = []
    for arm in ("grpo", "difffilter"):
        out = results / "evals" / arm / "seed-1"
        out.mkdir(parents=True)
        frame = pd.DataFrame(
            {
                "experiment": ["tiny"],
                "arm": [arm],
                "seed": [1],
                "benchmark": ["add"],
                "domain": ["math"],
                "item": ["add-1"],
                "score": [1.0],
                "n_samples": [1],
                "n_correct": [1.0],
            }
        )
        frame.to_parquet(out / "scores.parquet", index=False)
        files.write_manifest(out, {"arm": arm}, "scores.parquet")
        paths.append(out / "scores.parquet")
    corrupt(paths[1])
    return ["--out", results / "scores.parquet", *paths]


def _not_parquet_but_recorded(path):
    path.write_text("arm,score\ngrpo,1\n")
    files.write_manifest(path.parent, {}, path.name)


CORRUPT_JOB_CASES = {
    "evaluation of a truncated policy.pt": (
        "armlab.evals.run",
        lambda r: eval_argv(r, "--checkpoint", _truncate(r / "base" / "policy.pt")),
        ["base/policy.pt: sha256", "does not match", "base/manifest.json"],
    ),
    "evaluation of a policy.pt without manifest": (
        "armlab.evals.run",
        lambda r: eval_argv(r, "--checkpoint", (r / "base" / "manifest.json").unlink() or r / "base" / "policy.pt"),
        ["base/policy.pt: no manifest.json next to it"],
    ),
    "evaluation of a run whose checkpoint lies outside it": (
        "armlab.evals.run",
        lambda r: eval_argv(r, "--run-manifest", _run_manifest_outside(r)),
        ["runs/grpo/seed-1/manifest.json: checkpoint: expected the path of a checkpoint inside"],
    ),
    "evaluation of a run with a truncated checkpoint file": (
        "armlab.evals.run",
        lambda r: eval_argv(r, "--run-manifest", _run_manifest_truncated_weights(r)),
        ["trainer/model/model.safetensors: sha256"],
    ),
    "training from a truncated base policy": (
        "armlab.training.train",
        lambda r: _train_argv(r, _truncate(r / "base" / "policy.pt", keep=0.9)),
        ["base/policy.pt: sha256", "base/manifest.json"],
    ),
    "merging a truncated scores.parquet": (
        "armlab.evals.merge",
        lambda r: _two_scores(r, _truncate),
        ["evals/difffilter/seed-1/scores.parquet: sha256"],
    ),
    "merging a scores.parquet that is not parquet": (
        "armlab.evals.merge",
        lambda r: _two_scores(r, _not_parquet_but_recorded),
        ["evals/difffilter/seed-1/scores.parquet: not a parquet file"],
    ),
}


@pytest.mark.parametrize("case", CORRUPT_JOB_CASES)
def test_jobs_name_a_corrupt_input_before_reading_it(case, tiny, monkeypatch, capsys):
    root, results = tiny
    entry, make_argv, expected = CORRUPT_JOB_CASES[case]
    assert_refused(root, monkeypatch, capsys, entry, make_argv(results), *expected)


@pytest.mark.workflow
def test_a_truncated_policy_is_removed_at_workflow_start_so_snakemake_rebuilds_it(tiny_run, tmp_path):
    """The base policy cut short after a finished run (the session's tiny run, copied): a dry run names it and what
    a run would remove, and changes nothing (on 5a28ea2 `snakemake -n` deleted it and the results built on it); the
    run removes it, and Snakemake rebuilds it byte for byte without touching the data."""
    reference, _ = tiny_run
    workdir = tmp_path / "checkout"
    shutil.copytree(reference, workdir, symlinks=True)
    base = Path("results") / "tiny" / "base" / "policy.pt"
    _truncate(workdir / base)
    data_before = tree(workdir / "results" / "tiny" / "data")
    results_before = tree(workdir / "results")

    def snakemake(*args):
        proc = readme_run(workdir, *args, str(base))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout + proc.stderr

    dry = snakemake("-n")
    assert f"armlab: {base}: sha256" in dry and "a run would remove the outputs of" in dry
    assert "armlab: dry run: nothing was removed" in dry
    assert tree(workdir / "results") == results_before
    snakemake()
    files.verify_file(workdir / base)
    assert (workdir / base).read_bytes() == (reference / base).read_bytes()
    assert tree(workdir / "results" / "tiny" / "data") == data_before


def test_a_corrupt_output_that_cannot_be_removed_is_one_line(tmp_path, monkeypatch):
    """A read-only experiment folder (here: unlink failing with EROFS, as the tests run as root) with a truncated
    output: on 5a28ea2 the workflow's start was a PermissionError traceback."""
    experiment = tmp_path / "results" / "demo"
    run = experiment / "runs" / "a" / "seed-1"
    run.mkdir(parents=True)
    (run / "policy.pt").write_bytes(b"weights" * 100)
    files.write_manifest(run, {}, "policy.pt")
    _truncate(run / "policy.pt")

    def read_only(self, *args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))

    before = tree(tmp_path)
    monkeypatch.setattr(Path, "unlink", read_only)
    with pytest.raises(files.BadFile, match=r"policy\.pt: fails its manifest and cannot be removed \(Read-only file"):
        files.remove_corrupt_outputs(experiment, log=lambda line: None)
    assert files.remove_corrupt_outputs(experiment, log=lambda line: None, dry_run=True) == [
        run / "policy.pt",
        run / "manifest.json",
    ]
    assert tree(tmp_path) == before


def test_invalidation_deletes_only_what_a_failing_manifest_records(tmp_path):
    experiment = tmp_path / "results" / "demo"
    good = experiment / "runs" / "a" / "seed-1"
    bad = experiment / "runs" / "b" / "seed-1"
    legacy = experiment / "runs" / "c" / "seed-1"
    outside = tmp_path / "precious.txt"
    outside.write_text("the user's")
    for run in (good, bad, legacy):
        run.mkdir(parents=True)
        (run / "policy.pt").write_bytes(b"weights" * 100)
        (run / "notes.txt").write_text("not recorded in the manifest")
    for run in (good, bad):
        files.write_manifest(run, {}, "policy.pt")
    (legacy / "manifest.json").write_text(json.dumps({"arm": "c"}))  # no checksums: cannot be judged
    _rewrite_manifest(bad / "manifest.json", lambda m: m["files"].update({"../../../../precious.txt": "0" * 64}))
    trainer = good / "trainer" / "manifest.json"  # a trainer's own file below a job's output
    trainer.parent.mkdir()
    trainer.write_text("{not json")
    before = tree(tmp_path)
    assert files.remove_corrupt_outputs(experiment, log=lambda line: None) == []  # the escaping path: left alone
    assert tree(tmp_path) == before
    files.write_manifest(bad, {}, "policy.pt")
    _truncate(bad / "policy.pt")
    (experiment / "analysis").mkdir()
    (experiment / "analysis" / "manifest.json").write_text('{"trunc')
    lines = []
    removed = files.remove_corrupt_outputs(experiment, log=lines.append)
    assert sorted(removed) == sorted(
        [bad / "policy.pt", bad / "manifest.json", experiment / "analysis" / "manifest.json"]
    )
    assert len(lines) == 2 and all(line.startswith("armlab: ") for line in lines)
    assert (bad / "notes.txt").exists() and outside.read_text() == "the user's" and trainer.exists()
    assert (good / "policy.pt").exists() and (legacy / "manifest.json").exists()


@pytest.mark.parametrize("where", ["outside", "inside"])
def test_a_run_folder_that_is_a_link_is_scanned_and_a_link_out_is_named(tmp_path, where):
    """On 5f41e59 a run folder symlinked elsewhere escaped the corruption scan: its truncated policy was kept."""
    experiment = tmp_path / "results" / "demo"
    target = tmp_path / "big_disk" / "seed-1" if where == "outside" else experiment / "kept" / "seed-1"
    target.mkdir(parents=True)
    (target / "policy.pt").write_bytes(b"weights" * 100)
    files.write_manifest(target, {}, "policy.pt")
    _truncate(target / "policy.pt")
    link = experiment / "runs" / "a" / "seed-1"
    link.parent.mkdir(parents=True)
    link.symlink_to(target, target_is_directory=True)
    (experiment / "runs" / "a" / "loop").symlink_to(experiment / "runs", target_is_directory=True)  # walked once
    lines = []
    removed = files.remove_corrupt_outputs(experiment, log=lines.append)
    assert {p.resolve() for p in removed} == {target / "policy.pt", target / "manifest.json"}
    assert len(removed) == 2
    named = [line for line in lines if "outside the experiment" in line]
    assert named == (
        [f"armlab: {link} is a link to {target}, outside the experiment; checking the outputs there"]
        if where == "outside"
        else []
    )


# ----------------------------------------------------------------------------- item 8: escaped everywhere


def _command_config(tmp_path, template):
    config = yaml.safe_load(TINY.read_text())
    config["backend"] = "command"
    config["command"] = {
        "template": template,
        "shell": True,  # these templates need bash; without it, their shell syntax is refused first
        "checkpoint": "model",
        "gpus": 0,
        "eval_gpus": 0,
        "estimator_fields": {},
    }
    config["arms"] = {"grpo": {}, "lr_high": {"lr": 0.001}}
    config["comparisons"] = [{"family": "lr", "reference": "grpo", "arms": ["lr_high"]}]
    path = tmp_path / "command.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


TEMPLATES = {
    "heredoc": ("python train.py <<EOF\n--arm {arm} --lr {lr}\nEOF", "heredoc"),
    "here-string": ("python train.py <<< {arm} --lr {lr}", "heredoc"),
    "backticks around a placeholder": ("train --arm `echo {arm}` --lr {lr}", "backticks"),
    "backticks anywhere": ("train --host `hostname` --arm {arm} --lr {lr}", "backticks"),
    "backticks inside double quotes": ('train --msg "`date`" --arm {arm} --lr {lr}', "backticks"),
    "placeholder inside $(...)": ("train --arm $(echo {arm}) --lr {lr}", "inside $(...)"),
    "placeholder inside $(...) in double quotes": ('train --arm "$(basename {arm})" --lr {lr}', "inside $(...)"),
    "placeholder inside nested $(...)": ("train --arm $(echo $(cat {output_dir})) --lr {lr}", "inside $(...)"),
    "placeholder inside arithmetic": ("train --seed $(( {seed} + 1 )) --arm {arm} --lr {lr}", "inside $(...)"),
    "placeholder after a subshell inside $(...)": ("train --x $( (cd /; ls) ; echo {arm}) --lr {lr}", "inside $(...)"),
    # a value that is a program's name, run by a re-parsing wrapper (on 5a28ea2 each was accepted)
    "find -exec running a value": ("find . -exec {arm} ';' && train --lr {lr}", "the program '{arm}' holds a"),
    "set -- then bash -c on $1": ('set -- {arm}; bash -c "$1"; train --lr {lr}', "passed to 'set', which puts it"),
    "printf -v then eval": ('printf -v x %s {arm}; eval "$x"; train --lr {lr}', "passed to 'printf', which puts"),
    "a value as bash's script": ("bash {arm} --lr {lr}", "the script that 'bash' runs"),
    "a value as python's script after options": ("python -W ignore {arm} --lr {lr}", "the script that 'python' runs"),
    "a value piped into read": ('echo {arm} | {{ read x; eval "$x"; }}; train --lr {lr}', "piped into 'read'"),
    "let reads names as variables": ("let n={arm}; train --lr {lr}", "passed to 'let'"),
}


@pytest.mark.parametrize("case", TEMPLATES)
def test_templates_where_quoting_cannot_hold_are_rejected_naming_the_key(case, tmp_path):
    from armlab.configfile import ConfigError
    from armlab.experiment.validate import load_config

    template, reason = TEMPLATES[case]
    path = _command_config(tmp_path, template)
    before = tree(tmp_path)
    with pytest.raises(ConfigError) as err:
        load_config([path])
    message = str(err.value)
    assert message.startswith(f"{path}: command.template: ") and reason in message and "\n" not in message
    assert tree(tmp_path) == before


def test_a_value_with_shell_syntax_stays_one_literal_word_when_run(tmp_path):
    from armlab.training.backends import command

    assert command.template_fields("train --out $(pwd)/x --arm {arm} ( cd /tmp; train {seed} )", shell=True) == [
        "arm",
        "seed",
    ]
    hostile = f"$(touch {tmp_path}/pwned)`touch {tmp_path}/pwned2`'; touch {tmp_path}/pwned3"
    values = {"arm": hostile, "output_dir": tmp_path}
    subprocess.run(command.render("printf '%s\\n' {arm} > {output_dir}/arm.txt", values, shell=True), check=True)
    assert (tmp_path / "arm.txt").read_text() == hostile + "\n"
    assert not any(tmp_path.glob("pwned*"))
    with pytest.raises(ValueError, match="template: a heredoc"):  # run() renders through the same check
        command.render("cat <<EOF\n{arm}\nEOF", {"arm": hostile}, shell=True)


def test_markdown_outputs_escape_html_and_keep_their_tables(tmp_path):
    from armlab.analysis.design.synthetic import synthetic_scores

    script, piped = "<script>alert(1)</script>", "a|b<img src=x onerror=alert(1)>"
    benchmarks = {"<b>bold</b>|x": "m&th", "plain": "logic"}
    scores = synthetic_scores(
        arms=["grpo", "rloo", script, piped],
        seeds=[1, 2, 3],
        benchmarks=benchmarks,
        items=4,
        rng=np.random.default_rng(0),
        experiment="demo",
    )
    scores.to_parquet(tmp_path / "scores.parquet", index=False)
    config = {
        "experiment": "demo",
        "comparisons": [{"family": "f", "reference": "grpo", "arms": ["rloo"]}],
        "analysis": {"resamples": 200},
    }  # the hostile arms are only summarized: their names come from results
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    out = tmp_path / "analysis"
    assert (
        cli.main(
            ["analyze", str(tmp_path / "config.yaml"), "--scores", str(tmp_path / "scores.parquet"), "--out", str(out)]
        )
        == 0
    )
    report_md, comparisons_md = (out / "report.md").read_text(), (out / "comparisons.md").read_text()
    assert "&lt;b&gt;bold&lt;/b&gt;\\|x" in comparisons_md  # a per-benchmark measure name
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in report_md
    assert r"a\|b&lt;img src=x onerror=alert(1)&gt;" in report_md
    for name, text in (("report.md", report_md), ("comparisons.md", comparisons_md)):
        assert "<script" not in text and "<img" not in text and "<b>" not in text, name
        for table in text.split("\n\n"):
            rows = [line for line in table.splitlines() if line.startswith("|")]
            assert len({line.replace(r"\|", "").count("|") for line in rows}) <= 1, (name, table)  # \| adds no column


def test_an_evaluation_from_before_sample_counts_merges_as_one_sample_per_item(tmp_path):
    """A per-run scores.parquet without n_samples/n_correct (written before sampled evaluation) still merges."""
    from armlab.contract import COLUMNS
    from armlab.evals.merge import merge
    from armlab.files import write_manifest

    paths = []
    for arm, counts in (("grpo", False), ("difffilter", True)):
        out = tmp_path / arm
        out.mkdir()
        row = {"experiment": "tiny", "arm": arm, "seed": 1, "benchmark": "add", "domain": "math", "item": "add-1"}
        row |= {"score": 0.5, "n_samples": 2, "n_correct": 1.0} if counts else {"score": 1.0}
        pd.DataFrame([row]).to_parquet(out / "scores.parquet", index=False)
        write_manifest(out, {"arm": arm}, "scores.parquet")
        paths.append(out / "scores.parquet")
    merged = merge(paths)
    assert list(merged.columns) == COLUMNS
    assert merged.set_index("arm")[["n_samples", "n_correct"]].to_dict("index") == {
        "difffilter": {"n_samples": 2, "n_correct": 1.0},
        "grpo": {"n_samples": 1, "n_correct": 1.0},
    }
