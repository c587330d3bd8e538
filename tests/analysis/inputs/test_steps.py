"""Step logs from elsewhere (analysis/inputs/steps.py, `armlab steps`): TRL's trainer state, a W&B history export
and a metrics.jsonl become the run folders whose training curves the report draws; bad logs are named, file and
line, before anything is written."""

import json
import re

import numpy as np
import pandas as pd
import pytest
from conftest import REPORT_FIXTURE, report_build

from armlab import cli
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs.steps import STEP_LOGS, import_steps
from armlab.analysis.reporting.read import read_runs
from armlab.training.backends.trl_backend import step_log


def _trl_history(steps=3, reward=0.5):
    """A TRL log history: a training row per step, an evaluation row, and the run's summary row."""
    rows = [
        {
            "step": s,
            "epoch": s / steps,
            "loss": 0.01 * s,
            "reward": reward + 0.1 * s,
            "frac_reward_zero_std": 0.25,
            "clip_ratio/region_mean": 0.0,
            "completions/mean_length": 4.0 + s,
            "step_time": 0.5,
            "learning_rate": 3e-4,
        }
        for s in range(1, steps + 1)
    ]
    return [*rows, {"step": steps, "eval_loss": 1.0}, {"step": steps, "train_runtime": 9.0, "train_loss": 0.02}]


def _write_runs(tmp_path, kind, arms=("grpo", "rloo"), seeds=(1, 2)):
    """One log per (arm, seed) in the kind's format; rloo's reward is 0.2 higher."""
    for arm in arms:
        for seed in seeds:
            history = _trl_history(reward=0.5 + 0.2 * (arm == "rloo") + 0.01 * seed)
            folder = tmp_path / "logs" / arm / f"seed-{seed}"
            folder.mkdir(parents=True)
            train = [row for row in history if "reward" in row]
            if kind == "trl":
                (folder / "trainer_state.json").write_text(json.dumps({"global_step": 3, "log_history": history}))
            elif kind == "wandb":  # TRL's keys under W&B's train/ section, step in _step, a text column
                frame = pd.DataFrame([{"_step": r["step"], **{f"train/{k}": v for k, v in r.items()}} for r in train])
                frame.assign(_runtime=1.5, media="table.json").to_csv(folder / "history.csv")  # with pandas' index
            else:
                text = [json.dumps({"global_step": r["step"], "rew": r["reward"], "loss": r["loss"]}) for r in train]
                (folder / "metrics.jsonl").write_text("\n".join(text) + "\n")
    return {"trl": "trainer_state.json", "wandb": "history.csv", "jsonl": "metrics.jsonl"}[kind]


def test_a_trl_state_gives_the_step_log_the_trl_backend_writes(tmp_path):
    _write_runs(tmp_path, "trl", arms=("grpo",), seeds=(1,))
    path = tmp_path / "logs" / "grpo" / "seed-1" / "trainer_state.json"
    import_steps("trl", [("grpo", 1, path)], "ext", {}, tmp_path / "runs")
    runs = read_runs(tmp_path / "runs")  # the report's reader: manifest and checksums verified
    backend = step_log(_trl_history(reward=0.51), "ext", "grpo", 1)
    pd.testing.assert_frame_equal(runs.steps.drop(columns="seed"), backend.drop(columns="seed"), check_dtype=False)
    assert list(runs.steps.step) == [1, 2, 3] and "eval_loss" not in runs.steps  # training rows only
    assert runs.manifests[0]["imported_from"]["kind"] == "trl"


