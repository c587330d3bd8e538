"""Data policies against their published rules, on hand-made inputs.

Expected values are worked out by hand (arithmetic in the comments) or re-computed in
plain Python (math, itertools, statistics) next to the assertion.
"""

import inspect
import itertools
import math
import statistics

import numpy as np
import pytest
import torch

from armlab.training.data_policies import (
    DATA_POLICIES,
    Uniform,
    _in_turn,
    domain_counts,
    list_policies,
    make_data_policy,
)

DOMAINS = ["logic", "math", "science"]
DATAFLEX_ARMS = {
    "difffilter",
    "maxvar",
    "gfpo",
    "topk",
    "ar",
    "per",
    "softmax",
    "diffband",
    "static",
    "reward_gap",
    "dump_ucb",
    "tscl",
}
SELECT_ARMS = {"difffilter", "maxvar", "gfpo", "topk", "dapo", "greso"}
REWEIGHT_ARMS = {"per", "softmax", "diffband"}


def _t(rows):
    return torch.tensor(rows, dtype=torch.float)


def _softmax(xs):
    exps = [math.exp(x - max(xs)) for x in xs]
    return [e / sum(exps) for e in exps]


def _floored(ps, floor):
    clipped = [max(p, floor) for p in ps]
    return [p / sum(clipped) for p in clipped]


def _weights(name, rewards, advantages=None, lengths=None, **params):
    policy = make_data_policy({"name": name, **params}, DOMAINS)
    advantages = rewards if advantages is None else advantages
    lengths = torch.ones_like(rewards) if lengths is None else lengths
    return policy.rollout_weights(rewards, advantages, lengths)


# ---------------------------------------------------------------- registry and interface


def test_registry_has_the_required_policies():
    assert DATAFLEX_ARMS | {"uniform", "dapo", "greso", "thompson", "exp3"} <= set(DATA_POLICIES)
    for name, cls in DATA_POLICIES.items():
        assert cls.__doc__ and "—" in cls.__doc__.splitlines()[0]  # one line naming its source
        assert make_data_policy({"name": name}, DOMAINS).name == name  # the registry key, subclasses too (greso)


def test_every_policy_lists_keyword_parameters_with_defaults_and_rejects_unknown_ones():
    for name, cls in DATA_POLICIES.items():
        params = list(inspect.signature(cls.__init__).parameters.values())[2:]
        assert all(p.default is not inspect.Parameter.empty for p in params), name
        make_data_policy({"name": name}, DOMAINS)  # the published defaults construct
        with pytest.raises(TypeError):
            make_data_policy({"name": name, "no_such_parameter": 1}, DOMAINS)
    listing = {row["name"]: row for row in list_policies()}
    assert listing["maxvar"]["params"] == {"fraction": 0.5} and "PODS" in listing["maxvar"]["description"]
    assert listing["tscl"]["params"] == {
        "temperature": 1.0,
        "floor": 0.05,
        "warmup": 1,
        "update_every": 1,
        "window": 50,
    }
    assert listing["dapo"]["params"] == {"max_tries": 10}


def _overrides(cls, hook: str) -> bool:
    return getattr(cls, hook) is not getattr(Uniform, hook)


@pytest.mark.parametrize("name", sorted(DATA_POLICIES))
def test_every_policy_declares_whether_it_takes_shaped_rewards_and_how_trl_runs_it_as_its_hooks_do(name):
    """``shaped_rewards`` and ``trl`` are declared by the policy's class (or a base below Uniform: inheriting
    Uniform's would say that a new policy reads no rewards), and they agree with the hooks it overrides."""
    cls, policy = DATA_POLICIES[name], make_data_policy({"name": name}, DOMAINS)
    for fact in ("shaped_rewards", "trl"):
        declared_by = next(base for base in cls.__mro__ if fact in vars(base))
        assert declared_by is not Uniform or cls is Uniform, f"{name} does not declare {fact}"
    assert isinstance(cls.shaped_rewards, bool) and cls.trl in ("fixed", "adaptive", None)
    if cls.shaped_rewards:  # reads no rewards: neither per rollout nor as feedback
        assert not any(_overrides(cls, h) for h in ("choose_prompts", "rollout_weights", "loss_weights", "observe"))
    if cls.trl is not None:  # TRL's sampler asks only for domain shares, and feeds rewards back to "adaptive" ones
        assert not any(_overrides(cls, h) for h in ("choose_prompts", "rollout_weights", "loss_weights"))
        assert policy.max_tries == 1 and policy.oversample == 1
        assert (cls.trl == "adaptive") == _overrides(cls, "observe")


