"""The builtin GRPO trainer: determinism, step log, loss aggregation, verifier noise, data-policy smoke runs;
its optimizer (torch's AdamW bit for bit, without the torch compiler), the skippable reference pass and the policy's
hot paths rewritten for speed, bit for bit as they were."""

import copy
import json
import random
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import REPO, TINY

import armlab.training.train as trainer
from armlab.configfile import ConfigError, load_mapping
from armlab.experiment.validate import validate_config
from armlab.files import file_sha256
from armlab.training.data_policies import DATA_POLICIES
from armlab.training.policy import (
    PAD_ID,
    VOCAB,
    Block,
    CharTransformer,
    PolicyConfig,
    attention,
    completion_logprobs,
    encode,
    group_logprobs,
    left_pad,
    load_model,
)
from armlab.training.rollouts import noisy_verdict, step_seed
from armlab.training.train import AdamW, aggregate, train
from armlab.training.utils import derive_seed


def _run(config, root, out, arm="grpo", seed=1):
    train(config, arm, seed, root / "data", root / "base" / "policy.pt", out)
    return out


def test_same_arm_and_seed_give_a_bit_identical_checkpoint(tiny_config, tiny_experiment, tmp_path):
    first = _run(tiny_config, tiny_experiment, tmp_path / "a")
    second = _run(tiny_config, tiny_experiment, tmp_path / "b")
    assert file_sha256(first / "policy.pt") == file_sha256(second / "policy.pt")
    other_seed = _run(tiny_config, tiny_experiment, tmp_path / "c", seed=2)
    assert file_sha256(first / "policy.pt") != file_sha256(other_seed / "policy.pt")


def test_a_stream_gives_a_seed_independent_randomness_and_keeps_stream_0_as_it_was(
    tiny_config, tiny_experiment, tmp_path
):
    """An A/A arm ({stream: 1}) repeats the recipe with other random streams: another model, reproducibly; stream 0
    keys the streams by the experiment alone, exactly as before the option existed."""
    config = copy.deepcopy(tiny_config)
    config["arms"]["grpo_aa"] = {"stream": 1}
    config = validate_config(config)
    plain = _run(config, tiny_experiment, tmp_path / "plain")
    aa = _run(config, tiny_experiment, tmp_path / "aa", arm="grpo_aa")
    again = _run(config, tiny_experiment, tmp_path / "again", arm="grpo_aa")
    assert file_sha256(aa / "policy.pt") == file_sha256(again / "policy.pt")
    assert file_sha256(aa / "policy.pt") != file_sha256(plain / "policy.pt")
    plain_seeds = json.loads((plain / "manifest.json").read_text())["seeds"]
    aa_seeds = json.loads((aa / "manifest.json").read_text())["seeds"]
    assert plain_seeds["streams"] == "tiny" and aa_seeds["streams"] == "tiny/stream-1"
    assert plain_seeds["torch"] == derive_seed("tiny", 1, "torch") != aa_seeds["torch"]
    prompts = pd.read_parquet(plain / "steps.parquet")["reward"], pd.read_parquet(aa / "steps.parquet")["reward"]
    assert not prompts[0].equals(prompts[1])