def test_a_wandb_history_and_a_metrics_log_name_their_quantities_as_armlab_does(tmp_path, capsys):
    name = _write_runs(tmp_path, "wandb")
    pattern = str(tmp_path / "logs" / "{arm}" / "seed-{seed}" / name)
    argv = ["steps", "wandb", "--pattern", pattern, "--experiment", "ext", "--out", str(tmp_path / "runs")]
    assert cli.main(argv) == 0
    steps = read_runs(tmp_path / "runs").steps
    assert {"reward", "frac_zero_var", "clip_frac", "response_len", "seconds", "loss", "_runtime"} <= set(steps)
    assert "media" not in steps and "left out (not numbers): ['media']" in capsys.readouterr().out
    assert not [column for column in steps if column.startswith("Unnamed")]  # pandas' row numbers are no quantity
    rloo = steps[steps.arm == "rloo"].set_index(["seed", "step"]).reward
    grpo = steps[steps.arm == "grpo"].set_index(["seed", "step"]).reward
    np.testing.assert_allclose(rloo - grpo, 0.2)

    # the same history saved as JSON lines (run.history().to_json(orient="records", lines=True)) reads alike
    for path in (tmp_path / "logs").rglob("history.csv"):
        frame = pd.read_csv(path, index_col=0)
        frame.to_json(path.with_suffix(".jsonl"), orient="records", lines=True)
    lines_pattern = pattern.replace("history.csv", "history.jsonl")
    argv = ["steps", "wandb", "--pattern", lines_pattern, "--experiment", "ext", "--out", str(tmp_path / "runs_jl")]
    assert cli.main(argv) == 0
    pd.testing.assert_frame_equal(read_runs(tmp_path / "runs_jl").steps, steps, check_dtype=False)

    name = _write_runs(tmp_path / "jsonl", "jsonl")
    pattern = str(tmp_path / "jsonl" / "logs" / "{arm}" / "seed-{seed}" / name)
    fields = ["--field", "step=global_step", "--field", "reward=rew"]
    argv = ["steps", "jsonl", "--pattern", pattern, "--experiment", "ext", "--out", str(tmp_path / "runs2"), *fields]
    assert cli.main(argv) == 0
    jsonl = read_runs(tmp_path / "runs2").steps
    columns, order = ["arm", "seed", "step", "reward", "loss"], ["arm", "seed", "step"]
    assert set(jsonl) == {"experiment", *columns}  # global_step and rew under armlab's names, nothing else
    pd.testing.assert_frame_equal(
        jsonl[columns].sort_values(order).reset_index(drop=True),
        steps[columns].sort_values(order).reset_index(drop=True),
        check_dtype=False,
    )


def test_the_report_draws_the_imported_curves(tmp_path):
    build = report_build()
    results = build["write_experiment"](tmp_path)
    config = REPORT_FIXTURE / "experiment.yaml"
    fast = ["--set", "analysis.resamples=200", "--set", "analysis.per_benchmark=false"]
    analysis = tmp_path / "analysis"
    assert (
        cli.main(["analyze", str(config), "--scores", str(results / "scores.parquet"), "--out", str(analysis), *fast])
        == 0
    )
    name = _write_runs(tmp_path, "trl", arms=("grpo", "rloo"), seeds=(1, 2))
    pattern = str(tmp_path / "logs" / "{arm}" / "seed-{seed}" / name)
    assert cli.main(["steps", "trl", "--pattern", pattern, "--experiment", "x", "--out", str(tmp_path / "ext")]) == 0
    out = tmp_path / "report"
    assert (
        cli.main(
            ["report", str(config), "--analysis", str(analysis), "--runs", str(tmp_path / "ext"), "--out", str(out)]
        )
        == 0
    )
    html = (out / "index.html").read_text()
    assert "4 runs with step logs" in html


LOG = '{"step": 1, "reward": 0.5}\n'
BAD_LOGS = {
    "no step": ('{"reward": 0.5}\n', [], r"no 'step' field; name the field that counts steps"),
    "step twice": (LOG + LOG, [], r"metrics.jsonl line 2: step 1 again \(first at .*line 1\)"),
    "step not whole": (
        '{"step": 1.5, "reward": 0.5}\n',
        [],
        r"line 1: step is 1.5; expected a whole number from 0 to 2\*\*53",
    ),
    "negative step": ('{"step": -1}\n', [], r"line 1: step is -1"),
    "not JSON": ('{"step": 1,\n', [], r"metrics.jsonl line 1"),
    "mapped field missing": (LOG, ["reward=rew"], r"no field 'rew' \(given for reward\)"),
    "mapped field not a number": ('{"step": 1, "rew": "high"}\n', ["reward=rew"], r"line 1: reward is 'high'"),
    "empty": ("", [], r"no step in the log"),
}


