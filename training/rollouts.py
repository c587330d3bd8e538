"""What the builtin trainer and the TRL backend share about rollouts: a step's random streams, its prompts, the reward.

Random streams are derived from (experiment, seed, purpose, step[, refill try]) — not from the arm — so arms that
share a seed see the same prompts and sampling noise, and a uniform or static TRL run sees the builtin run's prompts.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from armlab.spec import Recipe
from armlab.training.data_policies import domain_counts
from armlab.training.tasks import EOS, verify
from armlab.training.utils import derive_seed


def stream_key(experiment: str, recipe: Recipe) -> str:
    """What the random streams are keyed by: the experiment, or for ``recipe.stream`` k > 0 its k-th independent set."""
    return experiment if not recipe.stream else f"{experiment}/stream-{recipe.stream}"


def step_seed(experiment: str, seed: int, purpose: str, step: int, refill: int = 0) -> int:
    """The seed of a step's ``purpose`` stream; refill try k >= 1 of a step gets a stream of its own."""
    # the first try carries no try number, so it is the stream of plain GRPO, shared by every arm
    return derive_seed(experiment, seed, purpose, step, *([refill] if refill else []))


def draw_prompts(rng: np.random.Generator, pools: dict[str, list], shares: np.ndarray | None, n: int) -> list:
    """``n`` distinct prompts: uniform over the union of the pools, or split over the domains by ``shares``."""
    if shares is None:
        union = [item for domain in sorted(pools) for item in pools[domain]]
        return [union[i] for i in rng.choice(len(union), size=min(n, len(union)), replace=False)]
    return [
        pools[domain][i]
        for domain, k in zip(sorted(pools), domain_counts(shares, n))
        for i in rng.choice(len(pools[domain]), size=min(k, len(pools[domain])), replace=False)
    ]


def noisy_verdict(reward: float, noise: float, seed: int, item_id: str, response: str) -> float:
    """Flip a 0/1 verdict with probability ``noise``, decided by a hash of (seed, ε, item, response)."""
    if noise <= 0.0:
        return reward
    u = derive_seed(seed, noise, item_id, response) / 2.0**63
    return 1.0 - reward if u < noise else reward


def length_bonus(response: str, coef: float, max_new: int) -> float:
    """A dense auxiliary reward earned without solving the task: ``coef`` × the response's share of the length cap.

    The "Dark Room in the reward channel" probe: a group whose rollouts all fail differs only in this bonus, so
    std-normalised GRPO's z-scored advantages there do not depend on ``coef`` (docs/methods.md, Rewards).
    """
    return coef * min(len(response), max_new) / max_new


def score(
    task: str, answer: str, item_id: str, completion: str, recipe: Recipe, seed: int, rebuild: Mapping | None = None
) -> float:
    """The reward of one completion: the verifier's verdict on its text before EOS, flipped w.p. ``reward_noise``,
    plus the recipe's ``length_bonus``. A reasoning-gym prompt (``rebuild``: its ``REBUILD_KEYS``) is graded by
    its dataset's ``score_answer`` on the whole completion (training/reasoning_gym_tasks.py ``score``)."""
    if rebuild is None:
        response = completion.split(EOS)[0]
        correct = verify(task, answer, response)
    else:
        from armlab.training.reasoning_gym_tasks import score as reasoning_gym_score

        response = completion
        correct = reasoning_gym_score(rebuild, response)[0]
    verdict = noisy_verdict(correct, recipe.reward_noise, seed, item_id, response)
    coef = recipe.length_bonus  # None: no bonus
    return verdict + length_bonus(response, coef, recipe.max_new_tokens) if coef else verdict
