"""The checkpoints backend: runs trained elsewhere found by pattern, refused with one line naming the run and the path
before any job, recorded (every file's size and sha256), read back by the evaluation, and found changed."""

import argparse
import hashlib
import itertools
import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import TINY, tree_digest

from armlab import experiment
from armlab.configfile import ConfigError
from armlab.evals.curves import run_models
from armlab.evals.run import checkpoint_to_evaluate, evaluation_stream
from armlab.experiment.plan import RunPlan
from armlab.experiment.record_checkpoints import record
from armlab.experiment.stages import stage_config
from armlab.experiment.validate import load_config
from armlab.files import BadFile
from armlab.training.backends import checkpoints
from armlab.training.recipe import resolve_arm

ARMS = ("grpo", "dr_grpo")
SEEDS = (1, 2)
STEPS = (5, 10)


def write_model(folder, weights=b"weights"):
    """A Hugging Face model folder as the check reads it: config, weights, tokenizer (no model loads it here)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 1}))
    (folder / "model.safetensors").write_bytes(weights)
    (folder / "tokenizer.json").write_text("{}")
    return folder


@pytest.fixture
def grid(tmp_path):
    """A grid trained elsewhere: ckpts/<arm>/seed-<seed>/ with global_step_<n>/hf every 5 steps (the last one the
    final model) and a metrics.jsonl each, a base model, and the config that points at them."""
    root = tmp_path / "ckpts"
    for arm in ARMS:
        for seed in SEEDS:
            for step in STEPS:
                write_model(root / arm / f"seed-{seed}" / f"global_step_{step}" / "hf", f"{arm}{seed}{step}".encode())
            log = [{"step": s, "reward": s / 10, "cum_flops": 1e9 * s} for s in range(1, 11)]
            (root / arm / f"seed-{seed}" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    write_model(root / "base")
    config = yaml.safe_load(TINY.read_text())
    config.update(
        backend="checkpoints",
        checkpoints={
            "steps": f"{root}/{{arm}}/seed-{{seed}}/global_step_{{step}}/hf",
            "base": str(root / "base"),
            "step_log": {"kind": "jsonl", "pattern": f"{root}/{{arm}}/seed-{{seed}}/metrics.jsonl"},
        },
        arms={"grpo": {"description": "GRPO on verl"}, "dr_grpo": {"claims": {"estimator": "dr_grpo", "lr": 1e-6}}},
        comparisons=[{"family": "estimators", "reference": "grpo", "arms": ["dr_grpo"]}],
    )
    for key in ("model", "base", "recipe"):
        config.pop(key)
    return root, config


def _load(tmp_path, config):
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return experiment.load([path])


def test_a_grid_trained_elsewhere_validates_with_plain_arms_and_narrow_views(tmp_path, grid):
    root, raw = grid
    config = _load(tmp_path, raw)
    assert resolve_arm(config, "dr_grpo") == resolve_arm(config, "grpo")  # claims change no recipe
    train, evaluation = stage_config(config, "train", "grpo"), stage_config(config, "eval")
    # the run job's view: its patterns and limits, not the base (rule record_base) nor the evaluation's streams
    assert set(train["checkpoints"]) == {"steps", "step_log", "limits"}
    assert evaluation["checkpoints"] == {}  # a new pattern or step log reruns no evaluation
    plan = RunPlan(config)
    # one base checkpoint, recorded once (seed 0), evaluated at every seed under sampling (its streams pair by seed)
    assert plan.base_runs(plan.fixed_runs) == [("base", 1), ("base", 2)]
    assert plan.recorded("base") and plan.recorded("grpo")
    assert plan.checkpoint_args("base", plan.checkpoint_of("base", 0)) == (
        "--model hf --run-manifest results/tiny/runs/base/seed-0/manifest.json"
    )
    assert plan.kept_models("grpo") == len(STEPS) and plan.curve_manifests([("grpo", 1)])
    assert checkpoints.step_paths(config["checkpoints"], "grpo", 1) == [
        (step, f"{root}/grpo/seed-1/global_step_{step}/hf") for step in STEPS
    ]


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("recipe_key", {"lr": 0.1}, r"arms\.grpo\.lr: the checkpoints backend trains nothing"),
        ("claims", {"claims": {"lr_typo": 1}}, r"arms\.grpo\.claims\.lr_typo: not a recipe key"),
        ("pattern", {"steps": "x/{arm}/global_step_{step}"}, r"checkpoints\.steps: .* \{seed\}"),
        ("brackets", {"pattern": "x/{arm}/[ab]/{seed}"}, r"checkpoints\.pattern: .* no other braces or \[ \]"),
        ("sequential", {"seeds": {"initial": 2, "wave": 1, "max": 3}}, r"seeds: a sequential design adds seeds"),
    ],
)
def test_a_config_the_backend_cannot_read_is_refused_naming_the_key(tmp_path, grid, key, value, match):
    _, raw = grid
    if key in ("recipe_key", "claims"):
        raw["arms"]["grpo"] = value
    elif key == "sequential":
        raw.update(value)
    else:
        raw["checkpoints"] = {**raw["checkpoints"], **value}
    with pytest.raises(ConfigError, match=match):
        _load(tmp_path, raw)


def test_description_and_claims_belong_to_runs_made_elsewhere(tmp_path):
    raw = yaml.safe_load(TINY.read_text())
    raw["arms"]["grpo"] = {"description": "the reference"}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=r"arms\.grpo\.description: only the arms of runs trained elsewhere"):
        load_config([path])


def test_a_numerics_control_of_runs_made_elsewhere_changes_their_evaluation_only(tmp_path, grid):
    """armlab trains nothing for the checkpoints backend, so a control's threads or capability would change nothing:
    refused naming the key (an evaluation's batch size or engine is the control's to change)."""
    _, raw = grid
    raw["arms"]["grpo_t2"] = {"numerics": {"threads": 2}}
    raw["comparisons"].append({"family": "numerics", "reference": "grpo", "arms": ["grpo_t2"]})
    with pytest.raises(
        ConfigError,
        match=r"arms\.grpo_t2\.numerics\.threads: armlab does not set the threads and "
        r"kernels of the checkpoints backend's training; its controls change the evaluation only",
    ):
        _load(tmp_path, raw)


def _fifo(root):
    os.mkfifo(root / "grpo/seed-2/global_step_10/hf/extra.bin")


def _loop(root):
    os.symlink("..", root / "grpo/seed-2/global_step_10/hf/parent")


def _self_link(root):
    os.symlink("me.bin", root / "grpo/seed-2/global_step_10/hf/me.bin")


def _device(root):
    os.symlink("/dev/zero", root / "grpo/seed-2/global_step_10/hf/zeros.bin")


def _second_match(root):
    write_model(root / "grpo/seed-2/global_step_10/hf2")


BAD_INPUTS = {
    # the list: each one line naming the run (arm, seed) and the path
    "missing checkpoint": (
        lambda root: shutil.rmtree(root / "grpo/seed-2/global_step_10/hf"),
        {},
        r"checkpoints\.pattern: run \(grpo, seed 2\): \S+/grpo/seed-2/global_step_10/hf: no checkpoint there; "
        r"on disk for arm grpo: seed\(s\) 1",
    ),
    "not a model": (
        lambda root: (root / "grpo/seed-2/global_step_10/hf/model.safetensors").unlink(),
        {},
        r"checkpoints\.pattern: run \(grpo, seed 2\): \S+/grpo/seed-2/global_step_10/hf: no weights",
    ),
    "no config": (
        lambda root: (root / "dr_grpo/seed-1/global_step_5/hf/config.json").unlink(),
        {},
        r"checkpoints\.steps: run \(dr_grpo, seed 1\): \S+/dr_grpo/seed-1/global_step_5/hf: no config\.json",
    ),
    "arm with no match": (
        lambda root: None,
        {"arms": {"grpo": {}, "ppo": {}}},
        r"checkpoints\.steps: run \(ppo, seed 1\): \S+/ppo/seed-1/global_step_\{step\}/hf: matches no checkpoint; "
        r"on disk: arm\(s\) dr_grpo, grpo",
    ),
    "seed with no match": (
        lambda root: None,
        {"seeds": [1, 2, 3]},
        r"checkpoints\.steps: run \(grpo, seed 3\): \S+/grpo/seed-3/global_step_\{step\}/hf: matches no checkpoint; "
        r"on disk for arm grpo: seed\(s\) 1, 2",
    ),
    "two matches": (
        _second_match,
        {"pattern": "{root}/{arm}/seed-{seed}/global_step_10/hf*"},
        r"checkpoints\.pattern: run \(grpo, seed 2\): \S+/grpo/seed-2/global_step_10/hf\*: 2 folders match "
        r"\(\S+/hf, \S+/hf2\)",
    ),
    "step pattern matching nothing": (
        lambda root: None,
        {"steps": "{root}/{arm}/seed-{seed}/step-{step}"},
        r"checkpoints\.steps: run \(grpo, seed 1\): \S+/grpo/seed-1/step-\{step\}: matches no checkpoint; "
        r"it matches no run on disk",
    ),
    "symlink loop": (
        _loop,
        {},
        r"checkpoints\.pattern: run \(grpo, seed 2\): \S+/global_step_10/hf/parent/hf: a link back to a folder already "
        r"read \(a loop of symbolic links\)",
    ),
    "self link": (
        _self_link,
        {},
        r"checkpoints\.pattern: run \(grpo, seed 2\): \S+/global_step_10/hf/me\.bin: a loop of symbolic links",
    ),
    "FIFO": (
        _fifo,
        {},
        r"checkpoints\.pattern: run \(grpo, seed 2\): \S+/hf/extra\.bin: is a FIFO \(named pipe\) where a file of "
        r"the model should be",
    ),
    "device": (
        _device,
        {},
        r"checkpoints\.pattern: run \(grpo, seed 2\): \S+/hf/zeros\.bin: is a device where a file of the model "
        r"should be",
    ),
    "missing shard": (
        lambda root: (root / "grpo/seed-2/global_step_10/hf/model.safetensors.index.json").write_text(
            json.dumps({"weight_map": {"a": "model.safetensors", "b": "model-00002-of-00002.safetensors"}})
        ),
        {},
        r"checkpoints\.pattern: run \(grpo, seed 2\): \S+/hf/model\.safetensors\.index\.json: names shard "
        r"model-00002-of-00002\.safetensors, which is not in the folder",
    ),
    "no tokenizer": (
        lambda root: (root / "grpo/seed-2/global_step_10/hf/tokenizer.json").unlink(),
        {},
        r"checkpoints\.pattern: run \(grpo, seed 2\): \S+/grpo/seed-2/global_step_10/hf: no tokenizer",
    ),
    "dangling link": (
        lambda root: os.symlink("gone.bin", root / "grpo/seed-2/global_step_10/hf/shard.bin"),
        {},
        r"checkpoints\.pattern: run \(grpo, seed 2\): \S+/hf/shard\.bin: a symbolic link to gone\.bin, which does "
        r"not exist",
    ),
    "missing step log": (
        lambda root: (root / "dr_grpo/seed-1/metrics.jsonl").unlink(),
        {},
        r"checkpoints\.step_log\.pattern: run \(dr_grpo, seed 1\): \S+/dr_grpo/seed-1/metrics\.jsonl: step log not "
        r"found",
    ),
    "larger than limits": (
        lambda root: None,
        {"limits": {"checkpoint_bytes": 20}},
        r"checkpoints\.steps: run \(grpo, seed 1\): \S+/grpo/seed-1/global_step_5/hf: more than 20 bytes, above "
        r"limits\.checkpoint_bytes",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_each_bad_input_is_refused_in_one_line_naming_the_run_and_the_path(tmp_path, grid, case):
    root, raw = grid
    damage, change, match = BAD_INPUTS[case]
    raw["checkpoints"]["pattern"] = f"{root}/{{arm}}/seed-{{seed}}/global_step_10/hf"
    raw["checkpoints"]["final_step"] = 10
    for key, value in change.items():
        target = raw["checkpoints"] if key in ("pattern", "steps") else raw
        target[key] = value.replace("{root}", str(root)) if isinstance(value, str) else value
    if "arms" in change:
        raw["comparisons"] = [{"family": "estimators", "reference": "grpo", "arms": ["ppo"]}]
    damage(root)
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, raw)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(str(tmp_path / "grid.yaml"))
    assert re.search(match, message), message


def test_the_final_checkpoints_step_is_known_and_its_own(tmp_path, grid):
    root, raw = grid
    for seed in SEEDS:
        write_model(root / f"grpo/seed-{seed}/final")
        write_model(root / f"dr_grpo/seed-{seed}/final")
    raw["checkpoints"]["pattern"] = f"{root}/{{arm}}/seed-{{seed}}/final"
    with pytest.raises(ConfigError, match=r"checkpoints\.final_step: run \(grpo, seed 1\): the final checkpoint "):
        _load(tmp_path, raw)
    raw["checkpoints"]["final_step"] = 10
    with pytest.raises(ConfigError, match=r"checkpoints\.final_step: run \(grpo, seed 1\): step 10 is also \S+/"):
        _load(tmp_path, raw)
    raw["checkpoints"]["final_step"] = 15
    paths = checkpoints.step_paths(_load(tmp_path, raw)["checkpoints"], "grpo", 1)
    assert paths == [(5, f"{root}/grpo/seed-1/global_step_5/hf"), (10, f"{root}/grpo/seed-1/global_step_10/hf"),
                     (15, f"{root}/grpo/seed-1/final")]  # fmt: skip


def test_the_record_holds_every_files_sha256_and_the_evaluation_checks_them(tmp_path, grid):
    root, raw = grid
    config = _load(tmp_path, raw)
    before = tree_digest(root)
    out = tmp_path / "runs" / "grpo" / "seed-1"
    manifest = record(stage_config(config, "train", "grpo"), "grpo", 1, out)
    assert tree_digest(root) == before  # nothing written where the checkpoints are
    saved = json.loads((out / checkpoints.RECORD).read_text())
    assert [m["step"] for m in saved["models"]] == list(STEPS)
    for model in saved["models"]:
        for name, entry in model["files"].items():
            content = (root / "grpo/seed-1" / f"global_step_{model['step']}" / "hf" / name).read_bytes()
            assert entry["sha256"] == hashlib.sha256(content).hexdigest() and entry["bytes"] == len(content)
        lines = "".join(f"{n}\0{e['bytes']}\0{e['sha256']}\n" for n, e in sorted(model["files"].items()))
        assert model["sha256"] == hashlib.sha256(lines.encode()).hexdigest()
    assert manifest["checkpoint"] == str(root / "grpo/seed-1/global_step_10/hf")
    assert manifest["checkpoint_sha256"] == saved["models"][-1]["sha256"] and manifest["trained_elsewhere"]
    assert manifest["description"] == "GRPO on verl" and manifest["ledger"] == "the step log"
    ledger = pd.read_parquet(out / "ledger.parquet")
    assert list(ledger.columns) == ["step", "cum_flops"] and ledger.cum_flops.iloc[-1] == 1e10
    steps = pd.read_parquet(out / "steps.parquet")
    assert list(steps.columns[:5]) == ["experiment", "arm", "seed", "step", "reward"] and len(steps) == 10
    # the evaluation reads the models the record names, each file checked first
    models = checkpoints.recorded_models(out / "manifest.json")
    assert [(m.step, m.path) for m in models] == [(s, root / f"grpo/seed-1/global_step_{s}/hf") for s in STEPS]
    weights = root / "grpo/seed-1/global_step_5/hf/model.safetensors"
    weights.write_bytes(b"changed")
    with pytest.raises(BadFile, match=rf"{re.escape(str(weights))}: sha256 does not match .* changed since it was"):
        checkpoints.recorded_models(out / "manifest.json")


def test_a_run_without_ledger_totals_says_its_ledger_is_unavailable(tmp_path, grid):
    root, raw = grid
    log = root / "grpo/seed-1/metrics.jsonl"
    log.write_text("".join(json.dumps({"step": s, "reward": 0.5}) + "\n" for s in range(1, 4)))
    config = _load(tmp_path, raw)
    manifest = record(stage_config(config, "train", "grpo"), "grpo", 1, tmp_path / "run")
    assert manifest["ledger"].startswith("unavailable: the step log holds no running total")
    assert not (tmp_path / "run" / "ledger.parquet").exists()
    log.write_text("".join(json.dumps({"step": s, "cum_flops": 10.0 - s}) + "\n" for s in range(1, 4)))
    with pytest.raises(BadFile, match=r"metrics\.jsonl: cum_flops falls from step 1 to 2 or is negative"):
        record(stage_config(config, "train", "grpo"), "grpo", 1, tmp_path / "run")


def test_a_checkpoint_changed_after_it_was_recorded_is_found_and_its_evaluations_removed(tmp_path, grid, monkeypatch):
    root, raw = grid
    monkeypatch.chdir(tmp_path)
    config = _load(tmp_path, raw)
    plan = RunPlan(config)
    for arm, seed in [("base", 0), *[(a, s) for a in ARMS for s in SEEDS]]:
        view = stage_config(config, "train", "grpo" if arm == "base" else arm)  # as rule record_base reads it
        run_dir = tmp_path / plan.job_dir("runs", arm, seed)
        manifest = record(view, arm, seed, run_dir, path=root / "base" if arm == "base" else None)
        evaluated = plan.base_runs(plan.fixed_runs) if arm == "base" else [(arm, seed)]  # the base: at every seed
        for stage, (evaluated_arm, evaluated_seed) in itertools.product(("evals", "curves"), evaluated):
            job = tmp_path / plan.job_dir(stage, evaluated_arm, evaluated_seed)
            job.mkdir(parents=True)
            (job / "scores.parquet").write_bytes(b"")
            digests = {"checkpoint_sha256": manifest["checkpoint_sha256"]} if stage == "evals" else {}
            digests |= {"checkpoints": manifest["checkpoints"]} if stage == "curves" else {}
            (job / "manifest.json").write_text(json.dumps(digests))
    (tmp_path / plan.out / "scores.parquet").write_bytes(b"")
    assert plan.changed_records() == []
    # the same size, another content: the modification and change times tell
    weights = root / "dr_grpo/seed-2/global_step_10/hf/model.safetensors"
    weights.write_bytes(weights.read_bytes()[::-1])
    (root / "grpo/seed-1/global_step_5/hf/extra.json").write_text("{}")  # a file more
    changed = plan.changed_records()
    assert [reason for reason, _ in changed] == [
        f"run (grpo, seed 1): {root}/grpo/seed-1/global_step_5/hf/extra.json: new since it was recorded (size, "
        f"modification or change time)",
        f"run (dr_grpo, seed 2): {weights}: changed since it was recorded (size, modification or change time)",
    ]
    removed = {path.relative_to(plan.out).as_posix() for path in changed[1][1]}
    assert removed == {
        "runs/dr_grpo/seed-2/manifest.json",
        "runs/dr_grpo/seed-2/checkpoints.json",
        "scores.parquet",
        "evals/dr_grpo/seed-2/scores.parquet",
        "evals/dr_grpo/seed-2/manifest.json",
        "curves/dr_grpo/seed-2/scores.parquet",
        "curves/dr_grpo/seed-2/manifest.json",
    }
    # a step log that changed: the record and the curve, not the evaluation of the final checkpoint
    (root / "grpo/seed-2/metrics.jsonl").write_text(json.dumps({"step": 1, "reward": 0}) + "\n")
    reason, paths = plan.changed_records()[1]
    assert reason == f"run (grpo, seed 2): its step log {root}/grpo/seed-2/metrics.jsonl changed since it was recorded"
    assert {p.relative_to(plan.out).parts[0] for p in paths} == {"runs", "curves"}
    # an evaluation of other checkpoints than the record names now (a record rewritten while it ran): removed
    evaluation = Path(plan.job_dir("evals", "base", 2)) / "manifest.json"
    evaluation.write_text(json.dumps({"checkpoint_sha256": "0" * 64}))
    reason, paths = plan.changed_records()[0]
    assert reason.startswith(f"{evaluation.parent}: evaluated checkpoints other than {plan.job_dir('runs', 'base', 0)}")
    assert evaluation in paths


def test_the_evaluation_and_the_curves_read_the_checkpoints_a_record_names(tmp_path, grid):
    root, raw = grid
    raw["checkpoints"]["streams_of"] = "trained_there"
    config = _load(tmp_path, raw)
    out = tmp_path / "runs" / "grpo" / "seed-1"
    record(stage_config(config, "train", "grpo"), "grpo", 1, out)
    args = argparse.Namespace(checkpoint=None, hf_checkpoint=None, run_manifest=out / "manifest.json")
    assert checkpoint_to_evaluate(args) == root / "grpo/seed-1/global_step_10/hf"
    assert run_models(out / "manifest.json") == [(s, root / f"grpo/seed-1/global_step_{s}/hf") for s in STEPS]
    # the answers are drawn from the streams of the experiment that trained the runs, not this one's
    assert evaluation_stream(stage_config(config, "eval"), 1) == "trained_there/seed-1"
    del raw["checkpoints"]["streams_of"]
    assert evaluation_stream(stage_config(_load(tmp_path, raw), "eval"), 1) == "tiny/seed-1"
    # a final checkpoint without a step has no place on a curve
    raw["checkpoints"] = {"pattern": raw["checkpoints"]["steps"].replace("{step}", "10")}
    config = _load(tmp_path, raw)
    record(stage_config(config, "train", "grpo"), "grpo", 1, out)
    with pytest.raises(BadFile, match=r"manifest\.json: the final checkpoint's step is unknown"):
        run_models(out / "manifest.json")


def test_runs_without_intermediate_checkpoints_have_no_curve(tmp_path, grid):
    root, raw = grid
    raw["checkpoints"] = {"pattern": f"{root}/{{arm}}/seed-{{seed}}/global_step_10/hf"}
    plan = RunPlan(_load(tmp_path, raw))
    assert not plan.records_base and plan.base_runs(plan.fixed_runs) == []  # no checkpoints.base: no arm base
    with pytest.raises(ConfigError, match=r"arms\.grpo: backend checkpoints keeps no intermediate checkpoints, so "
                       r"it has no curve \(name them with checkpoints\.steps\)"):  # fmt: skip
        plan.curve_manifests([("grpo", 1)])