def test_run_outputs_step_log_checkpoints_and_manifest(tiny_config, tiny_experiment, tmp_path):
    import json

    out = _run(tiny_config, tiny_experiment, tmp_path / "run", arm="difffilter")
    steps = pd.read_parquet(out / "steps.parquet")
    assert len(steps) == tiny_config["recipe"]["steps"]
    for column in [
        "reward",
        "reward_math",
        "reward_logic",
        "reward_science",
        "frac_zero_var",
        "kept_frac",
        "loss",
        "kl",
        "entropy",
        "tokens_per_s",
        "effective_batch",
        "share_math",
    ]:
        assert column in steps and steps[column].notna().any(), column
    assert steps.kept_frac.between(0, 1).all()
    # difffilter keeps exactly the groups that are not zero-variance and lie inside the band
    assert (steps.kept_frac <= 1 - steps.frac_zero_var + 1e-9).all()
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-000002.pt"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["threads"] == 1 and manifest["seed"] == 1 and manifest["packages"]["torch"].startswith("2.13.0")
    assert manifest["recipe"]["data_policy"] == {"name": "difffilter"}
    # the compute ledger: running totals of the per-step counts, FLOPs by the stated formula with N counted here
    n_params = sum(p.numel() for p in load_model(out / "policy.pt").parameters())
    recipe = tiny_config["recipe"]
    ledger = pd.read_parquet(out / "ledger.parquet")
    assert "ledger.parquet" in manifest["files"] and ledger.step.tolist() == steps.step.tolist()
    assert (steps.prompts_rolled_out == recipe["prompts_per_step"]).all()  # difffilter rolls out once a step
    assert ledger.cum_prompts.tolist() == [recipe["prompts_per_step"] * (s + 1) for s in range(len(steps))]
    assert np.allclose(steps.rollout_tokens, steps.response_len * recipe["prompts_per_step"] * recipe["group_size"])
    learned = (steps.kept_frac > 0).to_numpy()
    assert steps.gradient_updates.tolist() == [1 if learned_step else 0 for learned_step in learned]
    for total, count in [
        ("cum_rollout_tokens", "rollout_tokens"),
        ("cum_trained_tokens", "trained_tokens"),
        ("cum_gradient_updates", "gradient_updates"),
        ("cum_seconds", "seconds"),
    ]:
        assert np.allclose(ledger[total], np.cumsum(steps[count]))
    expected = 2 * n_params * ledger.cum_rollout_tokens + 6 * n_params * ledger.cum_trained_tokens
    assert np.allclose(ledger.cum_flops, expected, rtol=1e-12) and ledger.cum_flops.is_monotonic_increasing


def test_aggregation_modes_by_hand():
    per_token = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0], [9.0, 9.0, 9.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0], [1, 1, 1]], dtype=torch.bool)
    weights = torch.tensor([1.0, 2.0, 0.0])  # the third rollout is dropped entirely
    # token-mean: (1+2+3 + 2*4) / 4 active tokens
    assert aggregate(per_token, weights, mask, "token-mean", 3).item() == pytest.approx(14 / 4)
    # seq-mean-token-mean: (mean(1,2,3) + 2*4) / 2 sequences
    assert aggregate(per_token, weights, mask, "seq-mean-token-mean", 3).item() == pytest.approx((2 + 8) / 2)
    # seq-mean-token-sum-norm: (6/3 + 2*4/3) / 2 with the constant divisor 3
    assert aggregate(per_token, weights, mask, "seq-mean-token-sum-norm", 3).item() == pytest.approx((2 + 8 / 3) / 2)


def test_aggregation_with_token_weights_by_hand():
    per_token = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]], dtype=torch.bool)
    weights = torch.tensor([[0.5, 1.0, 2.0], [3.0, 9.0, 9.0]])  # masked tokens' weights do not count
    # token-mean: (0.5 + 2 + 6 + 12) / 4 active tokens
    assert aggregate(per_token, weights, mask, "token-mean", 3).item() == pytest.approx(20.5 / 4)
    # seq-mean-token-mean: (8.5 / 3 + 12 / 1) / 2 sequences
    assert aggregate(per_token, weights, mask, "seq-mean-token-mean", 3).item() == pytest.approx((8.5 / 3 + 12) / 2)
    # a token of weight 0 drops out of the count too: (0.5 + 6 + 12) / 3
    zeroed = weights.clone()
    zeroed[0, 1] = 0.0
    assert aggregate(per_token, zeroed, mask, "token-mean", 3).item() == pytest.approx(18.5 / 3)
    # one weight per rollout gives the same as that weight on every token
    rollout = torch.tensor([2.0, 0.5])
    assert aggregate(per_token, rollout, mask, "token-mean", 3).item() == pytest.approx(
        aggregate(per_token, rollout[:, None].expand(2, 3), mask, "token-mean", 3).item()
    )


def test_verifier_noise_is_matched_and_has_the_right_rate():
    assert noisy_verdict(1.0, 0.0, 1, "item", "resp") == 1.0
    flips = [noisy_verdict(1.0, 0.3, 1, f"item-{i}", "42") for i in range(4000)]
    assert abs(flips.count(0.0) / 4000 - 0.3) < 0.03
    # decided by (seed, eps, item, response): the same call always gives the same verdict
    assert flips == [noisy_verdict(1.0, 0.3, 1, f"item-{i}", "42") for i in range(4000)]


