"""What jobs ran under (armlab/registration.py): every run and evaluation records the sha256 of the predictions and
design locks and the looks recorded when it wrote its manifest, so a lock deleted or rewritten afterwards (even with
a recomputed hash and a backdated ``locked_at``), a record of looks cut short, and a lock that does not predate the
outputs are found from what remains. The workflow cases run from the repository root:
tests/workflows/test_sequential_workflow.py.
"""

import json
import os
import re

import numpy as np
import pandas as pd
import pytest
from conftest import rewrite_with_a_backdated_time

from armlab import files, registration
from armlab.analysis import pipeline, predictions
from armlab.analysis.config import parse_config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs import records
from armlab.configfile import ConfigError, load_mapping
from armlab.experiment import locks, sequential

RAW = {
    "experiment": "registered",
    "benchmarks": {"b0": {"domain": "math"}},
    "comparisons": [{"family": "f", "reference": "ref", "arms": ["big"]}],
    "seeds": [1, 2, 3, 4, 5, 6],
    "analysis": {"resamples": 200, "per_benchmark": False},
    "predictions": [{"family": "f", "arm": "big", "direction": "better", "source": "planted effect"}],
}
JOBS = [(stage, arm, seed) for stage in ("runs", "evals") for arm in ("ref", "big") for seed in RAW["seeds"]]


def _job(root, stage, arm, seed, record=True):
    """A job's folder with the manifest it writes (its registration field as a job writing it now would record)."""
    job = root / stage / arm / f"seed-{seed}"
    job.mkdir(parents=True)
    manifest = {"experiment": "registered", "arm": arm, "seed": seed, "seconds": 1.0}
    files.write_json(job / files.MANIFEST, manifest | (registration.record(job) if record else {}))


def _experiment(root, locked=True, looks=0):
    """An experiment whose predictions were locked (or not) before every job, with ``looks`` recorded looks."""
    if locked:
        locks.write_predictions_lock(root, parse_config(RAW))
    if looks:
        (root / registration.LOOKS_LEDGER).parent.mkdir(parents=True, exist_ok=True)
        (root / registration.LOOKS_LEDGER).write_text("".join(json.dumps({"look": k}) + "\n" for k in range(looks)))
    for job in JOBS:
        _job(root, *job)
    return root


def _scores():
    rows = [
        ("registered", arm, seed, "b0", "math", str(item), float(item < (8 if arm == "big" else 4)))
        for arm in ("ref", "big")
        for seed in RAW["seeds"]
        for item in range(10)
    ]
    return pd.DataFrame(rows, columns=["experiment", "arm", "seed", "benchmark", "domain", "item", "score"])


def test_a_job_records_the_locks_it_ran_under(tmp_path):
    _experiment(tmp_path, looks=2)
    (tmp_path / registration.DESIGN_LOCK).write_text("{}")
    _job(tmp_path, "curves", "big", 1)
    record = json.loads((tmp_path / "curves/big/seed-1" / files.MANIFEST).read_text())[registration.KEY]
    assert record == {
        "predictions_lock": files.file_sha256(tmp_path / registration.PREDICTIONS_LOCK),
        "design_lock": files.file_sha256(tmp_path / registration.DESIGN_LOCK),
        "looks": 2,
    }
    assert registration.record(tmp_path / "elsewhere") == {registration.KEY: None}  # a job run by hand
    assert registration.against_locks(tmp_path) == []


def _cut_ledger(root):
    ledger = root / registration.LOOKS_LEDGER
    ledger.write_text(ledger.read_text().splitlines()[0] + "\n")


TAMPERING = [
    ("predictions lock rewritten, hash recomputed, backdated", rewrite_with_a_backdated_time, "lock.json: rewritten"),
    ("predictions lock deleted", lambda root: (root / registration.PREDICTIONS_LOCK).unlink(), "lock.json: deleted"),
    ("record of looks cut short", _cut_ledger, "looks.jsonl: holds 1 look(s), but"),
    ("record of looks deleted", lambda root: (root / registration.LOOKS_LEDGER).unlink(), "holds 0 look(s), but"),
]


@pytest.mark.parametrize("tamper, message", [case[1:] for case in TAMPERING], ids=[case[0] for case in TAMPERING])
def test_a_deleted_or_rewritten_lock_or_record_is_refused_from_what_the_jobs_recorded(tmp_path, tamper, message):
    """On b67b5b0 a rewritten lock (hash recomputed, locked_at backdated) was read as the original and labelled
    its predictions confirmatory; a deleted one left them exploratory without a word."""
    root = _experiment(tmp_path, looks=3)
    tamper(root)
    with pytest.raises(files.BadFile, match=re.escape(message)) as caught:
        registration.against_locks(root)
    assert "\n" not in str(caught.value) and "runs/big/seed-1/manifest.json" in str(caught.value)
    # the analysis reads the lock through the same check
    with pytest.raises(AnalysisInputError, match=re.escape(message)):
        predictions.read_lock(root / registration.PREDICTIONS_LOCK)


