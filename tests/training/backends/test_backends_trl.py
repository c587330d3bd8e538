"""The TRL backend: recipe → GRPOConfig mapping, rejection of what TRL cannot express, a tiny CPU run on a
randomly initialised Qwen2 with a locally built tokenizer, and its evaluation through lm-eval's ``hf`` model."""

import importlib.util
import os
import shutil
from pathlib import Path

import fork_server
import pandas as pd
import pytest
import yaml
from conftest import REPO, TINY, job_counts

from armlab.configfile import ConfigError
from armlab.contract import TRL_STEP_NAMES
from armlab.experiment.validate import load_config
from armlab.training.recipe import resolve_arm

# found, not imported: importing trl's GRPOConfig loads transformers and torch (2.4 s), which only the tests that
# build one need, in whichever worker runs them
if importlib.util.find_spec("trl") is None:
    if os.environ.get("CI") == "true":
        raise ImportError("trl is not installed")
    pytest.skip("TRL backend tests skipped: trl is not installed (they always run in CI)", allow_module_level=True)

from armlab.training.backends import trl_backend  # noqa: E402


def _trl_config(tmp_path, arms, comparisons=(), **recipe):
    config = yaml.safe_load(TINY.read_text())
    config.update(backend="trl", arms=arms, comparisons=list(comparisons))
    config["recipe"].update(recipe)
    path = tmp_path / "trl.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_estimator_arms_map_onto_grpo_config(tmp_path):
    from trl import GRPOConfig

    arms = {
        "grpo": {},
        "dr_grpo": {"estimator": "dr_grpo", "loss_agg": "seq-mean-token-sum-norm"},
        "nostd": {"estimator": {"name": "grpo", "norm_std": False}},
        "gspo": {"ratio_level": "sequence"},
        "reuse": {"updates_per_batch": 2},
    }
    config = load_config([_trl_config(tmp_path, arms)])
    kwargs = {
        arm: trl_backend.grpo_config_kwargs(resolve_arm(config, arm), "tiny", 1, str(tmp_path), 1) for arm in arms
    }
    assert (kwargs["grpo"]["scale_rewards"], kwargs["grpo"]["loss_type"]) == ("group", "dapo")
    # loss_type="dr_grpo" alone keeps the std division: Dr. GRPO also needs scale_rewards="none"
    assert (kwargs["dr_grpo"]["scale_rewards"], kwargs["dr_grpo"]["loss_type"]) == ("none", "dr_grpo")
    assert kwargs["nostd"]["scale_rewards"] == "none"
    assert kwargs["gspo"]["importance_sampling_level"] == "sequence"
    # a recipe step is one rollout batch; TRL counts the mu optimizer updates made on it
    steps = config["recipe"]["steps"]
    assert (kwargs["grpo"]["max_steps"], kwargs["reuse"]["max_steps"], kwargs["reuse"]["num_iterations"]) == (
        steps,
        2 * steps,
        2,
    )
    assert kwargs["grpo"]["per_device_train_batch_size"] == 8 * 4 and kwargs["grpo"]["num_generations"] == 4
    # checkpoints every checkpoint_every rollout batches: TRL counts optimizer steps, mu of them per batch
    every = config["recipe"]["checkpoint_every"]
    assert (kwargs["grpo"]["save_steps"], kwargs["reuse"]["save_steps"]) == (every, 2 * every)
    # arms sharing a seed share TRL's seed (prompt order); all arguments are accepted by GRPOConfig
    assert len({k["seed"] for k in kwargs.values()}) == 1
    args = GRPOConfig(**kwargs["dr_grpo"])
    assert (args.epsilon, args.beta, args.max_completion_length) == (0.2, 0.0, 5)