@pytest.mark.parametrize(
    "name, params, error",
    [
        ("maxvar", {"fraction": 0.0}, ValueError),
        ("maxvar", {"fraction": "half"}, TypeError),
        ("gfpo", {"k": 0}, ValueError),
        ("gfpo", {"k": 2.5}, TypeError),
        ("topk", {"fraction": 1.5}, ValueError),
        ("ar", {"alpha": -0.1}, ValueError),
        ("per", {"eps": 0}, ValueError),
        ("softmax", {"temperature": 0}, ValueError),
        ("diffband", {"low_q": 0.8, "high_q": 0.2}, ValueError),
        ("reward_gap", {"floor": 0.4}, ValueError),
        ("dump_ucb", {"c": -1}, ValueError),
        ("tscl", {"window": 0}, ValueError),
        ("tscl", {"warmup": True}, TypeError),
        ("reward_gap", {"update_every": 0}, ValueError),
        ("dapo", {"max_tries": 0}, ValueError),
        ("greso", {"max_tries": 0}, ValueError),
        ("greso", {"p_easy": 1.5}, ValueError),
        ("greso", {"min_p": 0.9, "max_p": 0.1}, ValueError),
        ("thompson", {"oversample": 0}, ValueError),
        ("thompson", {"decay": 2}, ValueError),
        ("exp3", {"gamma": 0}, ValueError),
    ],
)
def test_bad_parameters_fail_at_construction(name, params, error):
    with pytest.raises(error, match=name):
        make_data_policy({"name": name, **params}, DOMAINS)


def test_uniform_defaults_change_nothing():
    policy = make_data_policy({"name": "uniform"}, DOMAINS)
    rewards = torch.rand(3, 4)
    assert policy.domain_shares(1) is None
    assert torch.equal(policy.rollout_weights(rewards, rewards, rewards), torch.ones(3, 4))
    assert policy.max_tries == 1 and policy.oversample == 1
    assert policy.choose_prompts(1, ["a", "b", "c"], 2, np.random.default_rng(0)).tolist() == [0, 1]
    weights = torch.tensor([[1.0, 0.0], [2.0, 1.0]])
    assert torch.equal(
        policy.loss_weights(weights, torch.zeros(4, 3), torch.ones(4, 3, dtype=torch.bool)),
        torch.tensor([1.0, 0.0, 2.0, 1.0]),
    )
    assert policy.diagnostics() == {}


@pytest.mark.parametrize("name", sorted(SELECT_ARMS | REWEIGHT_ARMS))
def test_select_arms_give_0_1_weights_and_reweight_arms_mean_1(name):
    gen = torch.Generator().manual_seed(0)
    rewards = torch.randint(0, 2, (16, 5), generator=gen).float()
    rewards[0] = torch.tensor([0.0, 1.0, 0.0, 1.0, 1.0])  # at least one informative group
    advantages = torch.randn(16, 5, generator=gen)
    lengths = torch.randint(1, 7, (16, 5), generator=gen)
    w = _weights(name, rewards, advantages, lengths)
    assert w.shape == rewards.shape
    if name in SELECT_ARMS:
        assert set(w.unique().tolist()) <= {0.0, 1.0} and w.sum() > 0
    else:
        assert w.mean().item() == pytest.approx(1.0) and (w > 0).all()


# ---------------------------------------------------------------- select


