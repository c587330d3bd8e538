"""Policy losses (training/losses.py) against their published formulas written out elementwise, their gradients
where the rule is about gradients, clip masks, the batch-std estimator, the new aggregations, config validation,
and a short builtin training run per loss."""

import copy
import math

import pandas as pd
import pytest
import torch

from armlab.configfile import ConfigError
from armlab.experiment.validate import validate_config
from armlab.training.estimators import ESTIMATORS
from armlab.training.losses import POLICY_LOSSES, list_policy_losses, loss_spec
from armlab.training.policy import load_model
from armlab.training.recipe import resolve_arm
from armlab.training.train import aggregate, policy_loss, train

# two rollouts of three tokens; the second rollout's last token is padding
Q = [[0.1, -0.5, 0.3], [1.5, -0.1, 0.0]]  # log π − log π_old per token
LOGP = [[-0.7, -1.2, -0.3], [-2.0, -0.4, -1.0]]  # log π
A = [1.0, -2.0]  # one advantage per rollout
MASK = [[True, True, True], [True, True, False]]
EPS = 0.2


def _inputs(requires_grad=False):
    logp = torch.tensor(LOGP, requires_grad=requires_grad)
    old = logp.detach() - torch.tensor(Q)  # so that logp − old = Q and the ratio's gradient flows through logp
    return logp - old, logp, torch.tensor(A)[:, None], torch.tensor(MASK)


def _clip(x, low, high):
    return min(max(x, low), high)


def _elementwise(f):
    """f(q, logp, a) for every token, as nested lists."""
    return [[f(Q[b][t], LOGP[b][t], A[b]) for t in range(3)] for b in range(2)]


def _close(actual, expected, atol=1e-6):
    torch.testing.assert_close(actual, torch.tensor(expected), atol=atol, rtol=0)


def test_ppo_clip_is_the_symmetric_clip():
    pg, clipped = POLICY_LOSSES["ppo_clip"](*_inputs(), EPS)
    _close(pg, _elementwise(lambda q, lp, a: -min(math.exp(q) * a, _clip(math.exp(q), 0.8, 1.2) * a)))
    assert clipped.tolist() == [[False, True, True], [True, False, False]]


def test_clip_higher_decouples_the_upper_bound():
    pg, clipped = POLICY_LOSSES["clip_higher"](*_inputs(), EPS, clip_high=0.28)
    _close(pg, _elementwise(lambda q, lp, a: -min(math.exp(q) * a, _clip(math.exp(q), 0.8, 1.28) * a)))
    # exp(0.3) = 1.35 > 1.28 is clipped; exp(0.1) = 1.105 is not
    assert clipped.tolist() == [[False, True, True], [True, False, False]]
    # with A > 0 and ratio 1.25 the upper clip binds for ε = 0.2 but not for ε_high = 0.28
    q = torch.tensor([[math.log(1.25)]])
    args = (q, q, torch.ones(1, 1), torch.ones(1, 1, dtype=torch.bool), EPS)
    assert POLICY_LOSSES["ppo_clip"](*args)[0].item() == pytest.approx(-1.2)
    assert POLICY_LOSSES["clip_higher"](*args, clip_high=0.28)[0].item() == pytest.approx(-1.25)


def test_dual_clip_bounds_the_loss_of_negative_advantages():
    def dual(q, lp, a, c=3.0):
        ppo = -min(math.exp(q) * a, _clip(math.exp(q), 0.8, 1.2) * a)
        return min(ppo, -c * a) if a < 0 else ppo

    pg, clipped = POLICY_LOSSES["dual_clip"](*_inputs(), EPS, clip_c=3.0)
    _close(pg, _elementwise(dual))
    # rollout 2, token 1: ρ = exp(1.5) = 4.48 > c with A = −2: the loss is c·|A| = 6, not 8.96
    assert pg[1, 0].item() == pytest.approx(6.0)
    assert clipped.tolist() == [[False, True, True], [True, False, False]]