def test_policy_losses_and_batch_scaling_map_onto_grpo_config(tmp_path):
    from trl import GRPOConfig

    arms = {
        "grpo": {},
        "ppo_clip": {"policy_loss": "ppo_clip"},
        "clip_higher": {"policy_loss": {"name": "clip_higher", "clip_high": 0.28}},
        "dual_clip": {"policy_loss": "dual_clip", "loss_agg": "seq-mean-token-mean"},
        "cispo": {"policy_loss": {"name": "cispo", "clip_high": 4.0}},
        "sapo": {"policy_loss": {"name": "sapo", "tau_neg": 1.1}, "loss_agg": "seq-mean-token-mean"},
        "batch": {"estimator": "grpo_batch_std"},
        "gspo_higher": {"policy_loss": "clip_higher", "ratio_level": "sequence", "clip": 0.0003},
    }
    config = load_config([_trl_config(tmp_path, arms)])
    kwargs = {
        arm: trl_backend.grpo_config_kwargs(resolve_arm(config, arm), "tiny", 1, str(tmp_path), 1) for arm in arms
    }

    def loss_keys(arm):
        keys = ("loss_type", "epsilon", "epsilon_high", "delta", "sapo_temperature_pos", "sapo_temperature_neg")
        return {k: kwargs[arm][k] for k in keys if k in kwargs[arm]}

    # the default recipe's arguments are those of before the policy_loss key: no epsilon_high, no delta
    assert loss_keys("grpo") == loss_keys("ppo_clip") == {"loss_type": "dapo", "epsilon": 0.2}
    assert loss_keys("clip_higher") == {"loss_type": "dapo", "epsilon": 0.2, "epsilon_high": 0.28}
    assert loss_keys("dual_clip") == {"loss_type": "grpo", "epsilon": 0.2, "delta": 3.0}
    # TRL's cispo clamps the weight at epsilon_high itself (ScaleRL's ε_max, recommended 5.0) = 1 + clip_high
    assert loss_keys("cispo") == {"loss_type": "cispo", "epsilon": 0.2, "epsilon_high": 5.0}
    assert loss_keys("sapo") == {
        "loss_type": "sapo",
        "epsilon": 0.2,
        "sapo_temperature_pos": 1.0,
        "sapo_temperature_neg": 1.1,
    }
    assert kwargs["batch"]["scale_rewards"] == "batch" and kwargs["grpo"]["scale_rewards"] == "group"
    assert kwargs["gspo_higher"]["importance_sampling_level"] == "sequence"
    for arm in arms:  # every mapping is accepted by TRL's own config
        args = GRPOConfig(**kwargs[arm])
        assert args.loss_type == kwargs[arm]["loss_type"]
    assert GRPOConfig(**kwargs["dual_clip"]).delta == 3.0


def test_the_sampler_feeds_batch_scaled_advantages_to_adaptive_policies(tmp_path):
    import torch

    config = load_config([_trl_config(tmp_path, {"batch": {"estimator": "grpo_batch_std", "data_policy": "exp3"}})])
    recipe = resolve_arm(config, "batch")
    seen = {}
    sampler = trl_backend.StepSampler(["math"] * 40 + ["logic"] * 40, recipe, "tiny", 1)
    block = sampler.step_rows(1)
    sampler.policy.observe = lambda step, domains, rewards, advantages, prompt_ids: seen.update(a=advantages)
    rewards = [float(i % 3 == 0) for i in range(len(block) * 4)]
    sampler.feedback([], rewards)
    r = torch.tensor(rewards).view(len(block), 4)
    torch.testing.assert_close(seen["a"], (r - r.mean(1, keepdim=True)) / (r.std() + 1e-4))


