"""Data policies against their published rules, on hand-made inputs."""

import numpy as np
import pytest
import torch

from training.data_policies import DATA_POLICIES, domain_counts, make_policy

DOMAINS = ["logic", "math", "science"]


def test_difffilter_keeps_groups_strictly_inside_the_band():
    # pass rates: 0.0, 0.2 (boundary, dropped), 0.4, 0.6, 0.8 (boundary, dropped), 1.0
    rewards = torch.tensor([[0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [1, 1, 0, 0, 0],
                            [1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.float)
    weights = make_policy({"name": "difffilter"}, DOMAINS).rollout_weights(rewards, rewards, torch.ones_like(rewards))
    assert weights[:, 0].tolist() == [0, 0, 1, 1, 0, 0]
    assert torch.equal(weights, weights[:, :1].expand_as(weights))  # a whole group is kept or dropped


def test_difffilter_parameters_and_validation():
    rewards = torch.tensor([[1, 0, 0, 0, 0]], dtype=torch.float)  # pass rate 0.2
    loose = make_policy({"name": "difffilter", "low": 0.1, "high": 0.9}, DOMAINS)
    assert loose.rollout_weights(rewards, rewards, rewards).sum() == 5
    with pytest.raises(ValueError, match="low < high"):
        make_policy({"name": "difffilter", "low": 0.8, "high": 0.2}, DOMAINS)


def test_uniform_weights_everything_and_draws_from_the_union():
    policy = make_policy({"name": "uniform"}, DOMAINS)
    rewards = torch.rand(3, 4)
    assert policy.domain_shares(1) is None
    assert torch.equal(policy.rollout_weights(rewards, rewards, rewards), torch.ones(3, 4))


def test_static_mixture_is_equal_per_domain():
    shares = make_policy({"name": "static"}, DOMAINS).domain_shares(7)
    np.testing.assert_allclose(shares, [1 / 3] * 3)
    assert domain_counts(shares, 64).tolist() == [22, 21, 21]


@pytest.mark.parametrize("total", [0, 1, 7, 64, 1000])
def test_domain_counts_sum_and_rounding(total):
    shares = np.array([0.5, 0.3, 0.2])
    counts = domain_counts(shares, total)
    assert counts.sum() == total
    assert np.all(np.abs(counts - shares * total) < 1)


def test_registry_has_the_required_policies():
    assert {"uniform", "difffilter", "static"} <= set(DATA_POLICIES)
    for cls in DATA_POLICIES.values():
        assert cls.__doc__ and "—" in cls.__doc__.splitlines()[0]  # one line naming its source