def test_a_steps_first_try_uses_the_stream_of_plain_grpo_and_each_refill_its_own():
    first = step_seed("tiny", 1, "prompts", 3)
    assert first == step_seed("tiny", 1, "prompts", 3, refill=0) == derive_seed("tiny", 1, "prompts", 3)
    refills = {step_seed("tiny", 1, "prompts", 3, refill=k) for k in (1, 2)}
    assert len(refills) == 2 and first not in refills and step_seed("tiny", 1, "rollouts", 3) != first


# ---------------------------------------------------------------- every data policy on the real trainer

POLICY_ARMS = {name: {"data_policy": {"name": name}} for name in DATA_POLICIES if name != "uniform"}


@pytest.fixture(scope="module")
def policy_config():
    """The tiny fixture with one arm per registered data policy, through config validation (which builds each)."""
    raw = load_mapping(TINY)
    raw["arms"] = {"grpo": {}, **POLICY_ARMS}
    raw["comparisons"] = [{"family": "data_policies", "reference": "grpo", "arms": sorted(POLICY_ARMS)}]
    return validate_config(raw)


def test_config_validation_builds_every_policy_and_rejects_bad_parameters(policy_config):
    raw = copy.deepcopy(policy_config)
    raw["arms"]["maxvar"] = {"data_policy": {"name": "maxvar", "fraction": 2}}
    with pytest.raises(ConfigError, match=r"arms\.maxvar\.data_policy: maxvar: fraction must be <= 1"):
        validate_config(raw)


@pytest.mark.parametrize("name", sorted(POLICY_ARMS))
def test_every_policy_runs_on_the_real_trainer(name, policy_config, tiny_experiment, tmp_path):
    steps = pd.read_parquet(_run(policy_config, tiny_experiment, tmp_path / name, arm=name) / "steps.parquet")
    recipe, policy = policy_config["recipe"], DATA_POLICIES[name](["logic", "math", "science"])
    P, G = recipe["prompts_per_step"], recipe["group_size"]
    assert len(steps) == recipe["steps"] and steps.loss.notna().all()
    assert steps.kept_frac.between(0, 1).all() and steps.gen_batches.between(1, policy.max_tries).all()
    shares = steps[[f"share_{d}" for d in ("logic", "math", "science")]]
    np.testing.assert_allclose(shares.sum(axis=1), 1.0)
    # kept_frac = share of the batch with weight > 0, which each kind pins down on its own
    expected_kept = {"maxvar": 2 / G, "gfpo": 3 / G, "topk": 0.5}
    if name in expected_kept:
        np.testing.assert_allclose(steps.kept_frac, expected_kept[name])
    if name in {"per", "softmax", "diffband", "ar"}:
        np.testing.assert_allclose(steps.weight_mean, 1.0, rtol=1e-5)
        assert (steps.kept_frac == 1).all()
    if name == "ar":
        assert (steps.token_weight_std > 0).all() and (steps.token_weight_max > 1).all()
    if name in {"dapo", "greso"}:  # refill: full of informative groups, or out of tries
        assert ((steps.kept_frac == 1) | (steps.gen_batches == policy.max_tries)).all()
        assert (steps.kept_frac <= 1 - steps.frac_zero_var + 1e-9).all()
        assert (steps.prompts_rolled_out >= P).all()
    if name == "greso":
        assert steps.greso_p_easy.between(0.05, 0.95).all() and (steps.prompts_skipped >= 0).all()
    if name == "thompson":  # 8 candidates per slot, P rolled out
        assert (steps.prompts_skipped == 7 * P).all() and (steps.prompts_rolled_out == P).all()
        assert steps.thompson_theta_mean.between(0, 1).all()
    if name in {"static", "reward_gap", "dump_ucb", "tscl", "exp3"}:  # step 1 is an equal split: 3, 3, 2 of 8
        assert shares.iloc[0].tolist() == pytest.approx([3 / 8, 3 / 8, 2 / 8])
    if name not in {"dapo", "greso", "thompson"}:
        assert (steps.gen_batches == 1).all() and (steps.prompts_skipped == 0).all()