@pytest.mark.parametrize(
    "arm, message",
    [
        (
            {"policy_loss": "gmpo", "loss_agg": "seq-mean-token-mean"},
            r"arms\.bad\.policy_loss: 'gmpo' is not implemented",
        ),
        ({"policy_loss": "clip_cov"}, r"arms\.bad\.policy_loss: 'clip_cov' is not implemented by TRL"),
        ({"policy_loss": "kl_cov"}, r"arms\.bad\.policy_loss: 'kl_cov' is not implemented by TRL"),
        ({"policy_loss": "gpg"}, r"arms\.bad\.policy_loss: 'gpg' is not implemented by TRL"),
        ({"policy_loss": "cispo", "loss_agg": "seq-mean-token-mean"}, r"arms\.bad\.loss_agg: TRL's 'cispo' loss"),
        ({"policy_loss": "sapo"}, r"arms\.bad\.loss_agg: TRL's 'sapo' loss aggregates seq-mean-token-mean only"),
        ({"policy_loss": {"name": "cispo", "clip_low": 0.2}}, r"arms\.bad\.policy_loss: TRL's cispo loss has no lower"),
        ({"policy_loss": {"name": "dual_clip", "clip_c": 1.1}}, r"arms\.bad\.policy_loss: dual_clip's clip_c 1\.1"),
        ({"loss_agg": "token-sum"}, r"arms\.bad\.loss_agg: 'token-sum' has no TRL loss_type"),
        ({"loss_agg": "seq-mean-token-sum"}, r"arms\.bad\.loss_agg: 'seq-mean-token-sum' has no TRL loss_type"),
        ({"estimator": {"name": "grpo_batch_std", "eps": 1e-6}}, r"arms\.bad\.estimator: estimator .* cannot be"),
    ],
)
def test_policy_losses_trl_cannot_express_are_rejected(tmp_path, arm, message):
    with pytest.raises(ConfigError, match=message) as err:
        load_config([_trl_config(tmp_path, {"grpo": {}, "bad": arm})])
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "arm, message",
    [
        ({"estimator": "rloo"}, r"arms\.bad\.estimator: estimator \{'name': 'rloo'\} cannot be expressed by TRL"),
        ({"data_policy": "difffilter"}, r"arms\.bad\.data_policy: 'difffilter' is not supported by the TRL backend"),
        ({"data_policy": "maxvar"}, r"arms\.bad\.data_policy: 'maxvar' is not supported by the TRL backend"),
        ({"data_policy": "ar"}, r"arms\.bad\.data_policy: 'ar' is not supported by the TRL backend"),
        ({"data_policy": "dapo"}, r"arms\.bad\.data_policy: 'dapo' is not supported by the TRL backend"),
        ({"data_policy": "greso"}, r"arms\.bad\.data_policy: 'greso' is not supported by the TRL backend"),
        ({"data_policy": "thompson"}, r"arms\.bad\.data_policy: 'thompson' is not supported by the TRL backend"),
        ({"stream": 1}, r"arms\.bad\.stream: the TRL backend draws TRL's own streams"),
    ],
)
def test_what_trl_cannot_express_is_rejected(tmp_path, arm, message):
    with pytest.raises(ConfigError, match=message):
        load_config([_trl_config(tmp_path, {"grpo": {}, "bad": arm})])


def test_the_trl_backend_runs_the_data_policies_whose_entries_say_so(tmp_path, monkeypatch):
    from armlab.training.data_policies import DATA_POLICIES

    config = load_config([_trl_config(tmp_path, {"grpo": {}, "static": {"data_policy": "static"}})])
    monkeypatch.setattr(DATA_POLICIES["difffilter"], "trl", "fixed")  # a planted entry: TRL support follows it
    monkeypatch.setattr(DATA_POLICIES["static"], "trl", None)
    monkeypatch.setattr(DATA_POLICIES["exp3"], "trl", "fixed")
    planted = dict(config, arms={"difffilter": {"data_policy": "difffilter"}, "exp3": {"data_policy": "exp3"}})
    trl_backend.check_recipe(resolve_arm(planted, "difffilter"))
    with pytest.raises(ValueError, match=r"'static' is not supported by the TRL backend \(supported: \[.*'difffilter'"):
        trl_backend.check_recipe(resolve_arm(config, "static"))
    assert not trl_backend.StepSampler(["math"] * 8, resolve_arm(planted, "exp3"), "tiny", 1).adaptive