def test_cispo_weights_are_clipped_and_carry_no_gradient():
    log_ratio, logp, adv, mask = _inputs(requires_grad=True)
    pg, clipped = POLICY_LOSSES["cispo"](log_ratio, logp, adv, mask, EPS, clip_high=0.3, clip_low=0.2)
    weight = _elementwise(lambda q, lp, a: _clip(math.exp(q), 0.8, 1.3))
    _close(pg, _elementwise(lambda q, lp, a: -_clip(math.exp(q), 0.8, 1.3) * a * lp))
    # ∂/∂log π of the masked sum is sg(w)·(−A): no term from the ratio inside the weight
    (pg * mask).sum().backward()
    expected = [[-weight[b][t] * A[b] if MASK[b][t] else 0.0 for t in range(3)] for b in range(2)]
    _close(logp.grad, expected)
    # exp(0.3) = 1.35 > 1.3, exp(1.5) > 1.3, exp(−0.5) = 0.61 < 0.8
    assert clipped.tolist() == [[False, True, True], [True, False, False]]


def test_cispo_default_has_no_lower_bound():
    pg, clipped = POLICY_LOSSES["cispo"](*_inputs(), EPS)
    _close(pg, _elementwise(lambda q, lp, a: -min(math.exp(q), 5.0) * a * lp))
    assert not clipped.any()  # no ratio above 5, none below 0


def test_gmpo_is_the_geometric_mean_of_clipped_token_ratios():
    def sequence_ratio(b, low=0.4, high=0.4):
        sign = math.copysign(1.0, A[b])
        qs = [sign * min(sign * Q[b][t], sign * _clip(Q[b][t], -low, high)) for t in range(3) if MASK[b][t]]
        return math.exp(sum(qs) / len(qs))

    pg, clipped = POLICY_LOSSES["gmpo"](*_inputs(), EPS)
    # every token of a rollout carries the rollout's loss −A·ρ_geo
    _close(pg, [[-A[b] * sequence_ratio(b)] * 3 for b in range(2)])
    # the clip is pessimistic: for A > 0 it cuts only the upside (−0.5 stays), for A < 0 only the downside (1.5 stays)
    assert sequence_ratio(0) == pytest.approx(math.exp((0.1 - 0.5 + 0.3) / 3))
    assert sequence_ratio(1) == pytest.approx(math.exp((1.5 - 0.1) / 2))
    assert clipped.tolist() == [[False, True, False], [True, False, False]]
    # through seq-mean-token-mean it is the paper's mean over sequences
    loss = aggregate(pg, torch.ones(2), torch.tensor(MASK), "seq-mean-token-mean", 3)
    assert loss.item() == pytest.approx(-(A[0] * sequence_ratio(0) + A[1] * sequence_ratio(1)) / 2, abs=1e-6)


def test_gmpo_clips_the_log_ratio_where_it_binds():
    q = torch.tensor([[0.6, 0.0], [-0.6, 0.0]])
    pg, clipped = POLICY_LOSSES["gmpo"](q, q, torch.tensor([[1.0], [-1.0]]), torch.ones(2, 2, dtype=torch.bool), EPS)
    # A > 0: 0.6 → 0.4; A < 0: −0.6 → −0.4; each rollout's ratio is exp of the mean over its two tokens
    _close(pg, [[-math.exp(0.2)] * 2, [math.exp(-0.2)] * 2])
    assert clipped.tolist() == [[True, False], [True, False]]


def test_sapo_is_the_soft_gate_with_signed_temperatures():
    def gate(q, a):
        tau = 1.0 if a > 0 else 1.05
        return 4 / tau / (1 + math.exp(-tau * (math.exp(q) - 1)))

    pg, clipped = POLICY_LOSSES["sapo"](*_inputs(), EPS)
    _close(pg, _elementwise(lambda q, lp, a: -gate(q, a) * a))
    assert not clipped.any()
    # at ρ = 1 the gate's slope is 1: the gradient is the plain policy gradient −A per unit log-ratio
    q = torch.zeros(1, 2, requires_grad=True)
    pg, _ = POLICY_LOSSES["sapo"](q, q, torch.tensor([[0.5]]), torch.ones(1, 2, dtype=torch.bool), EPS)
    pg.sum().backward()
    _close(q.grad, [[-0.5, -0.5]])


def test_gpg_is_the_plain_policy_gradient():
    log_ratio, logp, adv, mask = _inputs(requires_grad=True)
    pg, clipped = POLICY_LOSSES["gpg"](log_ratio, logp, adv, mask, EPS)
    _close(pg, _elementwise(lambda q, lp, a: -a * lp))
    (pg * mask).sum().backward()
    _close(logp.grad, [[-A[b] if MASK[b][t] else 0.0 for t in range(3)] for b in range(2)])
    assert not clipped.any()


