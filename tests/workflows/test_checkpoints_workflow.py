"""End to end with the README's commands: config/experiments/evaluate_checkpoints.yaml evaluates the checkpoints that
config/experiments/real_architecture.yaml's TRL runs wrote (the session's run), trains nothing, writes nothing where
they are, and gives the original experiment's answers, scores and verdicts; its learning curves come from the
intermediate checkpoints; a checkpoint edited afterwards is recorded and evaluated again, alone; a damaged one is
refused before any job, in one line naming the run and the path."""

import json
import shutil

import pandas as pd
import pytest
from conftest import copy_of_the_repository, readme_run, tree_digest

pytestmark = pytest.mark.workflow

EXAMPLE = "config/experiments/evaluate_checkpoints.yaml"
KEY = ["arm", "seed", "benchmark", "item"]


def test_the_checkpoints_of_real_architecture_evaluate_to_its_own_verdicts(tmp_path, real_architecture_run):
    trained, trained_stdout = real_architecture_run
    original = trained / "results" / "real_architecture"
    workdir = copy_of_the_repository(tmp_path / "checkout")
    copied = workdir / "results" / "real_architecture"
    for folder in ("runs", "base_hf"):  # the checkpoints, as a grid trained elsewhere leaves them
        shutil.copytree(original / folder, copied / folder, symlinks=True)
    before = tree_digest(copied)
    run = readme_run(workdir, "all", "learning_curves", configfile=EXAMPLE)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert tree_digest(copied) == before  # nothing written inside the checkpoints' folders
    out = workdir / "results" / "evaluate_checkpoints"
    assert not list(out.glob("runs/*/seed-*/model"))  # recorded, not trained or copied

    # the same answers, scores and comparisons as the original experiment's own evaluation
    scores, theirs = (pd.read_parquet(o / "scores.parquet").drop(columns="experiment") for o in (out, original))
    pd.testing.assert_frame_equal(
        scores.sort_values(KEY, ignore_index=True), theirs.sort_values(KEY, ignore_index=True)
    )
    for answers in sorted(original.glob("evals/*/seed-*/answers.parquet")):
        pd.testing.assert_frame_equal(pd.read_parquet(out / answers.relative_to(original)), pd.read_parquet(answers))
    pd.testing.assert_frame_equal(
        pd.read_csv(out / "analysis" / "comparisons.csv"), pd.read_csv(original / "analysis" / "comparisons.csv")
    )
    verdicts = [line for line in run.stdout.splitlines() if line.startswith("  estimators: dr_grpo vs grpo")]
    assert verdicts and all(line in trained_stdout.splitlines() for line in verdicts)

    # the report names every checkpoint evaluated, with the sha256 of its files, and no training time
    report = (out / "report" / "index.html").read_text()
    assert "4 runs with step logs, 4 of them trained elsewhere (see Checkpoints evaluated); commit" in report
    for manifest in out.glob("runs/*/seed-*/manifest.json"):
        for model in json.loads(manifest.read_text())["checkpoints"]:
            assert model["path"].startswith(str(copied.resolve())) and model["path"] in report
            assert model["sha256"] in report

    # learning curves from the intermediate checkpoints; the last step's rows are the evaluation's
    curves = pd.read_csv(out / "curves_summary" / "curves.csv")
    assert sorted(curves.step.unique()) == [0, 10, 20] and set(curves.arm) == {"grpo", "dr_grpo"}
    last = pd.read_parquet(out / "curves" / "grpo" / "seed-1" / "scores.parquet").query("step == 20")
    evaluated = scores.query("arm == 'grpo' and seed == 1")
    assert (last.sort_values("item").score.to_numpy() == evaluated.sort_values("item").score.to_numpy()).all()
    assert "no run has a compute ledger" in (out / "logs" / "learning_curves.log").read_text()

    # a checkpoint edited after its evaluation is recorded and evaluated again, and nothing else is
    edited = copied / "runs" / "dr_grpo" / "seed-1" / "model" / "config.json"
    edited.write_text(edited.read_text() + "\n")
    before = tree_digest(out)
    dry = readme_run(workdir, "-n", configfile=EXAMPLE)
    said = f"armlab: run (dr_grpo, seed 1): {edited.resolve()}: changed since it was recorded (size, modification or "
    said += "change time); a run records and evaluates it again"
    assert said in dry.stdout
    assert tree_digest(out) == before  # a dry run removes nothing (issue 51): it only says what a run does again

    # a damaged checkpoint: refused before any job, in one line naming the run and the path
    (copied / "runs" / "grpo" / "seed-2" / "model" / "model.safetensors").unlink()
    refused = readme_run(workdir, "-n", configfile=EXAMPLE)
    assert refused.returncode != 0 and "Job stats" not in refused.stdout
    line = "checkpoints.pattern: run (grpo, seed 2): results/real_architecture/runs/grpo/seed-2/model: no weights"
    said = (refused.stdout + refused.stderr).splitlines()  # Snakemake prints a WorkflowError on stdout
    assert sum(line in text for text in said) == 1, refused.stdout[-2000:] + refused.stderr[-2000:]
