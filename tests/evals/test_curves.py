"""Accuracy over training (evals/curves.py, analysis/learning_curves/curves.py, workflows/rules/curves.smk): which
models a run kept, what is refused. The real workflow run of both backends is in
tests/training/backends/test_per_arm_backend.py."""

import pandas as pd
import pytest
import yaml
from conftest import REPO, TINY, snakemake_dry_run

from armlab.analysis.learning_curves.curves import curve_summaries, read_curves
from armlab.evals.curves import run_models
from armlab.files import BadFile, write_manifest

TINY_SEQUENTIAL = REPO / "tests" / "fixtures" / "tiny_sequential.yaml"


def _builtin_run(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    for name in ("checkpoints/step-000010.pt", "checkpoints/step-000020.pt", "policy.pt"):
        (run / name).write_bytes(name.encode())
    write_manifest(run, {"recipe": {"steps": 30, "checkpoint_every": 10}}, "checkpoints", "policy.pt")
    return run


def test_a_builtin_run_keeps_its_checkpoints_and_its_final_model(tmp_path):
    run = _builtin_run(tmp_path)
    assert run_models(run / "manifest.json") == [
        (10, run.resolve() / "checkpoints" / "step-000010.pt"),
        (20, run.resolve() / "checkpoints" / "step-000020.pt"),
        (30, run.resolve() / "policy.pt"),
    ]


def test_a_trl_run_keeps_checkpoint_directories_and_names_its_final_model(tmp_path):
    run = tmp_path / "run"
    for name in ("checkpoints/step-000002/model.safetensors", "checkpoints/step-000002/config.json", "model/x"):
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_text(name)
    record = {"recipe": {"steps": 4}, "checkpoint": str((run / "model").resolve())}
    write_manifest(run, record, "checkpoints", "model")
    assert run_models(run / "manifest.json") == [
        (2, run.resolve() / "checkpoints" / "step-000002"),
        (4, (run / "model").resolve()),
    ]


def test_a_final_model_outside_the_run_is_refused(tmp_path):
    run = tmp_path / "run"
    (run / "model").mkdir(parents=True)
    (run / "model" / "x").write_text("x")
    write_manifest(run, {"recipe": {"steps": 4}, "checkpoint": str(tmp_path / "elsewhere")}, "model")
    with pytest.raises(BadFile, match="checkpoint: expected the path of a checkpoint inside"):
        run_models(run / "manifest.json")


def test_the_table_reads_the_evaluations_it_is_given_not_leftovers_beside_them(tmp_path):
    """A renamed arm's old curve folder stays on disk; the workflow passes only the current runs' manifests."""
    for arm in ("kept", "renamed_away"):
        scores = pd.DataFrame(dict(arm=arm, seed=1, step=[4], benchmark="a", domain="math", item=0, score=1.0))
        directory = tmp_path / "curves" / arm / "seed-1"
        directory.mkdir(parents=True)
        scores.to_parquet(directory / "scores.parquet", index=False)
        write_manifest(directory, {}, "scores.parquet")
    assert set(read_curves([tmp_path / "curves"]).arm) == {"kept", "renamed_away"}  # a directory: all of it
    assert set(read_curves([tmp_path / "curves" / "kept" / "seed-1" / "manifest.json"]).arm) == {"kept"}


def test_learning_curves_build_under_a_sequential_design(tmp_path):
    """The runs are known only after the last look: the target waits for them instead of failing the DAG."""
    snakemake_dry_run(tmp_path, TINY_SEQUENTIAL, "all", "learning_curves")


def test_an_altered_checkpoint_is_named_before_anything_is_evaluated(tmp_path):
    run = _builtin_run(tmp_path)
    (run / "checkpoints" / "step-000020.pt").write_bytes(b"altered")
    with pytest.raises(BadFile, match="step-000020.pt"):
        run_models(run / "manifest.json")


def test_curve_summaries_by_hand():
    """Two benchmarks in math, one in logic; the primary summary is the mean of the domain means."""
    rows = []
    for step, right in ((5, {"a": [1, 0], "b": [1, 1], "c": [0, 0]}), (10, {"a": [1, 1], "b": [1, 1], "c": [1, 0]})):
        for benchmark, scores in right.items():
            domain = "logic" if benchmark == "c" else "math"
            for item, score in enumerate(scores):
                rows.append(
                    dict(arm="x", seed=1, step=step, benchmark=benchmark, domain=domain, item=item, score=score)
                )
    curves = pd.DataFrame(rows)
    base = curves[curves.step == 5].drop(columns="step").assign(arm="base", seed=0)
    table = curve_summaries(curves, base).set_index(["step", "summary"]).value
    assert table[5, "math"] == 0.75 and table[5, "logic"] == 0 and table[5, "domain_balanced"] == 0.375
    assert table[10, "math"] == 1 and table[10, "logic"] == 0.5 and table[10, "domain_balanced"] == 0.75
    assert table[0, "domain_balanced"] == 0.375  # the base at step 0


def test_the_curves_carry_each_runs_compute_ledger_beside_the_step(tmp_path):
    """A run's ledger at each kept step (its ledger.parquet, read only where its manifest records it), 0 at the base's
    step 0; a run without a ledger (the command backend's) gets NaN, not another run's numbers."""
    from armlab.contract import LEDGER
    from armlab.evals.curves import run_ledger

    run = _builtin_run(tmp_path)
    assert run_ledger(run / "manifest.json").columns.empty
    log = pd.DataFrame({"step": [10, 20, 30], **{c: [1.0 * i, 2.0 * i, 3.0 * i] for i, c in enumerate(LEDGER, 1)}})
    log.to_parquet(run / "ledger.parquet", index=False)
    assert run_ledger(run / "manifest.json").columns.empty  # a stray file the run did not record is not read
    write_manifest(run, {"recipe": {"steps": 30}}, "checkpoints", "policy.pt", "ledger.parquet")
    ledger = run_ledger(run / "manifest.json")
    assert ledger.loc[20, "cum_flops"] == 2.0 * 6 and list(ledger.columns) == list(LEDGER)
    rows = [
        dict(arm=arm, seed=1, step=step, benchmark="a", domain="math", item=0, score=1.0, **extra)
        for arm, steps in (("builtin", (10, 20)), ("trl", (10, 20)))
        for step in steps
        for extra in [ledger.loc[step].to_dict() if arm == "builtin" else {}]
    ]
    curves = pd.DataFrame(rows)
    base = curves[curves.step == 10].drop(columns=["step", *LEDGER]).assign(arm="base", seed=0).iloc[:1]
    table = curve_summaries(curves, base)
    assert list(table.columns) == ["arm", "seed", "step", "summary", "value", *LEDGER]
    builtin = table[(table.arm == "builtin") & (table.summary == "math")].set_index("step")
    assert builtin.loc[20, "cum_prompts"] == 2.0 and builtin.loc[10, "cum_flops"] == 6.0
    assert (builtin.loc[0, list(LEDGER)] == 0).all()
    assert table[(table.arm == "trl") & (table.step > 0)][list(LEDGER)].isna().all().all()


def test_an_arm_of_a_backend_without_checkpoints_has_no_curve(tmp_path):
    config = yaml.safe_load(TINY.read_text())
    template = ["trainer", "{output_dir}", "{arm}", "{seed}", "{data_policy}"]  # never run: a dry run
    config.update(backend="command", command={"template": template, "checkpoint": "model", "gpus": 0, "eval_gpus": 0})
    path = tmp_path / "command.yaml"
    path.write_text(yaml.safe_dump(config))
    refusal = r"arms\.\w+: backend command keeps no intermediate checkpoints, so it has no curve"
    with pytest.raises(AssertionError, match=refusal):
        snakemake_dry_run(tmp_path, path, "learning_curves")
    snakemake_dry_run(tmp_path, path)  # its default target is fine