@pytest.mark.parametrize("case", BAD_LOGS)
def test_a_bad_log_is_one_line_naming_the_file_and_line_and_nothing_is_written(case, tmp_path, capsys):
    text, fields, expected = BAD_LOGS[case]
    (tmp_path / "logs" / "a" / "seed-1").mkdir(parents=True)
    (tmp_path / "logs" / "a" / "seed-1" / "metrics.jsonl").write_text(text)
    pattern = str(tmp_path / "logs" / "{arm}" / "seed-{seed}" / "metrics.jsonl")
    argv = ["steps", "jsonl", "--pattern", pattern, "--experiment", "x", "--out", str(tmp_path / "runs")]
    assert cli.main([*argv, *[w for f in fields for w in ("--field", f)]]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert re.search(expected, err), err
    assert not (tmp_path / "runs").exists()


def test_a_runs_folder_of_the_workflow_is_never_overwritten(tmp_path, capsys):
    name = _write_runs(tmp_path, "trl", arms=("grpo",), seeds=(1,))
    workflow_runs = tmp_path / "results" / "demo" / "runs"
    (workflow_runs / "grpo" / "seed-1").mkdir(parents=True)
    (workflow_runs / "grpo" / "seed-1" / "policy.pt").write_bytes(b"weights")
    pattern = str(tmp_path / "logs" / "{arm}" / "seed-{seed}" / name)
    assert cli.main(["steps", "trl", "--pattern", pattern, "--experiment", "x", "--out", str(workflow_runs)]) == 2
    assert "not empty and not an earlier output of `armlab steps`" in capsys.readouterr().err
    assert (workflow_runs / "grpo" / "seed-1" / "policy.pt").read_bytes() == b"weights"


def test_an_unknown_kind_gets_near_misses_and_imports_are_deterministic(tmp_path, capsys):
    with pytest.raises(AnalysisInputError, match=r"unknown step log 'wandbb'; did you mean 'wandb'"):
        import_steps("wandbb", [], "x", {}, tmp_path / "runs")
    name = _write_runs(tmp_path, "trl", arms=("grpo",), seeds=(1,))
    runs = [("grpo", 1, tmp_path / "logs" / "grpo" / "seed-1" / name)]
    import_steps("trl", runs, "x", {}, tmp_path / "one")
    import_steps("trl", runs, "x", {}, tmp_path / "two")
    for file in ("steps.parquet", "manifest.json"):
        assert (tmp_path / "one" / "grpo" / "seed-1" / file).read_bytes() == (
            tmp_path / "two" / "grpo" / "seed-1" / file
        ).read_bytes()
    assert set(STEP_LOGS) == {"trl", "wandb", "jsonl", "armlab"}


def test_an_armlab_step_log_reads_back_as_written(tmp_path):
    """A steps.parquet of another armlab experiment (kind armlab): the same steps and quantities, a missing value
    still missing, under the importing run's experiment, arm and seed."""
    written = pd.DataFrame(
        {
            "experiment": "trained_here",
            "arm": "grpo",
            "seed": 1,
            "step": [1, 2, 3],
            "reward": [0.5, np.nan, 0.75],
            "num_tokens": [700.0, 1400.0, 2100.0],
        }
    )
    path = tmp_path / "steps.parquet"
    written.to_parquet(path, index=False)
    lines = import_steps("armlab", [("dr_grpo", 2, path)], "evaluated_here", {}, tmp_path / "runs")
    assert lines == [f"dr_grpo seed 2: 3 steps, 2 quantities from {path}"]
    read = pd.read_parquet(tmp_path / "runs" / "dr_grpo" / "seed-2" / "steps.parquet")
    expected = written.assign(experiment="evaluated_here", arm="dr_grpo", seed=2)
    pd.testing.assert_frame_equal(read, expected, check_dtype=False)


def test_the_configs_step_log_kinds_are_the_registrys():
    """``checkpoints.step_log.kind`` of the config schema lists exactly the kinds ``armlab steps`` reads."""
    from armlab.experiment.validate import _schema

    kinds = _schema()["properties"]["checkpoints"]["properties"]["step_log"]["properties"]["kind"]["enum"]
    assert kinds == sorted(STEP_LOGS)