def test_a_rewritten_design_lock_is_refused(tmp_path):
    (tmp_path / registration.DESIGN_LOCK).parent.mkdir(parents=True)
    (tmp_path / registration.DESIGN_LOCK).write_text('{"hash": "a"}')
    _experiment(tmp_path, locked=False)  # the jobs ran under design "a"
    (tmp_path / registration.DESIGN_LOCK).write_text('{"hash": "b"}')
    with pytest.raises(files.BadFile, match="design.json: rewritten"):
        registration.against_locks(tmp_path)


def test_predictions_are_confirmatory_only_when_the_lock_predates_every_output(tmp_path):
    """A lock that a job did not run under (made before it existed, e.g. a lock copied in afterwards) does not
    predate that output: every prediction is exploratory, the locked ones stay listed, and a note says why."""
    config = parse_config(RAW)
    registered = _experiment(tmp_path / "registered")
    result = pipeline.run_analysis(config, _scores(), lock=predictions.read_lock(registered / predictions.LOCK))
    assert result.replications["registration"].tolist() == ["confirmatory"]

    late = _experiment(tmp_path / "late", locked=False)
    locks.write_predictions_lock(tmp_path / "elsewhere", config)
    (late / "predictions").mkdir()
    (late / predictions.LOCK).write_bytes((tmp_path / "elsewhere" / predictions.LOCK).read_bytes())
    lock = predictions.read_lock(late / predictions.LOCK)
    assert lock["exploratory"].startswith(f"does not predate {len(JOBS)} of the experiment's outputs")
    result = pipeline.run_analysis(config, _scores(), lock=lock)
    assert result.replications[["registration", "verdict"]].values.tolist() == [["exploratory", "replicated"]]
    assert set(result.comparisons["registration"]) == {"exploratory"}
    assert any(f"does not predate {len(JOBS)} of the experiment's outputs" in note for note in result.notes)


def _ledger_with_looks(root):
    """A sequential folder as the look jobs leave it: the record of looks and each look's file."""
    ledger = root / registration.LOOKS_LEDGER
    ledger.parent.mkdir(parents=True)
    records = [{"look": k, "done": k == 2, "next_runs": [] if k == 2 else [["big", 3]]} for k in (1, 2)]
    for record in records:
        sequential.append_look(ledger, {**record, "design_hash": "h", "written_at": "now"})
        files.write_json(ledger.parent / f"look-{record['look']}.json", record)
    return ledger


def _edit_next_runs(ledger):
    look = ledger.parent / "look-1.json"
    look.write_text(json.dumps(json.loads(look.read_text()) | {"next_runs": [["big", 9]]}))


def _append_undecodable(ledger):
    ledger.write_bytes(ledger.read_bytes() + b'{"look": 3, "arm": "\xff"}\n')


@pytest.mark.parametrize(
    "tamper, message",
    [
        (_edit_next_runs, "look-1.json: differs from its look in "),
        (lambda ledger: (ledger.parent / "look-2.json").write_text("[]"), "look-2.json: differs from its look"),
        (_append_undecodable, "looks.jsonl: line 3 is not a look record"),
    ],
    ids=["edited look file", "look file not a record", "non-UTF-8 byte in the record"],
)
def test_an_edited_look_or_an_undecodable_record_is_one_line(tmp_path, tamper, message):
    """On b67b5b0 the workflow read an edited look file's next runs as they were (another seed ran), and a
    non-UTF-8 byte in the record of looks was a UnicodeDecodeError traceback."""
    ledger = _ledger_with_looks(tmp_path)
    assert sequential.read_look(ledger.parent / "look-1.json")["next_runs"] == [["big", 3]]
    tamper(ledger)
    with pytest.raises((AnalysisInputError, ConfigError), match=re.escape(message)) as caught:
        locks.check_design_lock(tmp_path, {})
    assert "\n" not in str(caught.value)


def test_a_truncated_manifest_is_left_to_the_corruption_scan_not_refused(tmp_path):
    """The workflow checks the locks before its corruption scan removes a truncated job output (whose job then runs
    again under the locks of now): the check must not stop the workflow on it. Until then, that output did not
    run under the lock."""
    root = _experiment(tmp_path)
    manifest = root / "evals/big/seed-1" / files.MANIFEST
    manifest.write_text(manifest.read_text()[:20])
    assert registration.recorded(root)[manifest] is None and registration.against_locks(root) == [manifest]
    assert files.remove_corrupt_outputs(root, log=lambda line: None) == [manifest]


