"""A sequential seed design through Snakemake, the way users run it: waves as checkpoints, the append-only record
of looks, a dry run that says what the next wave holds, a killed wave that resumes to the same decisions, and a
design changed after its first wave refused."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import (
    REPO,
    SEQUENTIAL,
    rewrite_with_a_backdated_time,
    sequential_readme_run,
    snakemake_command,
    start_and_kill_when,
)

from armlab import registration

OUT = Path("results/tiny_sequential")
SNAKEMAKE = snakemake_command()
pytestmark = pytest.mark.workflow


def _ledger(workdir):
    lines = (workdir / OUT / "sequential" / "looks.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _decisions(workdir):
    return [record["decisions"] for record in _ledger(workdir)]


def test_a_dry_run_says_what_the_first_wave_holds_and_locks_nothing(sequential_run):
    _, dry, locked_by_dry_run, _ = sequential_run
    assert dry["returncode"] == 0, dry["stderr"][-2000:]
    assert "first wave: seeds 1..2 of grpo, grpo_copy, grpo_aa (6 runs)" in dry["stdout"] + dry["stderr"]
    assert not locked_by_dry_run


def test_the_waves_stop_the_equal_arm_early_and_spend_fewer_runs(sequential_run):
    workdir, _, _, proc = sequential_run
    looks = _ledger(workdir)
    assert [r["look"] for r in looks] == [1, 2, 3]
    assert [r["runs_evaluated"] for r in looks] == [6, 9, 11]  # grpo_copy stops at look 2: no seed 4 for it
    by_look = [{d["arm"]: d["decision"] for d in r["decisions"]} for r in looks]
    assert by_look[0] == {"grpo_copy": "continue", "grpo_aa": "continue"}
    assert by_look[1]["grpo_copy"] == "equivalent" and by_look[1]["grpo_aa"] == "continue"
    assert list(by_look[2]) == ["grpo_aa"] and by_look[2]["grpo_aa"] in ("inconclusive", "differs", "equivalent")
    assert looks[-1]["done"] and looks[-1]["runs_fixed"] == 12
    # the console showed each look as it was decided
    assert "armlab sequential: look 2 of 3 at 3 seeds" in proc["stdout"] + proc["stderr"]
    # the runs that exist are exactly the ones the looks asked for, and the scores hold them and the base
    trained = {(p.parent.name, int(p.name.removeprefix("seed-"))) for p in (workdir / OUT / "runs").glob("*/seed-*")}
    assert trained == {tuple(run) for run in looks[-1]["runs"]}
    assert ("grpo_copy", 4) not in trained and ("grpo_aa", 4) in trained
    scores = pd.read_parquet(workdir / OUT / "scores.parquet")
    assert set(map(tuple, scores[["arm", "seed"]].drop_duplicates().to_numpy().tolist())) == trained | {("base", 0)}


def test_each_checkpoint_output_is_its_ledger_line(sequential_run):
    workdir = sequential_run[0]
    for record in _ledger(workdir):
        written = json.loads((workdir / OUT / "sequential" / f"look-{record['look']}.json").read_text())
        assert written == {k: v for k, v in record.items() if k not in ("design_hash", "written_at")}


def test_the_analysis_reports_the_decisions_the_looks_made(sequential_run):
    workdir = sequential_run[0]
    table = pd.read_csv(workdir / OUT / "analysis" / "sequential.csv").set_index("arm")
    last = {d["arm"]: (d["look"], d["decision"]) for r in _ledger(workdir) for d in r["decisions"]}
    assert {arm: (int(table.at[arm, "look"]), table.at[arm, "decision"]) for arm in table.index} == last
    assert table.at["grpo_copy", "seeds_saved"] == 1 and table.at["grpo_copy", "mean_diff"] == 0.0
    assert table.at["grpo_copy", "rci_low"] <= 0 <= table.at["grpo_copy", "rci_high"]
    looks = pd.read_csv(workdir / OUT / "analysis" / "sequential_looks.csv")
    assert len(looks) == sum(len(r["decisions"]) for r in _ledger(workdir))


def test_a_finished_design_says_so_and_runs_nothing(sequential_run):
    workdir = sequential_run[0]
    proc = sequential_readme_run(workdir, "-n")
    assert proc.returncode == 0
    assert "armlab sequential: done at look 3 of 3; 11 runs (fixed design: 12)" in proc.stdout
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_a_design_changed_after_its_first_wave_is_refused(sequential_run, tmp_path):
    workdir = sequential_run[0]
    ledger_before = (workdir / OUT / "sequential" / "looks.jsonl").read_bytes()
    changed = tmp_path / "changed.yaml"
    changed.write_text((REPO / SEQUENTIAL).read_text().replace("max: 4,", "max: 6,"))
    proc = sequential_readme_run(workdir, "-n", configfile=changed)
    assert proc.returncode != 0
    message = proc.stdout + proc.stderr
    assert "sequential/design.json: the sequential design was locked" in message
    assert "seeds.max: 4 -> 6" in message and "void their error rates" in message
    assert (workdir / OUT / "sequential" / "looks.jsonl").read_bytes() == ledger_before


def test_predictions_are_locked_before_the_first_run_and_later_ones_are_exploratory(sequential_run, tmp_path):
    workdir = tmp_path / "checkout"
    shutil.copytree(sequential_run[0], workdir, symlinks=True)  # the prediction added below changes the run
    lock = workdir / OUT / "predictions" / "lock.json"
    first_run = min(p.stat().st_mtime for p in (workdir / OUT / "runs").glob("*/seed-*/manifest.json"))
    assert lock.stat().st_mtime < first_run
    assert [p["arm"] for p in json.loads(lock.read_text())["predictions"]] == ["grpo_copy"]
    table = pd.read_csv(workdir / OUT / "analysis" / "replications.csv")
    assert table[["arm", "registration", "verdict"]].values.tolist() == [["grpo_copy", "confirmatory", "replicated"]]
    marks = pd.read_csv(workdir / OUT / "analysis" / "comparisons.csv").drop_duplicates(["arm", "measure"])
    assert marks.set_index(["arm", "measure"]).loc[("grpo_copy", "domain_balanced"), "registration"] == "confirmatory"
    assert marks.set_index(["arm", "measure"]).loc[("grpo_aa", "domain_balanced"), "registration"] == "exploratory"

    locked = lock.read_bytes()
    added = tmp_path / "added.yaml"
    later = "  - {family: controls, arm: grpo_aa, direction: not_better, margin: 0.2, source: added after the runs}\n"
    added.write_text((REPO / SEQUENTIAL).read_text().replace("\neval:", "\n" + later + "eval:"))
    proc = sequential_readme_run(workdir, configfile=added)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert lock.read_bytes() == locked
    table = pd.read_csv(workdir / OUT / "analysis" / "replications.csv")
    assert table[["arm", "registration"]].values.tolist() == [["grpo_copy", "confirmatory"], ["grpo_aa", "exploratory"]]
    assert "Replication of preregistered predictions" in (workdir / OUT / "report" / "index.html").read_text()


def test_a_locked_prediction_whose_test_changed_after_the_lock_is_exploratory(sequential_run, tmp_path):
    """The equivalence test that decides grpo_copy's locked prediction changed after the lock (sign-flip TOST to
    t-TOST; the design lock does not pin it): the workflow reruns the analysis, which marks the prediction
    exploratory and names the change. On 5a28ea2 it stayed confirmatory. The other re-targeting cases run through
    `armlab analyze` in tests/analysis/test_locked_meaning.py."""
    workdir = tmp_path / "checkout"
    shutil.copytree(sequential_run[0], workdir, symlinks=True)
    lock = (workdir / OUT / "predictions" / "lock.json").read_bytes()
    changed = tmp_path / "changed.yaml"
    text = (REPO / SEQUENTIAL).read_text()
    changed.write_text(text.replace("per_benchmark: false}", "per_benchmark: false, equivalence_test: t}"))
    proc = sequential_readme_run(workdir, configfile=changed)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = pd.read_csv(workdir / OUT / "analysis" / "replications.csv")
    assert table[["arm", "registration"]].values.tolist() == [["grpo_copy", "exploratory"]]
    note = "Predictions: (controls, grpo_copy, domain_balanced) is exploratory: what decides its verdict changed"
    log = (workdir / OUT / "logs" / "analyze.log").read_text()
    assert note in log and 'analysis.equivalence_test "sign_flip" -> "t"' in log
    assert note in (workdir / OUT / "analysis" / "report.md").read_text()
    assert (workdir / OUT / "predictions" / "lock.json").read_bytes() == lock


@pytest.mark.parametrize("changed", [False, True])
def test_a_deleted_design_record_is_refused_not_re_locked(sequential_run, tmp_path, changed):
    """Deleting sequential/ (and changing the design, or not) re-locked the design "now" on 5f41e59 and replayed the
    looks from the existing runs, with new decisions when changed."""
    workdir = tmp_path / "checkout"
    shutil.copytree(sequential_run[0], workdir, symlinks=True)
    shutil.rmtree(workdir / OUT / "sequential")
    config = tmp_path / "design.yaml"
    text = (REPO / SEQUENTIAL).read_text()
    config.write_text(text.replace("spending: pocock", "spending: obrien_fleming") if changed else text)
    for extra in (["-n"], []):
        proc = sequential_readme_run(workdir, *extra, configfile=config)
        assert proc.returncode != 0, proc.stdout[-2000:]
        message = [
            line for line in (proc.stdout + proc.stderr).splitlines() if "sequential/design.json: missing" in line
        ]
        assert len(message) == 1 and "training or evaluation output(s) of this experiment exist" in message[0]
    assert not (workdir / OUT / "sequential").exists()


def _edit_a_look(out):
    path = out / "sequential" / "look-1.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | {"next_runs": [["grpo_aa", 99]]}))


@pytest.mark.parametrize(
    "tamper, message",
    [
        (rewrite_with_a_backdated_time, "predictions/lock.json: rewritten (sha256 now"),
        (lambda out: (out / "predictions" / "lock.json").unlink(), "predictions/lock.json: deleted, but"),
        (lambda out: shutil.rmtree(out / "predictions"), "predictions/lock.json: deleted, but"),
        (_edit_a_look, "sequential/look-1.json: differs from its look in"),
    ],
    ids=["lock rewritten and backdated", "lock deleted", "predictions folder deleted", "look file edited"],
)
def test_a_rewritten_or_deleted_registration_is_refused_at_start(sequential_run, tmp_path, tamper, message):
    """Run, read, tamper, rerun from the checkout's root: the workflow refuses in one line before any job, from what
    the runs recorded. On b67b5b0 the rewritten, backdated lock was accepted (its prediction then confirmatory), the
    deleted one silently left every prediction exploratory, and the edited look file's seed was run."""
    workdir = tmp_path / "checkout"
    shutil.copytree(sequential_run[0], workdir, symlinks=True)
    tamper(workdir / OUT)
    before = sorted(p for p in workdir.rglob("*") if ".snakemake" not in p.parts)
    for extra in (["-n"], []):
        proc = sequential_readme_run(workdir, *extra)
        assert proc.returncode != 0, proc.stdout[-2000:]
        lines = [line for line in (proc.stdout + proc.stderr).splitlines() if message in line]
        assert len(lines) == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-2000:]
    assert sorted(p for p in workdir.rglob("*") if ".snakemake" not in p.parts) == before


