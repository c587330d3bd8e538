"""The builtin GRPO trainer: determinism, step log, loss aggregation, verifier noise."""

import pandas as pd
import pytest
import torch

from training.train import aggregate, noisy_verdict, train
from training.utils import file_sha256


def _run(config, root, out, arm="grpo", seed=1):
    train(config, arm, seed, root / "data", root / "base" / "policy.pt", out)
    return out


def test_same_arm_and_seed_give_a_bit_identical_checkpoint(tiny_config, tiny_experiment, tmp_path):
    first = _run(tiny_config, tiny_experiment, tmp_path / "a")
    second = _run(tiny_config, tiny_experiment, tmp_path / "b")
    assert file_sha256(first / "policy.pt") == file_sha256(second / "policy.pt")
    other_seed = _run(tiny_config, tiny_experiment, tmp_path / "c", seed=2)
    assert file_sha256(first / "policy.pt") != file_sha256(other_seed / "policy.pt")


def test_run_outputs_step_log_checkpoints_and_manifest(tiny_config, tiny_experiment, tmp_path):
    import json

    out = _run(tiny_config, tiny_experiment, tmp_path / "run", arm="difffilter")
    steps = pd.read_parquet(out / "steps.parquet")
    assert len(steps) == tiny_config["recipe"]["steps"]
    for column in ["reward", "reward_math", "reward_logic", "reward_science", "frac_zero_var", "kept_frac", "loss",
                   "kl", "entropy", "tokens_per_s", "effective_batch", "share_math"]:
        assert column in steps and steps[column].notna().any(), column
    assert steps.kept_frac.between(0, 1).all()
    # difffilter keeps exactly the groups that are not zero-variance and lie inside the band
    assert (steps.kept_frac <= 1 - steps.frac_zero_var + 1e-9).all()
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-000002.pt"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["threads"] == 1 and manifest["seed"] == 1 and manifest["packages"]["torch"].startswith("2.13.0")
    assert manifest["recipe"]["data_policy"] == {"name": "difffilter"}


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


def test_verifier_noise_is_matched_and_has_the_right_rate():
    assert noisy_verdict(1.0, 0.0, 1, "item", "resp") == 1.0
    flips = [noisy_verdict(1.0, 0.3, 1, f"item-{i}", "42") for i in range(4000)]
    assert abs(flips.count(0.0) / 4000 - 0.3) < 0.03
    # decided by (seed, eps, item, response): the same call always gives the same verdict
    assert flips == [noisy_verdict(1.0, 0.3, 1, f"item-{i}", "42") for i in range(4000)]