# covariance cases: A − mean A = ±2, log π − mean log π = [[1, −1.5], [0.5, 0]] → cov [[2, −3], [−1, 0]]
COV_LOGP = torch.tensor([[-0.5, -3.0], [-1.0, -1.5]])
COV_A = torch.tensor([[2.0], [-2.0]])
COV_MASK = torch.ones(2, 2, dtype=torch.bool)


def test_clip_cov_removes_the_gradient_of_the_token_in_the_covariance_band():
    q = torch.zeros(2, 2)  # ratio 1: the ratio clip cuts nothing
    pg, clipped = POLICY_LOSSES["clip_cov"](q, COV_LOGP, COV_A, COV_MASK, EPS, fraction=0.25)
    # only token (0, 0) has cov 2 in (1, 5); int(0.25 · 4) = 1 token is chosen
    _close(pg, [[0.0, -2.0], [2.0, 2.0]])
    assert clipped.tolist() == [[True, False], [False, False]]
    # a token already clipped by the ratio is no candidate: ρ = exp(0.5) > 1.2 with A > 0
    q = torch.tensor([[0.5, 0.0], [0.0, 0.0]])
    pg, clipped = POLICY_LOSSES["clip_cov"](q, COV_LOGP, COV_A, COV_MASK, EPS, fraction=0.25)
    _close(pg, [[-2.0 * 1.2, -2.0], [2.0, 2.0]])
    assert clipped.tolist() == [[True, False], [False, False]]  # clipped by the ratio, gradient kept by the min


def test_clip_cov_chooses_the_configured_number_of_candidates_at_random():
    logp = torch.linspace(-3, 0, 40).view(4, 10)
    adv = torch.tensor([[-3.0], [-1.0], [1.0], [3.0]])
    mask = torch.ones(4, 10, dtype=torch.bool)
    torch.manual_seed(0)
    _, chosen = POLICY_LOSSES["clip_cov"](torch.zeros(4, 10), logp, adv, mask, EPS, fraction=0.1, cov_low=0.5)
    centred = (adv.expand(4, 10) - adv.mean()) * (logp - logp.mean())
    candidates = (centred > 0.5) & (centred < 5.0)
    assert int(chosen.sum()) == 4 and bool((chosen <= candidates).all())


def test_kl_cov_penalises_the_top_covariance_tokens():
    q = torch.tensor([[0.1, 0.2], [-0.1, 0.3]])
    pg, chosen = POLICY_LOSSES["kl_cov"](q, COV_LOGP, COV_A, COV_MASK, EPS, fraction=0.25, coef=1.0)
    a = [2.0, -2.0]
    expected = [[-a[b] * math.exp(q[b, t].item()) for t in range(2)] for b in range(2)]
    expected[0][0] += 1.0 * 0.1  # the top-1 covariance token (cov 2) gets coef·|log ρ|
    _close(pg, expected)
    assert chosen.tolist() == [[True, False], [False, False]]


def test_every_loss_is_listed_with_a_one_line_source():
    listing = {entry["name"]: entry for entry in list_policy_losses()}
    assert set(listing) == set(POLICY_LOSSES)
    assert all("arXiv" in entry["description"] for entry in listing.values())
    assert listing["dual_clip"]["params"] == {"clip_c": 3.0}
    assert listing["sapo"]["params"] == {"tau_pos": 1.0, "tau_neg": 1.05}


def test_the_default_loss_is_todays_clip_bit_for_bit(tiny_config):
    torch.manual_seed(0)
    logp, old, base = torch.randn(3, 2, 4).unbind(0)
    adv, weights, mask = torch.randn(2), torch.tensor([1.0, 0.5]), torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]]).bool()
    recipe = resolve_arm(tiny_config, "grpo").replace(
        ratio_level="token", clip=0.2, kl_coef=0.1, loss_agg="token-mean", max_new_tokens=4
    )
    default = policy_loss(logp, old, base, adv, weights, mask, recipe)
    named = policy_loss(logp, old, base, adv, weights, mask, recipe.replace(policy_loss={"name": "ppo_clip"}))
    ratio = torch.exp(logp - old)
    pg = -torch.min(ratio * adv[:, None], ratio.clamp(0.8, 1.2) * adv[:, None])
    kl = torch.exp(base - logp) - (base - logp) - 1
    assert torch.equal(default[0], aggregate(pg + 0.1 * kl, weights, mask, "token-mean", 4))
    assert torch.equal(default[0], named[0]) and default[1] == named[1]
    assert default[1] == float((((ratio - 1).abs() > 0.2) & mask).sum() / mask.sum())