# ----------------------------------------------------------------------------- the red team's cases (stop 37)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("predictions_lock", 123, "registration.predictions_lock: expected a sha256 hex digest or null, got 123"),
        ("design_lock", "abc", "registration.design_lock: expected a sha256 hex digest or null, got 'abc'"),
        ("looks", "5", "registration.looks: expected a count of looks or null, got '5'"),
        ("looks", True, "registration.looks: expected a count of looks or null, got True"),
    ],
)
def test_a_tampered_record_is_one_line_not_a_traceback(tmp_path, field, value, message):
    """On 14ef595 an integer lock hash or a text count in one manifest was a TypeError traceback."""
    root = _experiment(tmp_path)
    path = root / "runs/big/seed-2" / files.MANIFEST
    manifest = json.loads(path.read_text())
    manifest[registration.KEY][field] = value
    path.write_text(json.dumps(manifest))
    with pytest.raises(files.BadFile, match=re.escape(message)) as caught:
        registration.against_locks(root)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_job_folder_whose_manifest_was_deleted_did_not_run_under_the_lock(tmp_path):
    """On 14ef595 deleting every manifest (keeping the models and scores) left nothing to check: a forged lock then
    counted as confirmatory."""
    root = _experiment(tmp_path)
    for job in JOBS:
        (root / job[0] / job[1] / f"seed-{job[2]}" / files.MANIFEST).unlink()
    lock = predictions.read_lock(root / predictions.LOCK)
    assert not predictions.confirms(lock) and f"does not predate {len(JOBS)}" in lock["exploratory"]


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_record_of_looks_that_is_not_a_file_is_one_line(tmp_path, kind):
    """On 14ef595 a FIFO in place of sequential/looks.jsonl hung the workflow's start; a folder was a traceback."""
    ledger = tmp_path / registration.LOOKS_LEDGER
    ledger.parent.mkdir(parents=True)
    os.mkfifo(ledger) if kind == "fifo" else ledger.mkdir()
    for check in (lambda: registration.against_locks(tmp_path), lambda: records.read_ledger(ledger)):
        with pytest.raises(files.BadFile, match="looks.jsonl: record of looks is a"):
            check()


def test_a_config_that_is_not_a_file_is_one_line(tmp_path):
    """On 14ef595 `armlab analyze FIFO` hung, and a config linked to /dev/zero filled the memory."""
    os.mkfifo(tmp_path / "config.yaml")
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    for name, kind in (("config.yaml", "a FIFO"), ("zero.yaml", "a device")):
        with pytest.raises(ConfigError, match=f"{name}: config is {kind}"):
            load_mapping(tmp_path / name)


def test_later_outputs_count_as_evidence_against_a_late_lock(tmp_path):
    """On 14ef595 keeping figures/ and logs/analyze.log (which prints the verdicts) let a lock be written."""
    for kept in ("figures/forest.png", "logs/analyze.log", "logs/look-1.log"):
        root = tmp_path / kept.replace("/", "_")
        (root / kept).parent.mkdir(parents=True)
        (root / kept).write_text("grpo_aa: worse")
        line = locks.write_predictions_lock(root, parse_config(RAW))
        assert "not locked, because 1 training or evaluation output" in line
        assert not (root / predictions.LOCK).exists()


def _evaluations(root):
    """Each (arm, seed)'s evaluation of :func:`_scores` in ``evals/``, with the manifest that checks it."""
    scores = _scores()
    for (arm, seed), rows in scores.groupby(["arm", "seed"]):
        job = root / "evals" / arm / f"seed-{seed}"
        rows.to_parquet(job / "scores.parquet", index=False)
        manifest = json.loads((job / files.MANIFEST).read_text())
        files.write_manifest(job, manifest, "scores.parquet")
    return scores


def test_predictions_are_exploratory_when_the_scores_are_not_the_evaluations(tmp_path):
    """On 14ef595 a scores table edited after the runs (an arm at 100%) was analysed with a valid lock and its
    prediction labelled confirmatory."""
    config, root = parse_config(RAW), _experiment(tmp_path)
    scores = _evaluations(root)
    lock = predictions.read_lock(root / predictions.LOCK)
    assert predictions.confirms(predictions.check_scores(lock, scores.sample(frac=1, random_state=0), root))
    edited = scores.assign(score=np.where(scores["arm"] == "big", 1.0, scores["score"]))
    checked = predictions.check_scores(lock, edited, root)
    assert "the scores analysed differ from theirs" in checked["exploratory"]
    result = pipeline.run_analysis(config, edited, lock=checked)
    assert result.replications["registration"].tolist() == ["exploratory"]
    assert any("differ from theirs" in note for note in result.notes)
    (root / "evals/big/seed-1/scores.parquet").write_bytes(b"edited")
    assert "fail their manifests" in predictions.check_scores(lock, scores, root)["exploratory"]


def test_a_rewritten_design_lock_with_every_manifest_rewritten_is_refused_by_the_record_of_looks(tmp_path):
    """The jobs' records can be rewritten too; the looks recorded under the old design cannot be, unnoticed."""
    ledger = _ledger_with_looks(tmp_path)  # looks decided under design "h"
    (tmp_path / registration.DESIGN_LOCK).write_text(json.dumps({"hash": "rewritten"}))
    with pytest.raises(ConfigError, match="locks design rewritten, but .*looks.jsonl records looks decided under h"):
        locks.check_design_lock(tmp_path, {})
    assert ledger.exists()


def test_a_jobs_folder_that_does_not_exist_is_an_error_not_ignored(tmp_path):
    """On 14ef595 `armlab analyze --jobs <typo>` analysed without the jobs and said the predictions were unlocked."""
    with pytest.raises(AnalysisInputError, match="--jobs .*typo: not a folder"):
        pipeline.analyze(parse_config(RAW), tmp_path / "scores.parquet", tmp_path / "typo")