def _before_the_last_wave(reference, workdir):
    """The finished design (the session's, copied) as it stood when its second-to-last look was written: without
    the last wave's runs and evaluations, the last look (its file, log and ledger line) and what follows it."""
    shutil.copytree(reference, workdir, symlinks=True)
    out = workdir / OUT
    *_, previous, last = _ledger(workdir)
    for arm, seed in {tuple(run) for run in last["runs"]} - {tuple(run) for run in previous["runs"]}:
        for stage, log in (("runs", "train"), ("evals", "eval")):
            shutil.rmtree(out / stage / arm / f"seed-{seed}")
            (out / "logs" / log / arm / f"seed-{seed}.log").unlink()
    (out / "sequential" / f"look-{last['look']}.json").unlink()
    (out / "logs" / f"look-{last['look']}.log").unlink()
    ledger = out / "sequential" / "looks.jsonl"
    ledger.write_text("".join(f"{line}\n" for line in ledger.read_text().splitlines()[:-1]))
    for job, record in registration.recorded(out).items():  # what ran after the last look (the base's evaluation)
        if (record or {}).get("looks") == last["look"]:
            shutil.rmtree(job.parent)
    for later in ("analysis", "report", "figures"):
        shutil.rmtree(out / later, ignore_errors=True)
    (out / "scores.parquet").unlink()
    return workdir


def test_a_wave_killed_midway_resumes_to_the_same_decisions(sequential_run, tmp_path):
    reference = sequential_run[0]
    workdir = _before_the_last_wave(reference, tmp_path / "checkout")
    assert len(_ledger(workdir)) == 2
    # look 2 is decided and the last wave's jobs are starting
    last_wave = OUT / "logs" / "train" / "grpo" / "seed-4.log"
    start_and_kill_when(SNAKEMAKE, workdir, SEQUENTIAL, lambda root: (root / last_wave).exists())
    assert len(_ledger(workdir)) == 2
    assert sequential_readme_run(workdir, "--unlock").returncode == 0
    dry = sequential_readme_run(workdir, "-n")  # what the next wave holds, before it is resumed
    assert (
        "armlab sequential: look 2 of 3 recorded; open: controls: grpo_aa; next wave (look 3, 4 seeds): "
        "2 new runs, 11 in all (fixed design: 12)" in dry.stdout
    ), dry.stdout[-2000:]
    resumed = sequential_readme_run(workdir)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert _decisions(workdir) == _decisions(reference)
    assert (workdir / OUT / "sequential" / "looks.jsonl").read_bytes().count(b"\n") == 3
