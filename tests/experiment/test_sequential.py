"""The sequential design's workflow (armlab/experiment/locks.py, armlab/experiment/sequential.py): the lock, the
append-only record of looks and the runs each look asks for."""

import json

import pytest
from sequential_runs import CONFIG, RAW, run_scores, run_values

from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs import records
from armlab.configfile import ConfigError
from armlab.experiment import locks, sequential


def test_a_look_asks_only_for_the_open_arms_and_their_reference(tmp_path):
    ledger = tmp_path / "looks.jsonl"
    values = run_values(range(1, 7))
    record = sequential.run_look(CONFIG, 1, run_scores(values), ledger, "h")
    decisions = {d["arm"]: d["decision"] for d in record["decisions"]}
    # at 6 seeds and level 0.05/2 Pocock spends 0.0177, 1.1 of the 64 sign patterns: less than the two most
    # extreme ones (all + and all -), so nothing can stop yet
    assert decisions == {"big": "continue", "null": "continue"}
    assert record["next_runs"] == [[a, s] for a in ("ref", "big", "null") for s in range(1, 9)]
    values = run_values(range(1, 9))
    record = sequential.run_look(CONFIG, 2, run_scores(values), ledger, "h")
    assert {d["arm"]: d["decision"] for d in record["decisions"]}["big"] == "differs"
    # cumulative: every run so far, and seeds 9 and 10 for the open arm and its reference only
    assert record["next_runs"] == [[a, s] for a, n in (("ref", 10), ("big", 8), ("null", 10)) for s in range(1, n + 1)]
    assert record["runs_evaluated"] == 24 and record["runs_fixed"] == 30


def test_looks_are_appended_once_and_never_revised(tmp_path):
    ledger = tmp_path / "looks.jsonl"
    values = run_values(range(1, 7))
    sequential.run_look(CONFIG, 1, run_scores(values), ledger, "h")
    first = ledger.read_bytes()
    sequential.run_look(CONFIG, 1, run_scores(values), ledger, "h")  # the same look again (a rerun job): no second line
    assert ledger.read_bytes() == first
    values[("null", 2)] += 0.2  # a run of look 1 changed since it was recorded
    with pytest.raises(AnalysisInputError, match="look 1 is recorded with other decisions"):
        sequential.run_look(CONFIG, 1, run_scores(values), ledger, "h")
    with pytest.raises(AnalysisInputError, match="look 1 is recorded with other decisions"):
        sequential.run_look(CONFIG, 2, run_scores({**values, **run_values(range(7, 9))}), ledger, "h")
    assert ledger.read_bytes() == first


def test_looks_go_in_order(tmp_path):
    with pytest.raises(AnalysisInputError, match="look 3 follows look 0; looks go in order"):
        sequential.run_look(CONFIG, 3, run_scores(run_values(range(1, 11))), tmp_path / "looks.jsonl", "h")


def test_a_look_without_the_seeds_it_needs_is_an_error_naming_the_arms(tmp_path):
    values = {k: v for k, v in run_values(range(1, 9)).items() if not (k[0] == "null" and k[1] > 6)}
    with pytest.raises(AnalysisInputError, match=r"look 2 needs 8 seeds of arm\(s\) \['null'\]"):
        sequential.run_look(CONFIG, 2, run_scores(values), tmp_path / "looks.jsonl", "h")


def test_the_lock_refuses_a_changed_design_and_names_the_change(tmp_path):
    config = json.loads(json.dumps(RAW))
    locks.write_design_lock(tmp_path, config)
    locks.check_design_lock(tmp_path, config)  # the same design passes
    locks.check_design_lock(tmp_path, {**config, "limits": {"seeds": 5000}})  # limits decide nothing
    locks.check_design_lock(tmp_path, {**config, "analysis": {"alpha": 0.05, "resamples": 2000}})  # nor the bootstrap
    changed = {**config, "seeds": {**config["seeds"], "spending": "obrien_fleming"}}
    with pytest.raises(ConfigError, match='seeds.spending: "pocock" -> "obrien_fleming"'):
        locks.check_design_lock(tmp_path, changed)
    with pytest.raises(ConfigError, match="analysis.alpha: 0.05 -> 0.1"):
        locks.check_design_lock(tmp_path, {**config, "analysis": {"alpha": 0.1}})
    locks.write_design_lock(tmp_path, changed)  # an existing lock is never replaced
    with pytest.raises(ConfigError):
        locks.check_design_lock(tmp_path, changed)


def test_the_lock_ignores_job_resources_and_written_out_defaults(tmp_path):
    config = json.loads(json.dumps(RAW))
    locks.write_design_lock(tmp_path, config)
    locks.check_design_lock(tmp_path, {**config, "analysis": {"alpha": 0.05, "confidence": 0.95, "bootstrap_seed": 0}})
    with_trl = {**config, "trl": {"model": "m", "mem_mb": 4000}}
    locks.write_design_lock(tmp_path / "trl", with_trl)
    locks.check_design_lock(tmp_path / "trl", {**config, "trl": {"model": "m", "mem_mb": 16000}})
    with pytest.raises(ConfigError, match='trl.model: "m" -> "n"'):
        locks.check_design_lock(tmp_path / "trl", {**config, "trl": {"model": "n", "mem_mb": 4000}})


def test_a_record_of_looks_without_its_lock_or_missing_a_look_is_refused(tmp_path):
    config = json.loads(json.dumps(RAW))
    ledger = tmp_path / sequential.LEDGER
    values, locked = run_values(range(1, 7)), locks.design_hash(config)
    sequential.run_look(CONFIG, 1, run_scores(values), ledger, locked)
    with pytest.raises(ConfigError, match="design.json: missing, but .* records looks"):
        locks.check_design_lock(tmp_path, config)
    locks.write_design_lock(tmp_path, config)
    locks.check_design_lock(tmp_path, config)
    (ledger.parent / "look-1.json").write_text("{}")
    (ledger.parent / "look-2.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"look\(s\) \[2\] have their checkpoint files but are not in the record"):
        locks.check_design_lock(tmp_path, config)
    with pytest.raises(AnalysisInputError, match=f"were decided under design {locked[:12]}, this one would be under o"):
        sequential.run_look(CONFIG, 2, run_scores(run_values(range(1, 9))), ledger, "other")
    ledger.write_text(ledger.read_text() + "[1]\n")
    with pytest.raises(AnalysisInputError, match="line 2 is not a look record"):
        records.read_ledger(ledger)


@pytest.mark.parametrize("evidence", ["runs/grpo/seed-1", "evals/grpo/seed-1", "scores.parquet", "logs/eval/a/s.log"])
def test_a_deleted_design_lock_is_found_from_the_outputs_that_remain(tmp_path, evidence):
    """Deleting sequential/ (with or without changing the design) must not re-lock it over existing runs."""
    config = json.loads(json.dumps(RAW))
    locks.check_design_lock(tmp_path, config)  # nothing run yet: nothing to check
    path = tmp_path / evidence
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x")
    with pytest.raises(ConfigError, match=r"design.json: missing, but 1 training or evaluation output\(s\)") as error:
        locks.check_design_lock(tmp_path, config)
    assert "\n" not in str(error.value) and str(path) in str(error.value)
