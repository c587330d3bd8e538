"""The length bonus (``recipe.length_bonus``): a dense auxiliary reward earned without solving the task — its value
by hand, the reward it adds to the verdict, why std-normalised GRPO cannot tell a small coefficient from a large one
in all-fail groups, its validation, and a trainer that learns to earn it."""

import copy

import pandas as pd
import pytest
import torch

from armlab.configfile import ConfigError
from armlab.experiment.validate import validate_config
from armlab.training.estimators import dr_grpo, grpo
from armlab.training.recipe import resolve_arm
from armlab.training.rollouts import length_bonus, score
from armlab.training.tasks import EOS
from armlab.training.train import train


def test_the_bonus_is_the_coefficient_times_the_responses_share_of_the_length_cap():
    assert length_bonus("12", 0.3, 6) == pytest.approx(0.3 * 2 / 6)
    assert length_bonus("", 0.3, 6) == 0.0
    assert length_bonus("123456", 0.3, 6) == pytest.approx(0.3)
    assert length_bonus("1234567", 0.3, 6) == pytest.approx(0.3)  # capped at the length cap


def test_the_reward_is_the_verdict_plus_the_bonus_on_the_text_before_eos(tiny_config):
    def _recipe(**fields):
        return resolve_arm(tiny_config, "grpo").replace(reward_noise=0.0, max_new_tokens=6, **fields)

    # add: "3+4=" -> 7; a right answer earns 1 + its bonus, a wrong one the bonus alone
    right = score("add", "7", "add-0", "7" + EOS, _recipe(length_bonus=0.6), seed=1)
    wrong = score("add", "7", "add-0", "99999" + EOS, _recipe(length_bonus=0.6), seed=1)
    rambling = score("add", "7", "add-0", "7abcde", _recipe(length_bonus=0.6), seed=1)  # no EOS: all 6 characters
    assert right == pytest.approx(1 + 0.6 * 1 / 6)
    assert wrong == pytest.approx(0.6 * 5 / 6)
    assert rambling == pytest.approx(0.6)
    assert score("add", "7", "add-0", "7" + EOS, _recipe(), seed=1) == 1.0  # no bonus: the plain verdict


def test_in_all_fail_groups_z_scored_advantages_do_not_depend_on_the_coefficient_and_centred_ones_scale_with_it():
    """The Dark Room argument: when every rollout of a group fails, its rewards are c·s for the lengths' shares s, so
    (r − μ)/σ = (s − s̄)/σ_s for every c > 0 (up to GRPO's ε), while r − μ (Dr. GRPO) is c times the small."""
    shares = torch.tensor([[1 / 6, 2 / 6, 6 / 6, 3 / 6]])
    small, large = 0.01 * shares, 0.1 * shares
    by_hand = (shares - shares.mean()) / shares.std(unbiased=True)
    assert torch.allclose(grpo(small), by_hand, atol=1e-3)
    assert torch.allclose(grpo(large), by_hand, atol=1e-4)
    assert torch.allclose(dr_grpo(large), 10 * dr_grpo(small), atol=1e-7)
    assert dr_grpo(small).abs().max() < 0.01


def test_a_length_bonus_with_a_data_policy_that_reads_pass_rates_is_refused_naming_the_key(tiny_config):
    config = copy.deepcopy(tiny_config)
    config["arms"] = {"grpo": {}, "shaped": {"length_bonus": 0.1, "data_policy": "difffilter"}}
    config["comparisons"] = [{"family": "f", "reference": "grpo", "arms": ["shaped"]}]
    with pytest.raises(ConfigError, match=r"arms\.shaped\.length_bonus: .*'difffilter' reads them as pass rates"):
        validate_config(config, source="x.yaml")
    config["arms"]["shaped"] = {"length_bonus": 0.1}
    validate_config(config, source="x.yaml")


def test_a_length_bonus_runs_with_the_data_policies_whose_entries_take_shaped_rewards(tiny_config, monkeypatch):
    from armlab.training.data_policies import DATA_POLICIES

    config = copy.deepcopy(tiny_config)
    config["arms"] = {"grpo": {}, "shaped": {"length_bonus": 0.1, "data_policy": "difffilter"}}
    config["comparisons"] = [{"family": "f", "reference": "grpo", "arms": ["shaped"]}]
    monkeypatch.setattr(DATA_POLICIES["difffilter"], "shaped_rewards", True)  # a planted entry: validation follows it
    validate_config(copy.deepcopy(config), source="x.yaml")
    monkeypatch.setattr(DATA_POLICIES["static"], "shaped_rewards", False)
    config["arms"]["shaped"]["data_policy"] = "static"
    with pytest.raises(
        ConfigError, match=r"'static' reads them as pass rates; it runs with \['uniform', 'difffilter'\]"
    ):
        validate_config(config, source="x.yaml")


def test_the_trainer_learns_to_earn_the_bonus(tiny_config, tiny_experiment, tmp_path):
    """A planted effect: with a large bonus the responses grow to the length cap; without it they shrink."""
    config = copy.deepcopy(tiny_config)
    config["recipe"].update(steps=30, lr=0.003, log_every=30, checkpoint_every=30)
    config["arms"] = {"grpo": {}, "shaped": {"length_bonus": 2.0}}
    config["comparisons"] = [{"family": "f", "reference": "grpo", "arms": ["shaped"]}]
    config = validate_config(config)
    lengths = {}
    for arm in config["arms"]:
        train(config, arm, 1, tiny_experiment / "data", tiny_experiment / "base" / "policy.pt", tmp_path / arm)
        steps = pd.read_parquet(tmp_path / arm / "steps.parquet")
        lengths[arm] = steps["response_len"].iloc[0], steps["response_len"].iloc[-5:].mean()
    first, last = lengths["shaped"]
    assert lengths["grpo"][0] == first  # step 1 rolls out the base policy on the same streams
    assert last == config["recipe"]["max_new_tokens"]  # every rollout runs to the length cap
    assert lengths["grpo"][1] < first - 1.0  # plain GRPO learns to stop after the answer
