"""Data policies: which prompts feed a step, and how strongly each rollout counts.

A policy has three hooks the trainer calls every step, in this order:

- ``domain_shares(step)``: the domain mixture for this step's prompts, or ``None``
  to draw uniformly from the union of all training pools;
- ``rollout_weights(rewards, advantages, lengths)``: a (groups, G) weight per
  rollout — 0/1 for select arms (no refill), mean-1 for reweight arms;
- ``observe(step, group_domains, rewards)``: feedback for adaptive mixtures.

``DATA_POLICIES`` maps a name to the class; its parameters are keyword
arguments with the published defaults. Adding a policy is one class and one
entry. Rules: ``REFERENCE.md`` (Data policies).
"""

from __future__ import annotations

import numpy as np
import torch


class Uniform:
    """Uniform prompt sampling, every rollout weight 1 — plain GRPO (DataFlex-RL `baseline`)."""

    def __init__(self, domains: list[str]):
        self.domains = list(domains)

    def domain_shares(self, step: int) -> np.ndarray | None:
        return None

    def rollout_weights(self, rewards: torch.Tensor, advantages: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return torch.ones_like(rewards)

    def observe(self, step: int, group_domains: list[str], rewards: torch.Tensor) -> None:
        pass


class DiffFilter(Uniform):
    """Keep a group iff low < pass rate < high (strict), as a 0/1 rollout weight — DataFlex-RL `difffilter`."""

    def __init__(self, domains, low: float = 0.2, high: float = 0.8):
        super().__init__(domains)
        if not 0.0 <= low < high <= 1.0:
            raise ValueError(f"difffilter: need 0 <= low < high <= 1, got low={low}, high={high}")
        self.low, self.high = low, high

    def rollout_weights(self, rewards, advantages, lengths):
        pass_rate = rewards.mean(1, keepdim=True)
        keep = (pass_rate > self.low) & (pass_rate < self.high)
        return keep.to(rewards.dtype).expand_as(rewards).clone()


class StaticMixture(Uniform):
    """A fixed, equal share of each step's prompts per domain — DataFlex-RL `static`."""

    def domain_shares(self, step):
        return np.full(len(self.domains), 1.0 / len(self.domains))


DATA_POLICIES = {
    "uniform": Uniform,
    "difffilter": DiffFilter,
    "static": StaticMixture,
}


def make_policy(spec: dict, domains: list[str]):
    """Instantiate the policy named in ``spec`` ({"name": ..., **params}) over ``domains``."""
    params = {k: v for k, v in spec.items() if k != "name"}
    return DATA_POLICIES[spec["name"]](domains, **params)


def domain_counts(shares: np.ndarray, total: int) -> np.ndarray:
    """Split ``total`` prompts by ``shares`` with largest-remainder rounding (deterministic, sums to total)."""
    raw = np.asarray(shares, dtype=float) * total
    counts = np.floor(raw).astype(int)
    order = np.argsort(-(raw - counts), kind="stable")
    counts[order[: total - counts.sum()]] += 1
    return counts