def test_batch_std_estimator_is_trls_batch_scaling():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 1.0]])
    flat = rewards.flatten().tolist()
    mean = sum(flat) / len(flat)
    std = math.sqrt(sum((r - mean) ** 2 for r in flat) / (len(flat) - 1))  # TRL's nanstd: Bessel-corrected
    group = [sum(row) / 4 for row in rewards.tolist()]
    expected = [[(r - group[g]) / (std + 1e-4) for r in row] for g, row in enumerate(rewards.tolist())]
    _close(ESTIMATORS["grpo_batch_std"](rewards), expected)
    trl_utils = pytest.importorskip("trl.trainer.utils")
    trl_std = trl_utils.nanstd(rewards.flatten())
    centred = rewards - rewards.mean(1, keepdim=True)
    torch.testing.assert_close(ESTIMATORS["grpo_batch_std"](rewards), centred / (trl_std + 1e-4))


def test_token_sum_aggregations_by_hand():
    per_token = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0], [9.0, 9.0, 9.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0], [1, 1, 1]], dtype=torch.bool)
    weights = torch.tensor([1.0, 2.0, 0.0])  # the third rollout drops out
    assert aggregate(per_token, weights, mask, "token-sum", 3).item() == pytest.approx(6 + 8)
    assert aggregate(per_token, weights, mask, "seq-mean-token-sum", 3).item() == pytest.approx((6 + 8) / 2)
    tokens = torch.tensor([[0.5, 1.0, 0.0], [3.0, 9.0, 9.0], [0.0, 0.0, 0.0]])  # token weights, one of them 0
    assert aggregate(per_token, tokens, mask, "token-sum", 3).item() == pytest.approx(0.5 + 2 + 12)
    assert aggregate(per_token, tokens, mask, "seq-mean-token-sum", 3).item() == pytest.approx((2.5 + 12) / 2)


def _config(tiny_config, **arms):
    config = copy.deepcopy(tiny_config)
    config.update(arms=arms, comparisons=[])
    return config


@pytest.mark.parametrize(
    "arm, message",
    [
        ({"policy_loss": "nope"}, r"arms\.bad\.policy_loss: unknown policy loss 'nope'; expected one of \["),
        ({"policy_loss": {"name": "cispo", "clip_high": "x"}}, r"arms\.bad\.policy_loss\.clip_high: expected a number"),
        ({"policy_loss": {"name": "sapo", "tau": 1}}, r"arms\.bad\.policy_loss\.tau: unknown parameter; expected"),
        ({"policy_loss": {"name": "dual_clip", "clip_c": 0.5}}, r"arms\.bad\.policy_loss: clip_c must be > 1"),
        ({"policy_loss": {"name": "sapo", "tau_neg": 0.0}}, r"arms\.bad\.policy_loss: tau_pos and tau_neg must be"),
        ({"policy_loss": {"name": "kl_cov", "fraction": 2.0}}, r"arms\.bad\.policy_loss: fraction must be in"),
        ({"policy_loss": "gmpo"}, r"arms\.bad\.policy_loss: gmpo is a sequence-level objective.*seq-mean-token-mean"),
        ({"policy_loss": "gpg", "ratio_level": "sequence"}, r"arms\.bad\.policy_loss: gpg is a token-level loss"),
        ({"policy_loss": {"name": 3}}, r"arms\.bad\.policy_loss"),
        ({"loss_agg": "token-max"}, r"arms\.bad\.loss_agg"),
    ],
)
def test_config_rejects_bad_policy_losses_naming_the_key(tiny_config, arm, message):
    with pytest.raises(ConfigError, match=message) as err:
        validate_config(_config(tiny_config, grpo={}, bad=arm))
    assert "\n" not in str(err.value)


def test_a_common_recipe_loss_is_named_as_recipe_key(tiny_config):
    config = _config(tiny_config, grpo={})
    config["recipe"]["policy_loss"] = {"name": "clip_higher", "clip_high": -1.0}
    with pytest.raises(ConfigError, match=r"recipe\.policy_loss: clip_high must be > 0"):
        validate_config(config)