@pytest.mark.parametrize("arm", ["greso", "thompson"])
def test_stateful_random_policies_are_bit_identical_for_the_same_seed(arm, policy_config, tiny_experiment, tmp_path):
    first = _run(policy_config, tiny_experiment, tmp_path / "a", arm=arm)
    second = _run(policy_config, tiny_experiment, tmp_path / "b", arm=arm)
    assert file_sha256(first / "policy.pt") == file_sha256(second / "policy.pt")
    pd.testing.assert_frame_equal(
        pd.read_parquet(first / "steps.parquet").drop(columns=["seconds", "tokens_per_s"]),
        pd.read_parquet(second / "steps.parquet").drop(columns=["seconds", "tokens_per_s"]),
    )


# ---------------------------------------------------------------- speed: optimizer and reference pass


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_trainer_adamw_is_torch_adamw_bit_for_bit(weight_decay):
    torch.manual_seed(0)
    ours = CharTransformer(PolicyConfig(d_model=16, n_layer=1, n_head=2, max_len=12))
    theirs = copy.deepcopy(ours)
    opt_ours = AdamW(ours.parameters(), lr=3e-3, weight_decay=weight_decay)
    opt_theirs = torch.optim.AdamW(theirs.parameters(), lr=3e-3, weight_decay=weight_decay)
    ids = torch.randint(0, ours.cfg.vocab_size, (6, 10))
    valid = torch.ones_like(ids, dtype=torch.bool)
    for _ in range(25):
        for model, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            model(ids, valid).logsumexp(-1).square().mean().backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)
            opt.step()
    for (name, a), b in zip(ours.named_parameters(), theirs.parameters()):
        assert torch.equal(a, b), name
        assert a.grad is not None
    assert any(not torch.equal(a, b) for a, b in zip(ours.parameters(), CharTransformer(ours.cfg).parameters()))


