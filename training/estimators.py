"""Advantage estimators: group rewards (groups, G) → advantages (groups, G).

Every estimator has the signature ``fn(rewards, lengths, **params)``; ``lengths``
(response lengths, same shape) is used only by rules that need it. Adding an
estimator is one function and one ``ESTIMATORS`` entry. Rules, sources and test vectors:
``docs/methods.md`` (Advantage estimators).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from armlab.lazy import lazy_module
from armlab.registry import Registry
from armlab.spec import Method
from armlab.training.recipe import list_methods

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")  # imported on first use (armlab.lazy)

GRPO_EPS = 1e-6


def _group_stats(rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Group mean and unbiased std; a singleton group gets mean 0, std 1 (verl's convention)."""
    if rewards.shape[1] == 1:
        return torch.zeros_like(rewards), torch.ones_like(rewards)
    return rewards.mean(1, keepdim=True), rewards.std(1, keepdim=True, unbiased=True)


def grpo(rewards, lengths=None, norm_std: bool = True, eps: float = GRPO_EPS):
    """GRPO: (r − μ)/(σ + ε), unbiased σ — verl compute_grpo_outcome_advantage; ``norm_std=False``: std ablation."""
    mean, std = _group_stats(rewards)
    centred = rewards - mean
    return centred / (std + eps) if norm_std else centred


def dr_grpo(rewards, lengths=None):
    """Dr. GRPO: r − μ, no std division — arXiv 2503.20783; verl norm_adv_by_std_in_grpo=False."""
    return rewards - rewards.mean(1, keepdim=True)


def rloo(rewards, lengths=None):
    """RLOO: r_i − mean of the other G−1 rewards = G/(G−1)(r_i − μ) — verl rloo, TRL RLOOTrainer."""
    G = rewards.shape[1]
    if G < 2:
        return torch.zeros_like(rewards)
    return G / (G - 1) * (rewards - rewards.mean(1, keepdim=True))


def reinforce_pp_baseline(rewards, lengths=None):
    """REINFORCE++ with baseline: r − μ, then whitened over the whole batch — verl reinforce_plus_plus_baseline."""
    centred = (rewards - rewards.mean(1, keepdim=True)).flatten()
    var = centred.var(unbiased=True) if centred.numel() > 1 else torch.zeros(())
    return ((centred - centred.mean()) / torch.sqrt(var + 1e-8)).view_as(rewards)


def mc_grpo(rewards, lengths=None):
    """MC-GRPO: r − median of the group (median baseline, robust at small G)."""
    return rewards - rewards.quantile(0.5, dim=1, keepdim=True)


def maxrl(rewards, lengths=None):
    """MaxRL: (r − μ)/(μ + 1e-6) — "GRPO at 1B scale" study, arm maxrl."""
    mean = rewards.mean(1, keepdim=True)
    return (rewards - mean) / (mean + 1e-6)


def opo(rewards, lengths):
    """OPO: r_i − Σ L_j r_j / Σ L_j with response lengths L — verl opo; arXiv 2505.23585."""
    lengths = lengths.to(rewards.dtype)
    baseline = (lengths * rewards).sum(1, keepdim=True) / lengths.sum(1, keepdim=True).clamp(min=1)
    return rewards - baseline


def grpo_passk(rewards, lengths=None, norm_std: bool = False, eps: float = GRPO_EPS):
    """Pass@k GRPO: only the group's best rollout gets r_max − r_second — verl grpo_passk; arXiv 2503.19595."""
    advantages = torch.zeros_like(rewards)
    if rewards.shape[1] < 2:
        return advantages
    top2 = rewards.topk(2, dim=1)
    gap = top2.values[:, 0] - top2.values[:, 1]
    if norm_std:
        gap = gap / (rewards.std(1, unbiased=True) + eps)
    advantages.scatter_(1, top2.indices[:, :1], gap[:, None])
    return advantages


def grpo_batch_std(rewards, lengths=None, eps: float = 1e-4):
    """Batch-std GRPO: (r − μ_group)/(σ_batch + ε), unbiased σ of all rewards — TRL scale_rewards="batch"."""
    # TRL GRPOTrainer: std of the whole generation batch's rewards (Bessel-corrected), eps 1e-4; PPO-Lite's
    # "group mean, batch std" (arXiv 2508.08221)
    mean = rewards.mean(1, keepdim=True)
    std = rewards.std(unbiased=True) if rewards.numel() > 1 else torch.zeros(())
    return (rewards - mean) / (std + eps)


ESTIMATORS = Registry(
    "estimator",
    {
        "grpo": grpo,
        "dr_grpo": dr_grpo,
        "rloo": rloo,
        "reinforce_pp_baseline": reinforce_pp_baseline,
        "mc_grpo": mc_grpo,
        "maxrl": maxrl,
        "opo": opo,
        "grpo_passk": grpo_passk,
        "grpo_batch_std": grpo_batch_std,
    },
)


def list_estimators() -> list[dict]:
    """Name, one-line description and parameters (with defaults) of every registered estimator."""
    return list_methods(ESTIMATORS, 2)


def compute_advantages(spec: Method, rewards: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Apply the estimator named in ``spec`` ({"name": ..., **params})."""
    params = {k: v for k, v in spec.items() if k != "name"}
    return ESTIMATORS[spec["name"]](rewards, lengths, **params)