def test_difffilter_keeps_groups_strictly_inside_the_band():
    # pass rates: 0.0, 0.2 (boundary, dropped), 0.4, 0.6, 0.8 (boundary, dropped), 1.0
    rewards = _t([[0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
    difffilter = make_data_policy({"name": "difffilter"}, DOMAINS)
    weights = difffilter.rollout_weights(rewards, rewards, torch.ones_like(rewards))
    assert weights[:, 0].tolist() == [0, 0, 1, 1, 0, 0]
    assert torch.equal(weights, weights[:, :1].expand_as(weights))  # a whole group is kept or dropped


def test_difffilter_parameters_and_validation():
    rewards = _t([[1, 0, 0, 0, 0]])  # pass rate 0.2
    loose = make_data_policy({"name": "difffilter", "low": 0.1, "high": 0.9}, DOMAINS)
    assert loose.rollout_weights(rewards, rewards, rewards).sum() == 5
    with pytest.raises(ValueError, match="low < high"):
        make_data_policy({"name": "difffilter", "low": 0.8, "high": 0.2}, DOMAINS)


def test_maxvar_keeps_the_max_variance_subset_by_hand():
    # G = 4 keeps 2: the candidate pairs are {0.9, 0.5} (spread 0.4), {0.9, 0.1} (0.8), {0.2, 0.1} (0.1)
    assert _weights("maxvar", _t([[0.2, 0.9, 0.5, 0.1]])).tolist() == [[0, 1, 0, 1]]
    # G = 5 keeps round(2.5) = 2 (half to even): the success and, of the tied failures, the first
    assert _weights("maxvar", _t([[0, 1, 0, 0, 0]])).tolist() == [[1, 1, 0, 0, 0]]
    # G = 6 keeps 3: {1,1,1} var 0, {1,1,0} and {1,0,0} both 2/9 -> the first (more from the top) wins
    assert _weights("maxvar", _t([[1, 1, 1, 0, 0, 0]])).tolist() == [[1, 1, 0, 0, 0, 1]]
    # an all-equal group still keeps 2 (no variance to gain)
    assert _weights("maxvar", _t([[1, 1, 1, 1]])).tolist() == [[1, 1, 0, 0]]


def test_maxvar_matches_brute_force_over_all_subsets():
    rng = np.random.default_rng(3)
    rewards = _t(rng.choice([0.0, 0.25, 0.5, 1.0], size=(30, 6)).tolist())
    weights = _weights("maxvar", rewards)
    for row, w in zip(rewards.tolist(), weights.tolist()):
        kept = [r for r, keep in zip(row, w) if keep]
        best = max(statistics.pvariance(subset) for subset in itertools.combinations(row, 3))
        assert len(kept) == 3 and statistics.pvariance(kept) == pytest.approx(best)


def test_gfpo_keeps_the_k_best_reward_per_token():
    # reward/length: 0.1, 0.25, 0, 0.2, 0.25 -> the best three are rollouts 1, 4 and 3
    rewards, lengths = _t([[1, 1, 0, 1, 1]]), torch.tensor([[10, 4, 2, 5, 4]])
    assert _weights("gfpo", rewards, lengths=lengths).tolist() == [[0, 1, 0, 1, 1]]
    # all tied: the lowest indices; k = 2 as a parameter; a group smaller than k keeps everything
    assert _weights("gfpo", _t([[1, 1, 1, 1, 1]]), lengths=torch.full((1, 5), 3)).tolist() == [[1, 1, 1, 0, 0]]
    assert _weights("gfpo", rewards, lengths=lengths, k=2).tolist() == [[0, 1, 0, 0, 1]]
    assert _weights("gfpo", _t([[0, 1]]), lengths=torch.ones(1, 2)).tolist() == [[1, 1]]


def test_topk_keeps_the_top_half_of_the_batch_by_absolute_advantage():
    advantages = _t([[1.5, -0.5, -0.5, -0.5], [0, 0, 0, 0]])  # 8 rollouts -> 4 kept: the first group
    assert _weights("topk", advantages, advantages).tolist() == [[1, 1, 1, 1], [0, 0, 0, 0]]
    advantages = _t([[0.2, -0.9, 0.9], [0.1, 0.9, -0.3]])  # |A| 0.9 at 1, 2, 4 -> 3 of 6 kept
    assert _weights("topk", advantages, advantages).tolist() == [[0, 1, 1], [0, 1, 0]]
    # fraction 0.25 of 6 -> round(1.5) = 2: the two first of the tied 0.9s
    assert _weights("topk", advantages, advantages, fraction=0.25).tolist() == [[0, 1, 1], [0, 0, 0]]


def test_dapo_keeps_groups_whose_rewards_are_not_all_equal():
    rewards = _t([[1, 1, 1], [0, 0, 0], [0, 1, 0], [0.5, 0.5, 1]])
    policy = make_data_policy({"name": "dapo"}, DOMAINS)
    assert policy.rollout_weights(rewards, rewards, rewards)[:, 0].tolist() == [0, 0, 1, 1]
    assert policy.max_tries == 10 and make_data_policy({"name": "dapo", "max_tries": 3}, DOMAINS).max_tries == 3


# ---------------------------------------------------------------- reweight


def test_per_weights_by_hand():
    advantages = [1.5, -0.5, -0.5, -0.5, 0, 0, 0, 0]
    raw = [math.sqrt(abs(a) + 1e-8) for a in advantages]  # 1.2247, 0.7071 x3, 1e-4 x4
    expected = [r / (sum(raw) / len(raw)) for r in raw]
    w = _weights("per", torch.zeros(2, 4), _t(advantages).view(2, 4))
    assert w.flatten().tolist() == pytest.approx(expected, rel=1e-6)
    assert w[0, 0].item() == pytest.approx(1.2247449 / 0.4183082, rel=1e-6)  # mean of raw = 3.346466 / 8


def test_softmax_weights_by_hand():
    advantages = [1.5, -0.5, -0.5, -0.5, 0, 0, 0, 0]
    # e^1.5 = 4.481689, e^0.5 = 1.648721, e^0 = 1; sum = 13.427853; w = 8 e^|A| / sum
    w = _weights("softmax", torch.zeros(2, 4), _t(advantages).view(2, 4))
    assert w[0].tolist() == pytest.approx([8 * 4.481689 / 13.427853] + [8 * 1.648721 / 13.427853] * 3, rel=1e-6)
    assert w[1].tolist() == pytest.approx([8 / 13.427853] * 4, rel=1e-6)
    hot = _weights("softmax", torch.zeros(2, 4), _t(advantages).view(2, 4), temperature=0.5)
    expected = [8 * p for p in _softmax([abs(a) / 0.5 for a in advantages])]
    assert hot.flatten().tolist() == pytest.approx(expected, rel=1e-6)


def test_diffband_doubles_the_interquartile_band():
    # rewards 0, .2, .4, .6, .8, 1: q25 = 0.2 + 0.25*0.2 = 0.25, q75 = 0.6 + 0.75*0.2 = 0.75 -> 0.4, 0.6 inside
    # raw [1, 1, 2, 2, 1, 1], mean 8/6 -> [0.75, 0.75, 1.5, 1.5, 0.75, 0.75]
    w = _weights("diffband", _t([[0.0, 0.2, 0.4], [0.6, 0.8, 1.0]]))
    assert w.flatten().tolist() == pytest.approx([0.75, 0.75, 1.5, 1.5, 0.75, 0.75])
    # the band is closed: rewards 0, 1, 1, 1 -> q25 = 0.75, q75 = 1; the three 1s sit on the edge and count
    # raw [1, 2, 2, 2], mean 7/4 -> [4/7, 8/7, 8/7, 8/7]
    assert _weights("diffband", _t([[0, 1, 1, 1]])).flatten().tolist() == pytest.approx([4 / 7, 8 / 7, 8 / 7, 8 / 7])


def test_ar_token_weights_by_hand():
    policy = make_data_policy({"name": "ar"}, DOMAINS)
    probs = torch.tensor([[0.5, 1.0, 0.2], [0.8, 0.3, 0.9]])
    mask = torch.tensor([[True, True, True], [True, False, False]])
    weights = torch.ones(1, 2)  # one group of two rollouts
    # w = 0.5 p + 0.5 on the 4 valid tokens: 0.75, 1.0, 0.6, 0.9; mean 3.25 / 4 = 0.8125
    w = policy.loss_weights(weights, probs.log(), mask)
    assert w.shape == (2, 3)
    assert w[mask].tolist() == pytest.approx([0.75 / 0.8125, 1.0 / 0.8125, 0.6 / 0.8125, 0.9 / 0.8125], rel=1e-6)
    assert w[~mask].tolist() == [0.0, 0.0]
    assert w[mask].mean().item() == pytest.approx(1.0)
    flat = make_data_policy({"name": "ar", "alpha": 0.0}, DOMAINS).loss_weights(weights, probs.log(), mask)
    assert flat[mask].tolist() == pytest.approx([1.0] * 4)  # alpha 0: uniform tokens
    assert torch.equal(policy.rollout_weights(probs, probs, probs), torch.ones(2, 3))


# ---------------------------------------------------------------- domain mixtures


def _groups(domain_means: dict, G: int = 10):
    """One group of G 0/1 rewards per domain with the given mean (in tenths)."""
    domains = list(domain_means)
    rewards = _t([[1] * round(m * G) + [0] * (G - round(m * G)) for m in domain_means.values()])
    return domains, rewards


def _observe(policy, step, domain_means, advantages=None):
    domains, rewards = _groups(domain_means)
    policy.observe(
        step,
        domains,
        rewards,
        advantages=rewards if advantages is None else advantages,
        prompt_ids=[f"{d}-{step}" for d in domains],
    )


def test_static_mixture_is_equal_per_domain():
    shares = make_data_policy({"name": "static"}, DOMAINS).domain_shares(7)
    np.testing.assert_allclose(shares, [1 / 3] * 3)
    assert domain_counts(shares, 64).tolist() == [22, 21, 21]


@pytest.mark.parametrize("total", [0, 1, 7, 64, 1000])
def test_domain_counts_sum_and_rounding(total):
    shares = np.array([0.5, 0.3, 0.2])
    counts = domain_counts(shares, total)
    assert counts.sum() == total
    assert np.all(np.abs(counts - shares * total) < 1)


def test_reward_gap_after_one_warmup_step_by_hand():
    policy = make_data_policy({"name": "reward_gap"}, DOMAINS)
    np.testing.assert_allclose(policy.domain_shares(1), [1 / 3] * 3)  # warm-up
    _observe(policy, 1, {"logic": 0.2, "math": 0.8, "science": 0.5})
    # gaps 0.6, 0, 0.3: e^.6 = 1.822119, 1, e^.3 = 1.349859; sum 4.171978
    np.testing.assert_allclose(policy.domain_shares(2), [0.436752, 0.239694, 0.323554], atol=1e-6)
    np.testing.assert_allclose(policy.domain_shares(2), _softmax([0.6, 0.0, 0.3]))


def test_reward_gap_floor_clips_and_renormalises():
    policy = make_data_policy({"name": "reward_gap", "temperature": 0.05}, DOMAINS)
    _observe(policy, 1, {"logic": 0.2, "math": 0.8, "science": 0.5})
    # softmax([12, 0, 6]) = [0.997521, 6e-6, 0.002473] -> [0.997521, 0.05, 0.05] / 1.097521
    expected = _floored(_softmax([12.0, 0.0, 6.0]), 0.05)
    np.testing.assert_allclose(policy.domain_shares(2), expected)
    np.testing.assert_allclose(expected, [0.908886, 0.045557, 0.045557], atol=1e-6)


def test_mixture_window_and_update_cadence():
    first, second = {"logic": 0.0, "math": 1.0, "science": 0.5}, {"logic": 1.0, "math": 0.0, "science": 0.5}
    long, short = (make_data_policy({"name": "reward_gap", "window": w}, DOMAINS) for w in (50, 1))
    for policy in (long, short):
        _observe(policy, 1, first)
        _observe(policy, 2, second)
    np.testing.assert_allclose(long.domain_shares(3), [1 / 3] * 3)  # means 0.5, 0.5, 0.5 over two steps
    np.testing.assert_allclose(short.domain_shares(3), _softmax([0.0, 1.0, 0.5]))  # only step 2 left
    slow = make_data_policy({"name": "reward_gap", "update_every": 2}, DOMAINS)
    slow.domain_shares(1)
    _observe(slow, 1, first)
    at_2 = slow.domain_shares(2)  # first update after the warm-up step
    np.testing.assert_allclose(at_2, _softmax([1.0, 0.0, 0.5]))
    _observe(slow, 2, second)
    np.testing.assert_allclose(slow.domain_shares(3), at_2)  # step 3: no update
    np.testing.assert_allclose(slow.domain_shares(4), [1 / 3] * 3)  # step 4: update over both steps


def test_dump_ucb_by_hand():
    policy = make_data_policy({"name": "dump_ucb"}, DOMAINS)
    domains = ["logic", "logic", "math", "math", "math", "science"]
    advantages = _t([[1, -1], [0, 0], [0.5, -0.5], [0.5, -0.5], [2, -2], [0, 0]])
    policy.observe(1, domains, torch.zeros(6, 2), advantages=advantages, prompt_ids=list("abcdef"))
    # mean |A|: logic (1 + 0)/2 = 0.5, math (0.5 + 0.5 + 2)/3 = 1, science 0; n = 2, 3, 1; N = 6
    scores = [
        0.5 + math.sqrt(2 * math.log(7) / 3),
        1.0 + math.sqrt(2 * math.log(7) / 4),
        0.0 + math.sqrt(2 * math.log(7) / 2),
    ]  # 1.638979, 1.986385, 1.394958
    assert scores == pytest.approx([1.638979, 1.986385, 1.394958], abs=1e-6)
    np.testing.assert_allclose(policy.domain_shares(2), _softmax(scores))


def test_tscl_uses_the_absolute_least_squares_slope():
    policy = make_data_policy({"name": "tscl"}, DOMAINS)
    _observe(policy, 1, {"logic": 0.1, "math": 0.5, "science": 0.9})
    _observe(policy, 2, {"logic": 0.2, "math": 0.5})  # science absent at step 2
    _observe(policy, 3, {"logic": 0.3, "math": 0.5, "science": 0.3})
    # slopes: logic +0.1/step, math 0, science (0.3 - 0.9)/(3 - 1) = -0.3 -> softmax(0.1, 0, 0.3)
    np.testing.assert_allclose(policy.domain_shares(4), _softmax([0.1, 0.0, 0.3]))
    np.testing.assert_allclose(policy.domain_shares(4), [0.319873, 0.289433, 0.390694], atol=1e-6)
    one = make_data_policy({"name": "tscl"}, DOMAINS)
    _observe(one, 1, {"logic": 0.1, "math": 0.9, "science": 0.4})
    np.testing.assert_allclose(one.domain_shares(2), [1 / 3] * 3)  # one point per domain: slope 0


def test_exp3_by_hand():
    policy = make_data_policy({"name": "exp3"}, DOMAINS)
    np.testing.assert_allclose(policy.domain_shares(1), [1 / 3] * 3)
    domains = ["logic", "logic", "math", "math", "science"]
    rewards = _t([[1, 0], [1, 1], [0, 1], [1, 0], [0, 0]])  # learnable shares: logic 1/2, math 2/2, science 0/1
    policy.observe(1, domains, rewards, advantages=rewards, prompt_ids=list("abcde"))
    # w = exp(0.1 r / (3 * 1/3)) = e^.05, e^.1, 1 = 1.051271, 1.105171, 1; p = 0.9 w / 3.156442 + 0.1 / 3
    w = [math.exp(0.05), math.exp(0.1), 1.0]
    expected = [0.9 * x / sum(w) + 0.1 / 3 for x in w]
    np.testing.assert_allclose(policy.domain_shares(2), expected)
    np.testing.assert_allclose(expected, [0.333083, 0.348452, 0.318465], atol=1e-6)


# ---------------------------------------------------------------- per-prompt state: GRESO, Thompson


def test_in_turn_splits_repeated_rows_into_rounds():
    rounds = [r.tolist() for r in _in_turn(np.array([5, 3, 5, 5, 3, 7]))]
    assert rounds == [[0, 1, 5], [2, 4], [3]]
    assert list(_in_turn(np.array([], dtype=int))) == []


def _observe_prompts(policy, step, prompt_rewards: dict):
    ids = list(prompt_rewards)
    policy.observe(step, ["math"] * len(ids), _t(list(prompt_rewards.values())), prompt_ids=ids)


def test_greso_keep_probability_follows_zero_variance_streaks():
    policy = make_data_policy({"name": "greso"}, DOMAINS)
    _observe_prompts(policy, 1, {"a": [1, 1, 1, 1], "b": [0, 0, 0, 0], "c": [1, 0, 1, 1]})
    # all-correct share 1/3 >= 0.25/3 -> p_easy 0.49; all-wrong share 1/3 >= 0.5/3 -> p_hard 0.49
    assert (policy.p_easy, policy.p_hard) == pytest.approx((0.49, 0.49))
    assert policy.keep_probability(["a", "b", "c", "new"]).tolist() == pytest.approx([0.49, 0.49, 1, 1])
    _observe_prompts(policy, 2, {"a": [1, 1, 1, 1], "c": [0, 1, 0, 0], "d": [1, 0, 0, 0], "e": [0, 1, 1, 1]})
    # easy share 1/4 >= 1/12 -> p_easy 0.48; hard share 0 < 1/6 -> p_hard 0.50; a's streak is 2, b's still 1
    assert (policy.p_easy, policy.p_hard) == pytest.approx((0.48, 0.50))
    assert policy.keep_probability(["a", "b", "c"]).tolist() == pytest.approx([0.48**2, 0.50, 1])
    assert policy.diagnostics() == pytest.approx({"greso_p_easy": 0.48, "greso_p_hard": 0.50})


def test_greso_streaks_repeat_within_a_step_reset_and_floor():
    policy = make_data_policy({"name": "greso", "p_easy": 0.95}, DOMAINS)
    _observe_prompts(policy, 1, {"a": [1, 1]} | {f"x{i}": [1, 0] for i in range(20)})
    policy.observe(2, ["math"] * 10, torch.ones(10, 2), prompt_ids=["a"] * 10)  # a, ten times in one step
    # streak 11: 0.94^11 = 0.506 (p_easy: 0.95 -> 0.95 (share 1/21 < 1/12, clipped at max_p) -> 0.94)
    assert policy.keep_probability(["a"])[0] == pytest.approx(0.94**11)
    policy.observe(3, ["math"] * 80, torch.ones(80, 2), prompt_ids=["a"] * 80)
    assert policy.keep_probability(["a"])[0] == 0.01  # max(0.93^91, 0.01)
    _observe_prompts(policy, 4, {"a": [1, 0]})
    assert policy.keep_probability(["a"])[0] == 1.0  # a mixed result resets the streak


def test_greso_choose_skips_with_the_keep_probability():
    policy = make_data_policy({"name": "greso"}, DOMAINS)
    _observe_prompts(policy, 1, {"a": [1, 1], "b": [0, 0], "c": [1, 0]})
    ids = ["a", "b", "c", "d", "a", "b"]
    keep = policy.keep_probability(ids)  # 0.49, 0.49, 1, 1, 0.49, 0.49
    u = np.random.default_rng(11).random(len(ids))
    expected = [i for i in range(len(ids)) if u[i] < keep[i]]
    assert policy.choose_prompts(2, ids, 6, np.random.default_rng(11)).tolist() == expected
    assert policy.choose_prompts(2, ids, 2, np.random.default_rng(11)).tolist() == expected[:2]


def test_greso_never_returns_an_empty_try():
    policy = make_data_policy({"name": "greso"}, DOMAINS)
    policy.observe(1, ["math"] * 30, torch.ones(30, 2), prompt_ids=["a"] * 10 + ["b"] * 20)
    assert policy.keep_probability(["a", "b"]).tolist() == [0.01, 0.01]  # 0.49^10, 0.49^20 < 0.01
    for seed in range(20):
        u = np.random.default_rng(seed).random(2)
        chosen = policy.choose_prompts(2, ["a", "b"], 2, np.random.default_rng(seed)).tolist()
        assert chosen == ([i for i in range(2) if u[i] < 0.01] or [0])


def test_thompson_posterior_update_by_hand():
    policy = make_data_policy({"name": "thompson"}, DOMAINS)
    assert policy.oversample == 8
    _observe_prompts(policy, 1, {"p": [1, 1, 0, 0]})
    # alpha = 0.5*1 + 0.5*1 + 2 = 3, beta = 0.5*1 + 0.5*1 + 2 = 3
    assert [x.tolist() for x in policy.posterior(["p"])] == [[3.0], [3.0]]
    policy.observe(2, ["math"] * 2, _t([[1, 1, 1, 1], [0, 0, 0, 1]]), prompt_ids=["p", "p"])
    # in turn: alpha = 1.5 + 0.5 + 4 = 6, beta = 1.5 + 0.5 + 0 = 2; then alpha = 3 + 0.5 + 1 = 4.5, beta = 1 + 0.5 + 3
    assert [x.tolist() for x in policy.posterior(["p", "unseen"])] == [[4.5, 1.0], [4.5, 1.0]]


def test_thompson_chooses_sampled_rates_nearest_the_target():
    policy = make_data_policy({"name": "thompson"}, DOMAINS)
    ids = ["sure", "half", "never", "forty"]
    rows = policy.state.rows(ids)
    policy.state["alpha"][rows] = [1e6, 1e6, 1.0, 4e5]  # sampled rates ~1, ~0.5, ~0, ~0.4
    policy.state["beta"][rows] = [1.0, 1e6, 1e6, 6e5]
    assert policy.choose_prompts(1, ids, 2, np.random.default_rng(0)).tolist() == [1, 3]
    alpha, beta = policy.posterior(ids)
    theta = np.random.default_rng(4).beta(alpha, beta)
    nearest = sorted(range(4), key=lambda i: abs(theta[i] - 0.5))[:3]
    assert policy.choose_prompts(1, ids, 3, np.random.default_rng(4)).tolist() == sorted(nearest)
    assert 0.0 <= policy.diagnostics()["thompson_theta_mean"] <= 1.0