@pytest.mark.workflow  # a whole training job, run for real
def test_a_training_run_never_imports_the_torch_compiler(tiny_config, tiny_experiment, tmp_path):
    """torch.optim optimizers import torch._dynamo (~2 s of every job) when built and stepped; the trainer's doesn't.

    In a subprocess: in this one other tests may have imported it already.
    """
    code = (
        "import sys, json\n"
        "from pathlib import Path\n"
        "from armlab.training.train import train\n"
        "root = Path(sys.argv[1])\n"
        "train(json.loads(sys.argv[2]), 'grpo', 1, root / 'data', root / 'base' / 'policy.pt', Path(sys.argv[3]))\n"
        "assert 'torch._dynamo' not in sys.modules, 'torch._dynamo was imported'\n"
    )
    import json

    config = json.dumps(tiny_config)
    done = subprocess.run(
        [sys.executable, "-c", code, str(tiny_experiment), config, str(tmp_path / "run")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "run" / "policy.pt").exists()


def _steps(config, root, monkeypatch, n_steps, log_kl):
    """``n_steps`` steps of grpo seed 1 with ``log_kl``; the learning stats, the parameters, #passes per model."""
    calls = {"policy": 0, "reference": 0}

    def counted(model, *args):
        calls["reference" if model is run.reference else "policy"] += 1
        return group_logprobs(model, *args)

    monkeypatch.setattr(trainer, "group_logprobs", counted)
    run = trainer.start_run(config, "grpo", 1, root / "data", root / "base" / "policy.pt")
    stats = []
    for step in range(1, n_steps + 1):
        batch, rolled_out, _ = trainer.sample_batch(run, step)
        advantages, weights = trainer.weigh(run, step, batch, rolled_out)
        stats.append(trainer.update(run, batch, advantages, weights, log_kl=log_kl)[0])
    return stats, [p.detach().clone() for p in run.model.parameters()], calls


@pytest.mark.parametrize("mu", [1, 2])
def test_without_kl_penalty_or_logged_kl_the_reference_pass_is_skipped_and_nothing_else_changes(
    mu, tiny_config, tiny_experiment, monkeypatch
):
    config = copy.deepcopy(tiny_config)
    config["recipe"].update(kl_coef=0.0, updates_per_batch=mu)
    with_kl, params_with, calls_with = _steps(config, tiny_experiment, monkeypatch, 4, log_kl=True)
    without, params_without, calls_without = _steps(config, tiny_experiment, monkeypatch, 4, log_kl=False)
    assert calls_with == {"policy": 4 * mu, "reference": 4}
    assert calls_without == {"policy": 4 * mu, "reference": 0}
    for a, b in zip(params_with, params_without):
        assert torch.equal(a, b)
    assert all(row["kl"] >= 0 for row in with_kl) and all(np.isnan(row["kl"]) for row in without)
    for row_with, row_without in zip(with_kl, without):
        assert {k: v for k, v in row_with.items() if k != "kl"} == {k: v for k, v in row_without.items() if k != "kl"}


def test_a_kl_penalty_always_runs_the_reference_pass(tiny_config, tiny_experiment, monkeypatch):
    config = copy.deepcopy(tiny_config)
    config["recipe"].update(kl_coef=0.05)
    stats, _, calls = _steps(config, tiny_experiment, monkeypatch, 2, log_kl=False)
    assert calls == {"policy": 2, "reference": 2} and all(row["kl"] >= 0 for row in stats)


def test_without_a_kl_penalty_the_kl_is_logged_on_the_printed_steps_only(tiny_config, tiny_experiment, tmp_path):
    """The frozen base policy's pass runs only where its kl is printed; with a penalty, on every step."""
    config = {**tiny_config, "recipe": {**tiny_config["recipe"], "steps": 5, "log_every": 2, "checkpoint_every": 10}}
    steps = pd.read_parquet(_run(config, tiny_experiment, tmp_path / "free") / "steps.parquet")
    assert steps.loc[steps.kl.notna(), "step"].tolist() == [2, 4, 5]
    penalised = {**config, "recipe": {**config["recipe"], "kl_coef": 0.05}}
    steps = pd.read_parquet(_run(penalised, tiny_experiment, tmp_path / "kl") / "steps.parquet")
    assert steps.kl.notna().all()


# ---------------------------------------------------------------- speed: the policy's hot paths, rewritten exactly


def _left_pad_per_row(prompts):
    """left_pad as it was: each prompt encoded, then copied into its row."""
    encoded = [encode(p) for p in prompts]
    width = max(map(len, encoded))
    ids = torch.full((len(encoded), width), PAD_ID, dtype=torch.long)
    for row, tokens in enumerate(encoded):
        ids[row, width - len(tokens) :] = torch.tensor(tokens)
    return ids, ids != PAD_ID


def _padded_or_error(left_pad_fn, prompts):
    try:
        ids, valid = left_pad_fn(prompts)
    except ValueError as err:
        return "error", str(err)
    return ids.dtype, ids.tolist(), valid.dtype, valid.tolist()


def test_left_pad_is_the_per_row_construction():
    rng = random.Random(0)
    outside = "é€😀\ud800~[\t"  # not in the vocabulary: accented, astral, a lone surrogate, ASCII
    cases = [[], [""], ["", "ab"], ["\0a\0"], ["x" * 40, "y", ""], [VOCAB], ["😀"], ["\ud800"], ["ok", "bé", "a~"]]
    for _ in range(500):
        alphabet = VOCAB + outside if rng.random() < 0.2 else VOCAB
        cases.append(["".join(rng.choices(alphabet, k=rng.randint(0, 30))) for _ in range(rng.randint(1, 8))])
    outcomes = [_padded_or_error(left_pad, prompts) for prompts in cases]
    assert outcomes == [_padded_or_error(_left_pad_per_row, prompts) for prompts in cases]
    # the first prompt with a character outside the vocabulary is named, in one line
    assert _padded_or_error(left_pad, ["ok", "bé", "a~"]) == (
        "error",
        "character 'é' in 'bé' is not in the policy's vocabulary",
    )
    assert 10 < sum(outcome[0] == "error" for outcome in outcomes) < 400


def _permuted_block_forward(self, x, mask, cache=None, written_out_attention=False):
    """Block.forward as it was: q, k and v as one view + permute of the qkv projection."""
    B, T, C = x.shape
    q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
    if cache is not None:
        k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
    y = attention(q, k, v, mask[:, None], written_out_attention)
    x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
    return x + self.mlp(self.ln2(x)), (k, v)


def _policy_batch(rng, n_rows, max_prompt, n_new):
    """Left-padded prompts of 1..max_prompt characters; completions of 1..n_new tokens, PAD after them."""
    prompts = ["".join(rng.choices(VOCAB[2:], k=rng.randint(1, max_prompt))) for _ in range(n_rows)]
    prompt_ids, prompt_valid = left_pad(prompts)
    lengths = torch.tensor([rng.randint(1, n_new) for _ in range(n_rows)])
    token_mask = torch.arange(n_new) < lengths[:, None]
    tokens = torch.randint(0, len(VOCAB), (n_rows, n_new)).masked_fill(~token_mask, PAD_ID)
    return prompt_ids, prompt_valid, tokens, token_mask


@pytest.mark.parametrize("n_rows", [1, 5, 64])
def test_split_attention_views_give_the_permuted_views_results_bit_for_bit(n_rows, monkeypatch):
    """Log-probabilities, gradients and sampled, evaluated and greedy completions, with both ways to form q, k, v."""
    rng = random.Random(n_rows)
    torch.manual_seed(n_rows)
    model = CharTransformer(PolicyConfig(d_model=24, n_layer=2, n_head=3, max_len=24))
    prompt_ids, prompt_valid, tokens, token_mask = _policy_batch(rng, n_rows, 12, 6)
    weights = torch.randn(n_rows, 6)
    uniforms = torch.rand(n_rows, 6)

    def outputs():
        model.zero_grad()
        logp, log_probs = completion_logprobs(model, prompt_ids, prompt_valid, tokens, token_mask)
        (logp * weights * token_mask).sum().backward()
        return [
            logp.detach(),
            log_probs.detach(),
            *(p.grad.clone() for p in model.parameters()),
            *model.generate(prompt_ids, prompt_valid, 6, 0.7, torch.Generator().manual_seed(n_rows)),
            *model.generate(prompt_ids, prompt_valid, 6, 0.7, uniforms=uniforms, top_p=0.9),
            *model.generate(prompt_ids, prompt_valid, 6, greedy=True),
        ]

    split = outputs()
    monkeypatch.setattr(Block, "forward", _permuted_block_forward)
    permuted = outputs()
    assert len(split) == len(permuted) and all(torch.equal(a, b) for a, b in zip(split, permuted))


def test_completion_logprobs_gives_the_log_softmax_of_the_logits_it_used():
    """The update's entropy comes from these log-probabilities, as it came from log_softmax of the logits."""
    torch.manual_seed(0)
    model = CharTransformer(PolicyConfig(d_model=24, n_layer=2, n_head=3, max_len=24))
    prompt_ids, prompt_valid, tokens, token_mask = _policy_batch(random.Random(0), 9, 12, 6)
    ids, valid = torch.cat([prompt_ids, tokens], 1), torch.cat([prompt_valid, token_mask], 1)
    logits = model(ids[:, :-1], valid[:, :-1])[:, prompt_ids.shape[1] - 1 :]  # what it returned before
    logp, log_probs = completion_logprobs(model, prompt_ids, prompt_valid, tokens, token_mask)
    assert torch.equal(log_probs, torch.log_softmax(logits, dim=-1))
    assert torch.equal(logp, torch.log_softmax(logits, dim=-1).gather(-1, tokens[..., None]).squeeze(-1))


def test_only_the_rl_trainer_writes_attention_out(tmp_path):
    """Base training, evaluation and the HF export keep torch's kernel (their results bit for bit as before): a loaded
    or new policy uses it, and the only place in the package that switches to the written-out form is the trainer."""
    from armlab.training.policy import load_model, save_model

    save_model(CharTransformer(PolicyConfig()), tmp_path / "policy.pt")
    assert load_model(tmp_path / "policy.pt").written_out_attention is False
    assert CharTransformer(PolicyConfig()).written_out_attention is False
    switched = [
        path.relative_to(REPO).as_posix()
        for folder in ("training", "evals", "analysis", "armlab")
        for path in (REPO / folder).rglob("*.py")
        if "written_out_attention = True" in path.read_text() or "written_out_attention=True" in path.read_text()
    ]
    assert switched == ["training/train.py"]


def test_attention_is_torchs_scaled_dot_product_attention_forward_and_backward():
    """The written-out attention against F.scaled_dot_product_attention with the same boolean mask; by default it is
    torch's kernel itself (base policies and evaluations bit for bit as before the written-out form existed)."""
    import torch.nn.functional as F

    torch.manual_seed(0)
    for B, T_q, T_k in [(1, 1, 1), (7, 1, 13), (5, 9, 9), (64, 6, 17)]:
        q, k, v = (torch.randn(B, 3, T, 8, dtype=torch.float64, requires_grad=True) for T in (T_q, T_k, T_k))
        mask = torch.rand(B, 1, T_q, T_k) < 0.6
        mask[..., -1] = True  # every query keeps a key (the policy's: itself)
        grad = torch.randn(B, 3, T_q, 8, dtype=torch.float64)
        ours = attention(q, k, v, mask, written_out=True)
        theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        assert torch.allclose(ours, theirs, atol=1e-12) and torch.equal(attention(q, k, v, mask), theirs)
        ours_grads = torch.autograd.grad(ours, (q, k, v), grad)
        theirs_grads = torch.autograd.grad(theirs, (q, k, v), grad)
        assert all(torch.allclose(a, b, atol=1e-12) for a, b in zip(ours_grads, theirs_grads))


def _peaked_model() -> CharTransformer:
    """A small float64 policy with weights large enough that positions and attention change every output."""
    model = CharTransformer(PolicyConfig(d_model=24, n_layer=2, n_head=3, max_len=24)).double()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    return model


def _grouped_batch(seed: int, n_prompts: int, group_size: int):
    """``n_prompts`` left-padded prompts and ``group_size`` completions each, prompt-major, and the prompts repeated."""
    rng = random.Random(seed)
    prompts = ["".join(rng.choices(VOCAB[2:], k=rng.randint(1, 12))) for _ in range(n_prompts)]
    n_new = 6
    lengths = torch.tensor([rng.randint(1, n_new) for _ in range(n_prompts * group_size)])
    token_mask = torch.arange(n_new) < lengths[:, None]
    tokens = torch.randint(0, len(VOCAB), (len(lengths), n_new)).masked_fill(~token_mask, PAD_ID)
    repeated = left_pad([p for p in prompts for _ in range(group_size)])
    return left_pad(prompts), repeated, tokens, token_mask


@pytest.mark.parametrize("written_out_attention", [False, True])
@pytest.mark.parametrize("group_size", [1, 4])
def test_group_logprobs_are_completion_logprobs_over_the_repeated_prompts(group_size, written_out_attention):
    """The shared-prefix pass computes the same log-probabilities and gradients as the pass over every row."""
    torch.manual_seed(group_size)
    model = _peaked_model()
    model.written_out_attention = written_out_attention
    prompts, repeated, tokens, token_mask = _grouped_batch(group_size, 7, group_size)
    weights = torch.randn(tokens.shape, dtype=torch.float64)

    def outputs(logprobs, prompt_batch, *group):
        model.zero_grad()
        logp, log_probs = logprobs(model, *prompt_batch, tokens, token_mask, *group)
        (logp * weights * token_mask).sum().backward()
        return [logp[token_mask], log_probs[token_mask], *(p.grad.clone() for p in model.parameters())]

    shared = outputs(group_logprobs, prompts, group_size)
    per_row = outputs(completion_logprobs, repeated)
    assert all(torch.allclose(a, b, rtol=0, atol=1e-10) for a, b in zip(shared, per_row))
    assert shared[0].std() > 0.5 and all(g.abs().max() > 1e-3 for g in shared[2:])  # far from uniform, all learning


def test_generate_with_a_group_size_samples_as_over_the_repeated_prompts():
    """One prompt pass shared by the group gives the completions the pass per row gives, row for row."""
    torch.manual_seed(0)
    model = _peaked_model()
    prompts, repeated, _, _ = _grouped_batch(0, 9, 5)
    uniforms = torch.rand(45, 6)
    for how in [{"greedy": True}, {"uniforms": uniforms, "temperature": 0.8}, {"generator": "seeded"}]:
        tokens = []
        for prompt_batch, group in ((prompts, 5), (repeated, 1)):
            options = {**how, "generator": torch.Generator().manual_seed(3)} if "generator" in how else how
            tokens.append(model.generate(*prompt_batch, 6, group_size=group, **options))
        (shared, shared_mask), (per_row, per_row_mask) = tokens
        assert torch.equal(shared, per_row) and torch.equal(shared_mask, per_row_mask)
    assert len({tuple(row) for row in shared.tolist()}) > 20  # sampled, varied completions