def test_tiny_trl_run_is_evaluated_by_lm_eval_hf(tmp_path):
    from armlab.contract import COLUMNS
    from armlab.evals.lm_eval_tasks import write_task_configs
    from armlab.evals.run import evaluate
    from armlab.experiment.stages import stage_config
    from armlab.training import data

    config = load_config([_trl_config(tmp_path, {"grpo": {}})])
    data.write(config, tmp_path / "data")
    trl_backend.train(stage_config(config, "train", "grpo"), "grpo", 1, tmp_path / "data", tmp_path / "run")
    manifest = yaml.safe_load((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["grpo_config"]["num_generations"] == 4 and manifest["grpo_config"]["use_cpu"]
    steps = pd.read_parquet(tmp_path / "run" / "steps.parquet")
    assert list(steps.step) == [2, 4] and steps.reward.between(0, 1).all()
    # the builtin trainer's columns under the builtin names (docs/contracts.md), identity first
    assert list(steps.columns[:4]) == ["experiment", "arm", "seed", "step"]
    assert {"reward", "frac_zero_var", "loss", "clip_frac", "entropy", "response_len", "seconds"} <= set(steps.columns)
    assert not set(TRL_STEP_NAMES) & set(steps.columns) and steps.frac_zero_var.between(0, 1).all()
    view = stage_config(config, "eval")
    write_task_configs(view, tmp_path / "data", tmp_path / "tasks")
    scores = evaluate(view, tmp_path / "tasks", tmp_path / "run" / "model", "grpo", 1, tmp_path / "eval", model="hf")
    assert list(scores.columns) == COLUMNS and len(scores) == 4 * 20
    assert scores.score.between(0, 1).all()


def test_trl_keeps_intermediate_checkpoints_as_the_builtin_does(tmp_path, monkeypatch):
    """checkpoint_every: 2 of 4 steps keeps the step-2 model (checkpoints/step-000002, HF format): the model a
    2-step run of the same seed ends with, not the 4-step one."""
    import torch
    from transformers import AutoModelForCausalLM

    from armlab.analysis.inputs.steps import import_steps
    from armlab.experiment.stages import stage_config
    from armlab.training import data

    # reward noise flips verdicts by a hash, so the random tiny model's groups have advantages and it learns
    configs = {
        steps: load_config([_trl_config(tmp_path, {"grpo": {"reward_noise": 0.3}}, steps=steps)]) for steps in (4, 2)
    }
    data.write(configs[4], tmp_path / "data")
    keep = trl_backend.keep_checkpoints

    def keep_and_copy_the_trainer_state(trainer_dir, out, recipe, tokenizer):
        """TRL's own trainer_state.json of the step-2 checkpoint, kept for `armlab steps trl` below."""
        for state in trainer_dir.glob("checkpoint-*/trainer_state.json"):
            shutil.copy(state, tmp_path / f"trainer_state_{recipe.steps}_{state.parent.name}.json")
        return keep(trainer_dir, out, recipe, tokenizer)

    monkeypatch.setattr(trl_backend, "keep_checkpoints", keep_and_copy_the_trainer_state)
    for steps, config in configs.items():
        trl_backend.train(stage_config(config, "train", "grpo"), "grpo", 1, tmp_path / "data", tmp_path / f"run{steps}")
    run = tmp_path / "run4"
    # a real TRL trainer state through `armlab steps trl`: the first two rows of the step log the backend wrote
    state = tmp_path / "trainer_state_4_checkpoint-2.json"
    import_steps("trl", [("grpo", 1, state)], "tiny", {}, tmp_path / "imported")
    imported = pd.read_parquet(tmp_path / "imported" / "grpo" / "seed-1" / "steps.parquet")
    written = pd.read_parquet(run / "steps.parquet")
    assert {"reward", "frac_zero_var", "clip_frac", "loss"} <= set(imported) and len(imported) >= 1
    pd.testing.assert_frame_equal(imported, written[written.step <= 2][imported.columns], check_dtype=False)
    assert sorted(p.name for p in run.iterdir()) == [
        "checkpoints",
        "ledger.parquet",
        "manifest.json",
        "mixture.parquet",
        "model",
        "steps.parquet",
    ]
    assert [p.name for p in (run / "checkpoints").iterdir()] == ["step-000002"]
    assert not (tmp_path / "run2" / "checkpoints").exists()  # the last step's model is model/, as policy.pt
    manifest = yaml.safe_load((run / "manifest.json").read_text())
    assert {"checkpoints/step-000002/model.safetensors", "checkpoints/step-000002/tokenizer_config.json"} <= set(
        manifest["files"]
    )
    middle, two_steps, four_steps = (
        AutoModelForCausalLM.from_pretrained(path)
        for path in (run / "checkpoints" / "step-000002", tmp_path / "run2" / "model", run / "model")
    )
    assert all(torch.equal(a, b) for a, b in zip(middle.parameters(), two_steps.parameters()))
    assert not all(torch.equal(a, b) for a, b in zip(middle.parameters(), four_steps.parameters()))


def test_kept_checkpoints_are_named_by_rollout_batch_not_optimizer_step(tmp_path):
    """With two updates per batch TRL's checkpoint-4, -8 and -12 are batches 2, 4 and 6 (the last, whose model is
    model/, is dropped); TRL's optimizer and RNG state is left out, and the trainer's directory removed."""

    class Tokenizer:
        def save_pretrained(self, path):
            (Path(path) / "tokenizer.json").write_text("{}")

    trainer = tmp_path / "trainer"
    for step in (4, 8, 12):
        saved = trainer / f"checkpoint-{step}"
        saved.mkdir(parents=True)
        for name in ("model.safetensors", "config.json", "trainer_state.json", "rng_state.pth"):
            (saved / name).write_text(f"{step}")
    recipe = resolve_arm(load_config([_trl_config(tmp_path, {"grpo": {}})]), "grpo")
    recipe = recipe.replace(steps=6, updates_per_batch=2, checkpoint_every=2)
    kept = trl_backend.keep_checkpoints(trainer, tmp_path / "checkpoints", recipe, Tokenizer())
    assert kept == ["checkpoints/step-000002", "checkpoints/step-000004"]
    assert sorted(p.name for p in (tmp_path / "checkpoints" / "step-000004").iterdir()) == [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
    ]
    assert (tmp_path / "checkpoints" / "step-000004" / "model.safetensors").read_text() == "8"
    assert not trainer.exists()


def test_snakemake_dag_of_the_trl_backend(tmp_path):
    path = _trl_config(
        tmp_path,
        {"grpo": {}, "dr_grpo": {"estimator": "dr_grpo"}},
        comparisons=[{"family": "estimators", "reference": "grpo", "arms": ["dr_grpo"]}],
    )
    dry = fork_server.run_snakemake(
        ["-s", str(REPO / "Snakefile"), "--configfile", str(path), "--replace-workflow-config", "--cores", "2"]
        + ["-n", "results/tiny/scores.parquet"],
        tmp_path,
        timeout=120,
    )
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    # no builtin base policy; without trl.model there is no base arm to evaluate
    counts = job_counts(dry.stdout + dry.stderr)
    assert "base_policy" not in counts
    assert (counts["train"], counts["evaluate"]) == (4, 4)


def test_trl_sees_the_builtin_trainers_prompts_and_mixture(tmp_path):
    import datasets
    import numpy as np
    from trl import GRPOConfig

    from armlab.training import data
    from armlab.training.backends.hf_export import char_tokenizer, tiny_model
    from armlab.training.data import load_pools
    from armlab.training.rollouts import draw_prompts, step_seed

    config = load_config([_trl_config(tmp_path, {"grpo": {}, "static": {"data_policy": "static"}})])
    data.write(config, tmp_path / "data")
    pools = load_pools(tmp_path / "data")
    items = [item for domain in sorted(pools) for item in pools[domain]]
    dataset = datasets.Dataset.from_list(
        [{k: item[k] for k in ("prompt", "answer", "task", "domain", "id")} for item in items]
    )
    recipe = resolve_arm(config, "grpo")
    sampler = trl_backend.StepSampler(dataset["domain"], recipe, "tiny", 1)
    args = GRPOConfig(**trl_backend.grpo_config_kwargs(recipe, "tiny", 1, str(tmp_path / "trl"), 1))
    trainer = trl_backend.make_trainer_class()(
        model=tiny_model(config["model"], 0),
        reward_funcs=[trl_backend.make_reward(recipe, 1)],
        args=args,
        train_dataset=dataset,
        processing_class=char_tokenizer(),
        step_sampler=sampler,
    )
    first = next(iter(trainer.get_train_dataloader()))
    # the builtin trainer's first step: same generator, same draw, each prompt G times in a row
    rng = np.random.default_rng(step_seed("tiny", 1, "prompts", 1))
    expected = [item["id"] for item in draw_prompts(rng, pools, None, 8) for _ in range(4)]
    assert [row["id"] for row in first] == expected

    static = trl_backend.StepSampler(dataset["domain"], resolve_arm(config, "static"), "tiny", 1)
    for step in (1, 2, 3):
        domains = [dataset[i]["domain"] for i in static.step_rows(step)]
        assert sorted(domains.count(d) for d in set(domains)) == [2, 3, 3]  # 8 prompts over 3 domains
    assert len(static) == len(list(static)) == 4 * 8 * 4


def test_adaptive_mixtures_pass_trl_validation(tmp_path):
    arms = {name: {"data_policy": name} for name in ("reward_gap", "dump_ucb", "tscl", "exp3")}
    config = load_config([_trl_config(tmp_path, arms)])
    assert {arm: resolve_arm(config, arm).data_policy["name"] for arm in arms} == {arm: arm for arm in arms}


def _sampler_dataset(tmp_path, arms, **recipe):
    import datasets

    from armlab.training import data
    from armlab.training.data import load_pools

    config = load_config([_trl_config(tmp_path, arms, **recipe)])
    data.write(config, tmp_path / "data")
    pools = load_pools(tmp_path / "data")
    items = [item for domain in sorted(pools) for item in pools[domain]]
    dataset = datasets.Dataset.from_list(
        [{k: item[k] for k in ("prompt", "answer", "task", "domain", "id")} for item in items]
    )
    return config, dataset


@pytest.mark.parametrize("policy", ["reward_gap", "dump_ucb", "tscl", "exp3"])
def test_sampler_shares_follow_the_policy_fed_known_rewards(tmp_path, policy):
    import numpy as np
    import torch

    from armlab.training.data_policies import domain_counts, make_data_policy

    config, dataset = _sampler_dataset(tmp_path, {"arm": {"data_policy": policy}})
    recipe = resolve_arm(config, "arm")
    P, G = recipe.prompts_per_step, recipe.group_size
    sampler = trl_backend.StepSampler(dataset["domain"], recipe, "tiny", 1, ids=dataset["id"])
    domains = sorted(set(dataset["domain"]))
    # known rewards: math rollouts wrong in step 1 and right after, logic wrong, science alternating (learnable)
    known = {"math": [1.0] * G, "logic": [0.0] * G, "science": [1.0, 0.0] * (G // 2)}
    reference = make_data_policy(recipe.data_policy, domains)
    stream = iter(sampler)
    for step in (1, 2, 3):
        block = [next(stream) for _ in range(P * G)]
        rows = block[::G]
        assert block == [i for i in rows for _ in range(G)]
        assert set(sampler.history) == set(range(1, step + 1))  # lazy: the next step is not drawn yet
        shares = reference.domain_shares(step)
        np.testing.assert_allclose(sampler.history[step]["shares"], shares, rtol=0, atol=1e-12)
        assert rows == sampler.rows_for(step, shares)
        drawn = [dataset[i]["domain"] for i in rows]
        assert [drawn.count(d) for d in domains] == list(domain_counts(shares, P))
        rewards = torch.tensor([known[d] if (d, step) != ("math", 1) else [0.0] * G for d in drawn])
        advantages = (rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-4)
        reference.observe(step, drawn, rewards, advantages=advantages, prompt_ids=[dataset[i]["id"] for i in rows])
        sampler.feedback([dataset[i]["id"] for i in block], rewards.flatten().tolist())
    final = reference.domain_shares(4)
    assert not np.allclose(final, 1 / 3)  # the fed rewards moved the mixture
    if policy == "reward_gap":  # by hand: mean rewards (0, 2/3, 1/2), gaps to the best (2/3, 0, 1/6)
        expected = np.exp([2 / 3, 0.0, 1 / 6]) / np.exp([2 / 3, 0.0, 1 / 6]).sum()
        np.testing.assert_allclose(final, expected, atol=1e-12)
    block = [next(stream) for _ in range(P * G)]
    np.testing.assert_allclose(sampler.history[4]["shares"], final, atol=1e-12)
    with pytest.raises(RuntimeError, match="not the block the sampler drew for step 4"):
        sampler.feedback(["x"] * (P * G), [0.0] * (P * G))


def test_trl_dataloader_draws_a_step_only_when_it_is_needed(tmp_path):
    from trl import GRPOConfig

    from armlab.training.backends.hf_export import char_tokenizer, tiny_model

    config, dataset = _sampler_dataset(tmp_path, {"rg": {"data_policy": "reward_gap"}})
    recipe = resolve_arm(config, "rg")
    sampler = trl_backend.StepSampler(dataset["domain"], recipe, "tiny", 1, ids=dataset["id"])
    args = GRPOConfig(**trl_backend.grpo_config_kwargs(recipe, "tiny", 1, str(tmp_path / "trl"), 1))
    trainer = trl_backend.make_trainer_class()(
        model=tiny_model(config["model"], 0),
        reward_funcs=[trl_backend.make_reward(recipe, 1, sampler)],
        args=args,
        train_dataset=dataset,
        processing_class=char_tokenizer(),
        step_sampler=sampler,
    )
    batches = iter(trainer.get_train_dataloader())
    first = next(batches)
    assert len(first) == 8 * 4 and list(sampler.history) == [1]  # no pre-drawn step 2 (accelerate would)
    sampler.feedback([row["id"] for row in first], [0.0] * len(first))
    next(batches)
    assert list(sampler.history) == [1, 2]


def test_tiny_trl_run_adapts_the_reward_gap_mixture(tmp_path):
    import numpy as np
    import torch

    from armlab.experiment.stages import stage_config
    from armlab.training import data
    from armlab.training.data_policies import make_data_policy

    # reward noise flips verdicts by a hash, so the random tiny model still sees rewards that differ by domain
    config = load_config([_trl_config(tmp_path, {"rg": {"data_policy": "reward_gap", "reward_noise": 0.3}}, steps=3)])
    data.write(config, tmp_path / "data")
    trl_backend.train(stage_config(config, "train", "rg"), "rg", 1, tmp_path / "data", tmp_path / "run")
    mixture = pd.read_parquet(tmp_path / "run" / "mixture.parquet")
    domains = sorted(c.removeprefix("policy_share_") for c in mixture.columns if c.startswith("policy_share_"))
    assert list(mixture.step) == [1, 2, 3] and domains == ["logic", "math", "science"]
    shares = mixture[[f"policy_share_{d}" for d in domains]].to_numpy()
    np.testing.assert_allclose(shares[0], 1 / 3)
    assert not np.allclose(shares[1], shares[0])  # step 1's rewards moved step 2's mixture
    # replay: the policy fed the recorded per-domain rewards gives the recorded shares (reward_gap uses only
    # each step's mean reward per domain, so one row per domain present carries it exactly)
    policy = make_data_policy(resolve_arm(config, "rg").data_policy, domains)
    for step, row in zip(mixture.step, mixture.itertuples()):
        np.testing.assert_allclose(policy.domain_shares(step), shares[step - 1], atol=1e-9)
        present = [d for d in domains if getattr(row, f"share_{d}") > 0]
        policy.observe(step, present, torch.tensor([[getattr(row, f"reward_{d}")] for d in present]))
    steps = pd.read_parquet(tmp_path / "run" / "steps.parquet")
    assert {f"share_{d}" for d in domains} <= set(steps.columns)


def test_a_run_without_a_logged_step_writes_an_empty_step_log():
    """A run shorter than TRL's logging interval logs no training row: an empty steps.parquet with the identity
    columns, not a crash after training."""
    history = [{"train_runtime": 1.0, "step": 3}]  # TRL's closing summary row carries no reward
    steps = trl_backend.step_log(history, "tiny", "grpo", 1)
    assert list(steps.columns) == ["experiment", "arm", "seed", "step"] and steps.empty
    logged = trl_backend.step_log([{"reward": 0.5, "frac_reward_zero_std": 0.25, "step": 2}, *history], "x", "a", 3)
    assert logged.to_dict("records") == [
        {"experiment": "x", "arm": "a", "seed": 3, "step": 2, "reward": 0.5, "frac_zero_var": 0.25}
    ]


def test_trl_trains_on_reasoning_gym_prompts_rewarded_by_their_score_answer(tmp_path):
    """trl.reasoning_gym's prompts join their domain's pool in TRL's dataset; the reward function grades each
    completion by its own rule in one batch: a reasoning-gym prompt by its dataset's score_answer (its last
    <answer> tag, full credit only), an armlab prompt by its task's verifier."""
    pytest.importorskip("reasoning_gym", reason="reasoning-gym is not installed (pip install 'armlab[reasoning_gym]')")
    from armlab.experiment.stages import stage_config
    from armlab.training import data
    from armlab.training.reasoning_gym_tasks import REBUILD_KEYS, training_pools

    chain = {"dataset": "chain_sum", "config": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 2}}
    path = _trl_config(tmp_path, {"grpo": {}}, steps=3)
    raw = yaml.safe_load(path.read_text())
    raw["trl"] = {"reasoning_gym": {"chain": {**chain, "domain": "gym", "n_items": 800}}}  # half the pools
    raw["model"]["max_len"] = 96  # chain_sum's prompts are about 70 characters
    path.write_text(yaml.safe_dump(raw))
    config = stage_config(load_config([path]), "train", "grpo")

    gym = training_pools(config)["gym"][:2]
    own = {"task": "add", "answer": "7", "id": "add-train-00000"}
    rows = [*gym, *gym, own, own]
    completions = [gym[0]["answer"], "I think <answer>" + gym[1]["answer"] + "</answer>", gym[0]["answer"] * 2]
    completions += ["<answer>1000</answer>", "7\n", "8\n"]
    reward = trl_backend.make_reward(resolve_arm(config, "grpo"), 1)
    columns = {key: [row.get(key) for row in rows] for key in ("answer", "task", "id", *REBUILD_KEYS)}
    # the doubled answer has partial credit (0.5) under chain_sum's score_answer: not a correct answer
    assert reward([""] * 6, completions, **columns) == [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]

    data.write(config, tmp_path / "data")
    trl_backend.train(config, "grpo", 1, tmp_path / "data", tmp_path / "run")
    mixture = pd.read_parquet(tmp_path / "run" / "mixture.parquet")
    assert list(mixture.step) == [1, 2, 3] and mixture.share_gym.sum() > 0  # the sampler drew reasoning-gym's
    assert mixture.reward_gym.dropna().between(0, 1).all() and mixture.reward_gym.notna().sum() >= 1