def test_policy_loss_is_resolved_to_dict_form_and_absent_by_default(tiny_config):
    config = validate_config(_config(tiny_config, grpo={}, ch={"policy_loss": "clip_higher"}))
    assert "policy_loss" not in resolve_arm(config, "grpo").as_dict()  # the default recipe records no new key
    assert loss_spec(resolve_arm(config, "grpo")) == {"name": "ppo_clip"}
    assert resolve_arm(config, "ch").policy_loss == {"name": "clip_higher"}


SMOKE = {
    "clip_higher": {"policy_loss": "clip_higher"},
    "dual_clip": {"policy_loss": "dual_clip"},
    "cispo": {"policy_loss": "cispo"},
    "gmpo": {"policy_loss": "gmpo", "loss_agg": "seq-mean-token-mean"},
    "sapo": {"policy_loss": "sapo", "loss_agg": "seq-mean-token-mean"},
    "clip_cov": {"policy_loss": {"name": "clip_cov", "fraction": 0.05}},
    "kl_cov": {"policy_loss": {"name": "kl_cov", "fraction": 0.05}},
    "gpg": {"policy_loss": "gpg", "loss_agg": "token-sum"},
    "batch_std": {"estimator": "grpo_batch_std", "loss_agg": "seq-mean-token-sum"},
}


@pytest.mark.parametrize("arm", sorted(SMOKE))
def test_every_new_loss_trains_on_the_builtin_trainer(arm, tiny_config, tiny_experiment, tmp_path):
    config = _config(tiny_config, **{arm: SMOKE[arm]})
    config["recipe"].update(steps=2, updates_per_batch=2, checkpoint_every=10, log_every=1)
    config = validate_config(config)
    out = tmp_path / arm
    base = tiny_experiment / "base" / "policy.pt"
    train(config, arm, 1, tiny_experiment / "data", base, out)
    steps = pd.read_parquet(out / "steps.parquet")
    assert len(steps) == 2 and steps["loss"].notna().all() and all(math.isfinite(x) for x in steps["loss"])
    trained, start = load_model(out / "policy.pt"), load_model(base)
    assert any(not torch.equal(p, q) for p, q in zip(trained.state_dict().values(), start.state_dict().values()))


@pytest.mark.parametrize("name", sorted(POLICY_LOSSES))
def test_every_loss_declares_the_ratio_and_aggregation_its_definition_takes_and_validation_follows(name, tiny_config):
    from armlab.spec import Recipe, settings_of
    from armlab.training.losses import check_policy_loss

    loss = POLICY_LOSSES[name]
    aggregations = next(s.keywords["enum"] for s in settings_of(Recipe) if s.name == "loss_agg")
    assert isinstance(loss.sequence_ratio, bool) and loss.aggregation in (None, *aggregations)
    recipe = resolve_arm(tiny_config, "grpo").replace(
        policy_loss={"name": name}, loss_agg=loss.aggregation or "token-mean"
    )
    check_policy_loss(recipe)
    if loss.sequence_ratio:
        check_policy_loss(recipe.replace(ratio_level="sequence"))
    else:
        with pytest.raises(ValueError, match=f"{name} is a token-level loss"):
            check_policy_loss(recipe.replace(ratio_level="sequence"))
    for other in set(aggregations) - {loss.aggregation} if loss.aggregation else ():
        with pytest.raises(ValueError, match=f"set loss_agg: {loss.aggregation}"):
            check_policy_loss(recipe.replace(loss_agg=other))


@pytest.mark.parametrize("name", sorted(POLICY_LOSSES))
def test_every_losss_defaults_pass_its_own_checks(name, tiny_config):
    """Validation runs a loss on dummy tensors only for parameters the config gives: the defaults, spelt out,
    must pass the loss's own checks (a default out of its range would otherwise be accepted unchecked)."""
    from armlab.training.losses import check_policy_loss

    defaults = next(m["params"] for m in list_policy_losses() if m["name"] == name)
    aggregation = "seq-mean-token-mean" if name == "gmpo" else "token-mean"
    recipe = resolve_arm(tiny_config, "grpo")
    check_policy_loss(
        recipe.replace(policy_loss={"name": name, **defaults}, ratio_level="token", loss_agg=aggregation, clip=0.2)
    )
