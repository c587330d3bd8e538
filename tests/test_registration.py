"""What jobs ran under (armlab/registration.py): every run and evaluation records the sha256 of the predictions and
design locks and the looks recorded when it wrote its manifest, so a lock deleted or rewritten afterwards (even with
a recomputed hash and a backdated ``locked_at``), a record of looks cut short, and a lock that does not predate the
outputs are found from what remains. The workflow cases run from the repository root: tests/test_sequential_workflow.py.
"""

import json
import re

import pandas as pd
import pytest

from analysis import pipeline, predictions, waves
from analysis.config import parse_config
from analysis.errors import AnalysisInputError
from armlab import files, registration
from armlab.configfile import ConfigError

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
        predictions.write_lock(root, parse_config(RAW).predictions)
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


def rewrite_with_a_backdated_time(root):
    """Change the locked prediction, recompute the lock's hash and put locked_at back: the lock file alone cannot
    tell (tests/test_sequential_workflow.py does it to a finished workflow)."""
    path = root / registration.PREDICTIONS_LOCK
    lock = json.loads(path.read_text())
    lock["predictions"][0]["direction"] = "worse"
    lock["hash"] = predictions.predictions_hash([predictions.Prediction(**p) for p in lock["predictions"]])
    lock["locked_at"] = "2020-01-01T00:00:00Z"
    path.write_text(json.dumps(lock))


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
    predictions.write_lock(tmp_path / "elsewhere", config.predictions)
    (late / "predictions").mkdir()
    (late / predictions.LOCK).write_bytes((tmp_path / "elsewhere" / predictions.LOCK).read_bytes())
    lock = predictions.read_lock(late / predictions.LOCK)
    assert len(lock["unregistered"]) == len(JOBS)
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
        waves.append_look(ledger, {**record, "design_hash": "h", "written_at": "now"})
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
    assert waves.read_look(ledger.parent / "look-1.json")["next_runs"] == [["big", 3]]
    tamper(ledger)
    with pytest.raises((AnalysisInputError, ConfigError), match=re.escape(message)) as caught:
        waves.check_lock(tmp_path, {})
    assert "\n" not in str(caught.value)


def test_a_truncated_manifest_is_left_to_the_corruption_scan_not_refused(tmp_path):
    """The workflow checks the locks before its corruption scan removes a truncated job output (whose job then runs
    again under the locks of now): the check must not stop the workflow on it."""
    root = _experiment(tmp_path)
    manifest = root / "evals/big/seed-1" / files.MANIFEST
    manifest.write_text(manifest.read_text()[:20])
    assert manifest not in registration.recorded(root) and registration.against_locks(root) == []
    assert files.remove_corrupt_outputs(root, log=lambda line: None) == [manifest]
