"""Advantage estimators against the test vectors of docs/methods.md and hand-worked cases."""

import pytest
import torch

from armlab.training.estimators import ESTIMATORS, compute_advantages, grpo

R = torch.tensor([[1.0, 0.0, 0.0, 0.0]])  # mu = 0.25, unbiased sigma = 0.5


@pytest.mark.parametrize(
    "name, expected",
    [
        ("grpo", [1.4999970, -0.4999990, -0.4999990, -0.4999990]),
        ("dr_grpo", [0.75, -0.25, -0.25, -0.25]),
        ("rloo", [1.0, -1 / 3, -1 / 3, -1 / 3]),
        ("maxrl", [3.0, -1.0, -1.0, -1.0]),
    ],
)
def test_reference_vectors(name, expected):
    out = ESTIMATORS[name](R, torch.ones_like(R))
    assert out.shape == R.shape
    torch.testing.assert_close(out, torch.tensor([expected]), atol=2e-5, rtol=0)


def test_trl_group_scaling_epsilon():
    torch.testing.assert_close(
        grpo(R, eps=1e-4), torch.tensor([[1.4997001, -0.4999000, -0.4999000, -0.4999000]]), atol=1e-6, rtol=0
    )


def test_std_switch_is_dr_grpo_advantage():
    rewards = torch.tensor([[1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0]])
    torch.testing.assert_close(grpo(rewards, norm_std=False), ESTIMATORS["dr_grpo"](rewards))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_all_equal_group_has_zero_advantage(name):
    rewards = torch.tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    lengths = torch.tensor([[3, 4, 5, 6], [2, 2, 2, 2]])
    assert torch.count_nonzero(ESTIMATORS[name](rewards, lengths)) == 0


def test_grpo_singleton_group_uses_mean_zero_std_one():
    torch.testing.assert_close(grpo(torch.tensor([[0.7]])), torch.tensor([[0.7 / (1 + 1e-6)]]))


def test_opo_length_weighted_baseline():
    rewards, lengths = torch.tensor([[1.0, 0.0]]), torch.tensor([[1, 3]])
    # baseline = (1*1 + 3*0) / 4 = 0.25
    torch.testing.assert_close(ESTIMATORS["opo"](rewards, lengths), torch.tensor([[0.75, -0.25]]))


def test_mc_grpo_median_baseline():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0, 1.0]])  # median 1
    torch.testing.assert_close(ESTIMATORS["mc_grpo"](rewards), torch.tensor([[0.0, -1.0, -1.0, 0.0, 0.0]]))


def test_grpo_passk_credits_only_the_best():
    rewards = torch.tensor([[0.2, 0.9, 0.5, 0.1]])
    torch.testing.assert_close(ESTIMATORS["grpo_passk"](rewards), torch.tensor([[0.0, 0.4, 0.0, 0.0]]))


def test_reinforce_pp_baseline_whitens_over_batch():
    rewards = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    centred = torch.tensor([0.5, -0.5, 0.0, 0.0])
    expected = (centred - centred.mean()) / torch.sqrt(centred.var(unbiased=True) + 1e-8)
    torch.testing.assert_close(ESTIMATORS["reinforce_pp_baseline"](rewards), expected.view(2, 2))


def test_compute_advantages_passes_parameters():
    out = compute_advantages({"name": "grpo", "norm_std": False}, R, torch.ones_like(R))
    torch.testing.assert_close(out, torch.tensor([[0.75, -0.25, -0.25, -0.25]]))
