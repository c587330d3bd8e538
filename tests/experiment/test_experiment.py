"""armlab.experiment: the whole config checked before any job, and the run plan the workflow's rules are made of.

The rules themselves are exercised by the dry-run and workflow tests; here the plan is called directly.
"""

import copy
import re
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from armlab import experiment, layout
from armlab.configfile import ConfigError
from armlab.experiment import locks
from armlab.experiment.plan import RunPlan
from armlab.experiment.validate import load_config
from armlab.training.backends import BACKENDS

DEMO = REPO / "config" / "config.yaml"
PARITY = REPO / "config" / "experiments" / "backend_parity.yaml"
SEQUENTIAL = REPO / "config" / "experiments" / "sequential.yaml"


@pytest.fixture(scope="module")
def demo():
    return RunPlan(load_config([DEMO]))


@pytest.fixture(scope="module")
def parity():
    """Arms of two backends: builtin and trl, the TRL arms starting from the builtin base's export."""
    return RunPlan(load_config([PARITY]))


def test_every_arm_runs_at_every_seed_and_the_sampled_base_is_evaluated_at_each(demo):
    config = demo.config
    assert demo.out == f"results/{config['experiment']}"
    assert demo.fixed_runs == [(arm, seed) for arm in config["arms"] for seed in config["seeds"]]
    assert config["eval"]["temperature"] > 0 and not demo.sequential
    assert demo.base_runs(demo.fixed_runs) == [("base", seed) for seed in config["seeds"]]
    first = demo.fixed_runs[0]
    assert demo.per_run("evals", "scores.parquet", [first], evaluated=True) == [
        f"{demo.out}/evals/base/seed-{first[1]}/scores.parquet",
        f"{demo.out}/evals/{first[0]}/seed-{first[1]}/scores.parquet",
    ]
    # a greedy evaluation gives the base the same answers at every seed: once, at seed 0
    greedy = RunPlan(load_config([DEMO], {"eval": {"temperature": 0.0, "samples": 1, "pass_k": []}}))
    assert greedy.base_runs(greedy.fixed_runs) == [("base", 0)]


def test_paths_are_the_layouts_and_patterns_keep_their_wildcards(demo):
    assert demo.job_dir("runs") == f"{demo.out}/runs/{{arm}}/seed-{{seed}}"
    assert demo.job_log("evals", "grpo", 3) == f"{demo.out}/logs/eval/grpo/seed-3.log"
    assert demo.job_dir("curves", "grpo", 3) == layout.job_dir(demo.out, "curves", "grpo", 3)
    outputs = demo.run_outputs(BACKENDS["builtin"])
    assert outputs["policy"] == (f"{demo.out}/runs/{{arm}}/seed-{{seed}}/policy.pt", False)


def test_a_builtin_run_is_evaluated_from_its_checkpoint(demo):
    assert demo.checkpoint_of("grpo", 2) == f"{demo.out}/runs/grpo/seed-2/policy.pt"
    assert demo.checkpoint_of("base", 0) == f"{demo.out}/base/policy.pt"
    assert demo.checkpoint_args("grpo", "x/policy.pt") == "--model armlab-builtin --checkpoint x/policy.pt"
    assert demo.eval_resource("mem_mb") == demo.eval_resources["builtin"]["mem_mb"]  # one backend: a constant


def test_arms_of_two_backends_get_their_own_checkpoints_resources_and_rules(parity):
    arms = parity.arm_backends
    assert set(arms.values()) == {"builtin", "trl"}
    trl_arm = next(arm for arm, name in arms.items() if name == "trl")
    builtin_arm = next(arm for arm, name in arms.items() if name == "builtin")
    # a TRL run is evaluated from its manifest (its model is a directory), by lm-eval's hf model
    assert parity.checkpoint_of(trl_arm, 1) == f"{parity.out}/runs/{trl_arm}/seed-1/manifest.json"
    assert parity.checkpoint_args(trl_arm, "m.json") == "--model hf --run-manifest m.json"
    # the base is the builtin's, scored by its own model; the TRL runs start from its export (trl.model: builtin_base)
    assert parity.checkpoint_of("base", 0) == f"{parity.out}/base/policy.pt" and not parity.exports_base
    assert parity.checkpoint_args("base", "p.pt") == "--model armlab-builtin --checkpoint p.pt"
    assert "hf_base" in parity.reads["trl"] and "hf_base" not in parity.reads["builtin"]
    resource = parity.eval_resource("mem_mb")
    assert resource(trl_arm) == parity.eval_resources["trl"]["mem_mb"]
    assert resource("base") == resource(builtin_arm) == parity.eval_resources["builtin"]["mem_mb"]
    # each train rule's wildcard constraint matches its own arms exactly, never a prefix or another's
    for name in ("builtin", "trl"):
        pattern = re.compile(parity.arms_pattern(name))
        assert {arm for arm in arms if pattern.fullmatch(arm)} == {a for a, n in arms.items() if n == name}
        assert not any(pattern.fullmatch(arm + "x") for arm in arms)


def test_results_built_on_a_damaged_job_lead_back_to_it(demo):
    out = demo.out
    assert demo.results_built_on(f"{out}/runs/grpo/seed-2") == [
        Path(out, "scores.parquet"),
        *(
            Path(out, stage, "grpo", "seed-2", name)
            for stage in ("evals", "curves")
            for name in ("scores.parquet", "manifest.json")
        ),
    ]
    assert demo.results_built_on(f"{out}/base") == [
        Path(out, "scores.parquet"),
        *(
            Path(out, stage, "base", f"seed-{seed}", name)
            for seed in demo.config["seeds"]
            for stage in ("evals", "curves")
            for name in ("scores.parquet", "manifest.json")
        ),
    ]
    assert demo.results_built_on(f"{out}/evals/grpo/seed-2") == [Path(out, "scores.parquet")]
    assert demo.results_built_on(f"{out}/data") == []


def test_curves_need_every_arms_backend_to_keep_checkpoints(demo):
    assert demo.kept_models("grpo") >= 1
    runs = demo.fixed_runs[:2]
    assert demo.curve_manifests(runs) == [f"{demo.out}/curves/{arm}/seed-{seed}/manifest.json" for arm, seed in runs]
    plan = copy.copy(demo)
    plan.arm_backends = {**demo.arm_backends, "grpo": "command"}
    with pytest.raises(ConfigError, match=r"^arms\.grpo: backend command keeps no intermediate checkpoints"):
        plan.curve_manifests(runs)


def test_a_sequential_design_has_no_fixed_runs():
    plan = RunPlan(load_config([SEQUENTIAL]))
    assert plan.sequential and plan.fixed_runs == [] and plan.analysis.design.initial == 4


def test_load_merges_files_then_overrides_and_checks_the_whole_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = experiment.load([DEMO], {"seeds": [1, 2]})
    assert config["seeds"] == [1, 2] and config == load_config([DEMO], {"seeds": [1, 2]})
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"analysis": {"alpha": 2}}))
    with pytest.raises((ConfigError, ValueError), match=rf"{bad}.*analysis.alpha"):
        experiment.load([DEMO, bad])
    plan_typo = tmp_path / "plan.yaml"
    plan_typo.write_text(yaml.safe_dump({"plan": {"sdd": 0.1}}))
    with pytest.raises((ConfigError, ValueError), match=r"plan"):
        experiment.load([DEMO, plan_typo])


def test_load_refuses_a_sequential_design_changed_after_its_first_wave(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = experiment.load([SEQUENTIAL])
    locks.write_design_lock(layout.experiment_dir(config["experiment"]), config)
    assert experiment.load([SEQUENTIAL]) == config  # unchanged: allowed
    with pytest.raises((ConfigError, ValueError), match=r"design"):
        experiment.load([SEQUENTIAL], {"seeds": {**config["seeds"], "max": 14}})


def test_with_trl_arms_only_the_base_is_the_builtin_base_exported(parity):
    """trl.model: builtin_base in an experiment of TRL arms only: arm base is the export, scored by lm-eval's hf."""
    trl = {key: value for key, value in parity.config["arms"]["trl"].items() if key != "backend"}
    overrides = {
        "backend": "trl",
        "arms": {"trl": trl, "trl_b": trl},
        "comparisons": [{"family": "f", "reference": "trl", "arms": ["trl_b"]}],
        "predictions": [],
    }
    plan = RunPlan(load_config([PARITY], overrides))
    assert plan.exports_base and plan.base_runs([("trl", 1)]) == [("base", 0)]  # greedy evaluation: once
    assert plan.checkpoint_of("base", 0) == f"{plan.out}/base_hf/manifest.json"
    assert plan.checkpoint_args("base", "m.json") == "--model hf --run-manifest m.json"


def test_the_rescore_after_the_analysis_runs_only_when_the_config_names_verifiers(demo):
    """analysis.verifiers adds rule rescore's table to the report's inputs; without it nothing changes."""
    assert demo.rescored == []
    config = copy.deepcopy(demo.config)
    config["analysis"] = {**config["analysis"], "verifiers": ["boxed", "last_number"]}
    plan = RunPlan(config)
    assert plan.rescored == [plan.rescore_outputs["sensitivity"]] == [f"{plan.out}/analysis/verifier_sensitivity.csv"]
    assert plan.rescore_outputs["manifest"] == f"{plan.out}/{layout.RESCORED}/manifest.json"
