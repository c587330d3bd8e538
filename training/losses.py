"""Policy losses: per-token policy-gradient losses (B, N) of the builtin trainer, before the KL term and aggregation.

Every loss has the signature ``fn(log_ratio, logp, advantages, mask, clip, **params) -> (per_token, clipped)``:

* ``log_ratio`` (B, N): log π_θ − log π_old per token, or GSPO's sequence mean broadcast over the tokens
  (``ratio_level: sequence``, only for the losses declared ``sequence_ratio``); it carries the gradient;
* ``logp`` (B, N): log π_θ of the sampled tokens (CISPO, GPG and the covariance rules use it directly);
* ``advantages`` (B, 1): one advantage per rollout;
* ``mask`` (B, N) bool: the tokens that count (generated, and of weight > 0) — batch statistics (GMPO's
  per-sequence mean, Clip-Cov's and KL-Cov's covariance) are taken over them;
* ``clip``: the recipe's ``clip`` ε (the lower ε of ``clip_higher``);

and returns the per-token loss and the boolean mask of the tokens the loss clipped (``clip_frac`` in the step log
counts it over the generated tokens). ``train.policy_loss`` adds the KL term and aggregates (``loss_agg``). A
parameter out of range raises ``ValueError`` (config validation calls each configured loss once on a dummy batch).
The :func:`loss_facts` decorator declares what validation reads of a loss's definition: whether it is defined on
GSPO's sequence ratio, and the aggregation it fixes. Adding a loss is one decorated function and one
``POLICY_LOSSES`` entry. Formulas, sources and test vectors:
``docs/methods.md`` (The loss).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from armlab.lazy import lazy_module
from armlab.registry import Registry
from armlab.spec import Recipe
from armlab.training.recipe import list_methods

torch = lazy_module("torch")

DEFAULT_POLICY_LOSS = "ppo_clip"


class PolicyLoss(Protocol):
    """A policy loss (the signature above) and the facts :func:`loss_facts` declares about its definition."""

    sequence_ratio: bool  # defined on GSPO's sequence ratio too (ratio_level: sequence), not only on token ratios
    aggregation: str | None  # the loss_agg its definition fixes (GMPO's mean over sequences), or None: any

    def __call__(self, log_ratio, logp, advantages, mask, clip, **params) -> tuple: ...


def loss_facts(*, sequence_ratio: bool, aggregation: str | None = None) -> Callable[[Any], PolicyLoss]:
    """Declare a loss's facts on its function: ``@loss_facts(sequence_ratio=..., aggregation=...)``."""

    def declare(rule: Any) -> PolicyLoss:
        rule.sequence_ratio, rule.aggregation = sequence_ratio, aggregation
        return rule

    return declare


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


@loss_facts(sequence_ratio=True)
def ppo_clip(log_ratio, logp, advantages, mask, clip):
    """PPO clip: −min(ρA, clip(ρ, 1 − ε, 1 + ε)A), ε = recipe.clip — arXiv 1707.06347; verl vanilla policy loss."""
    ratio = torch.exp(log_ratio)
    pg = -torch.min(ratio * advantages, ratio.clamp(1 - clip, 1 + clip) * advantages)
    return pg, (ratio - 1).abs() > clip


@loss_facts(sequence_ratio=True)
def clip_higher(log_ratio, logp, advantages, mask, clip, clip_high: float = 0.28):
    """Clip-higher: −min(ρA, clip(ρ, 1 − ε, 1 + ε_high)A), ε = recipe.clip — DAPO arXiv 2503.14476; TRL epsilon_high."""
    _require(clip_high > 0, f"clip_high must be > 0, got {clip_high}")
    ratio = torch.exp(log_ratio)
    pg = -torch.min(ratio * advantages, ratio.clamp(1 - clip, 1 + clip_high) * advantages)
    return pg, (ratio < 1 - clip) | (ratio > 1 + clip_high)


@loss_facts(sequence_ratio=True)
def dual_clip(log_ratio, logp, advantages, mask, clip, clip_c: float = 3.0):
    """Dual-clip PPO: PPO clip, and for A < 0 at most −c·A — Ye et al. arXiv 1912.09729; verl clip_ratio_c."""
    _require(clip_c > 1, f"clip_c must be > 1 (the lower bound of the ratio for A < 0), got {clip_c}")
    ratio = torch.exp(log_ratio)
    pg = -torch.min(ratio * advantages, ratio.clamp(1 - clip, 1 + clip) * advantages)
    pg = torch.where(advantages < 0, torch.min(pg, -clip_c * advantages), pg)
    return pg, (ratio - 1).abs() > clip


@loss_facts(sequence_ratio=True)
def cispo(log_ratio, logp, advantages, mask, clip, clip_high: float = 4.0, clip_low: float = 1.0):
    """CISPO: −sg(clip(ρ, 1 − ε_low, 1 + ε_high))·A·log π — MiniMax-M1 arXiv 2506.13585; TRL loss_type cispo."""
    # clip_low 1.0 (the default): no lower bound, as in the paper and TRL (whose epsilon_high is 1 + clip_high)
    _require(clip_high > 0, f"clip_high must be > 0, got {clip_high}")
    _require(0 < clip_low <= 1, f"clip_low must be in (0, 1] (1 = no lower bound), got {clip_low}")
    ratio = torch.exp(log_ratio)
    weight = ratio.clamp(1 - clip_low, 1 + clip_high).detach()
    return -weight * advantages * logp, (ratio > 1 + clip_high) | (ratio < 1 - clip_low)


@loss_facts(sequence_ratio=False, aggregation="seq-mean-token-mean")
def gmpo(log_ratio, logp, advantages, mask, clip, clip_low: float = 0.4, clip_high: float = 0.4):
    """GMPO: −A·exp(mean_t sgn(A)·min(sgn(A)q, sgn(A)clip(q, −ε_low, ε_high))) — arXiv 2507.20673; verl geo_mean."""
    # sequence-level by definition: every token of rollout b carries the rollout's loss, so the aggregation
    # seq-mean-token-mean (which validation requires) is the paper's mean over sequences
    _require(clip_low > 0 and clip_high > 0, f"clip_low and clip_high must be > 0, got {clip_low}, {clip_high}")
    sign = torch.sign(advantages)
    clamped = log_ratio.clamp(-clip_low, clip_high)
    q = sign * torch.min(sign * log_ratio, sign * clamped)
    m = mask.to(log_ratio.dtype)
    ratio = torch.exp((q * m).sum(1, keepdim=True) / m.sum(1, keepdim=True).clamp(min=1))
    return (-advantages * ratio).expand_as(log_ratio), (log_ratio < -clip_low) | (log_ratio > clip_high)


@loss_facts(sequence_ratio=True)
def sapo(log_ratio, logp, advantages, mask, clip, tau_pos: float = 1.0, tau_neg: float = 1.05):
    """SAPO: −(4/τ)·σ(τ(ρ − 1))·A, τ = τ_pos if A > 0 else τ_neg — arXiv 2511.20347; TRL loss_type sapo."""
    _require(tau_pos > 0 and tau_neg > 0, f"tau_pos and tau_neg must be > 0, got {tau_pos}, {tau_neg}")
    ratio = torch.exp(log_ratio)
    tau = torch.where(advantages > 0, tau_pos, tau_neg).to(ratio.dtype)
    gate = torch.sigmoid(tau * (ratio - 1)) * 4 / tau
    return -gate * advantages, torch.zeros_like(mask)  # a soft gate: no token is clipped


def _covariance(advantages, logp, mask):
    """Per-token (A − mean A)(log π − mean log π) over the counted tokens (no gradient), as verl's Clip/KL-Cov."""
    adv = advantages.expand_as(logp).detach()
    logp = logp.detach()
    n = mask.sum().clamp(min=1)
    return (adv - adv[mask].sum() / n) * (logp - logp[mask].sum() / n)


@loss_facts(sequence_ratio=False)
def clip_cov(
    log_ratio, logp, advantages, mask, clip, fraction: float = 0.0002, cov_low: float = 1.0, cov_high: float = 5.0
):
    """Clip-Cov: PPO clip, no gradient on a random fraction of tokens of cov in (lb, ub) — arXiv 2505.22617; verl."""
    _require(0 < fraction <= 1, f"fraction must be in (0, 1], got {fraction}")
    _require(cov_low < cov_high, f"cov_low must be below cov_high, got {cov_low}, {cov_high}")
    ratio = torch.exp(log_ratio)
    pg1, pg2 = -advantages * ratio, -advantages * ratio.clamp(1 - clip, 1 + clip)
    cov = _covariance(advantages, logp, mask)
    candidates = mask & ~(pg2 > pg1) & (cov > cov_low) & (cov < cov_high)  # not already clipped by the ratio
    index = candidates.flatten().nonzero()[:, 0]
    n = max(int(fraction * int(mask.sum())), 1)
    chosen = torch.zeros(mask.numel(), dtype=torch.bool)
    chosen[index[torch.randperm(len(index))[:n]]] = True  # torch's global stream: seeded per run
    chosen = chosen.view_as(mask)
    return torch.max(pg1, pg2) * (~chosen).to(pg1.dtype), chosen | ((ratio - 1).abs() > clip)


@loss_facts(sequence_ratio=False)
def kl_cov(log_ratio, logp, advantages, mask, clip, fraction: float = 0.0002, coef: float = 1.0):
    """KL-Cov: −ρA, plus coef·|log ρ| on the top fraction of tokens by covariance — arXiv 2505.22617; verl kl_cov."""
    _require(0 < fraction <= 1, f"fraction must be in (0, 1], got {fraction}")
    _require(coef >= 0, f"coef must be >= 0, got {coef}")
    pg = -advantages * torch.exp(log_ratio)
    cov = _covariance(advantages, logp, mask).masked_fill(~mask, -torch.inf)
    n = min(max(int(fraction * int(mask.sum())), 1), int(mask.sum()))
    chosen = torch.zeros(mask.numel(), dtype=torch.bool)
    chosen[cov.flatten().topk(n).indices] = True
    chosen = chosen.view_as(mask)
    return pg + coef * log_ratio.abs() * chosen.to(pg.dtype), chosen


@loss_facts(sequence_ratio=False)
def gpg(log_ratio, logp, advantages, mask, clip):
    """GPG: −A·log π, no ratio and no clip — arXiv 2504.02546; verl compute_policy_loss_gpg."""
    return -advantages * logp, torch.zeros_like(mask)


POLICY_LOSSES: Registry[PolicyLoss] = Registry(
    "policy loss",
    {
        "ppo_clip": ppo_clip,
        "clip_higher": clip_higher,
        "dual_clip": dual_clip,
        "cispo": cispo,
        "gmpo": gmpo,
        "sapo": sapo,
        "clip_cov": clip_cov,
        "kl_cov": kl_cov,
        "gpg": gpg,
    },
)
SKIP = 5  # the inputs before the parameters: log_ratio, logp, advantages, mask, clip


def list_policy_losses() -> list[dict]:
    """Name, one-line description and parameters (with defaults) of every registered policy loss."""
    return list_methods(POLICY_LOSSES, SKIP)


def loss_spec(recipe: Recipe) -> dict:
    """The recipe's policy loss in dict form ({"name": ..., **params}); absent, the default ``ppo_clip``."""
    return {"name": DEFAULT_POLICY_LOSS} if recipe.policy_loss is None else dict(recipe.policy_loss)


def loss_params(spec: dict) -> dict:
    """The loss's parameters with the defaults of those the spec does not give."""
    defaults = next(m["params"] for m in list_policy_losses() if m["name"] == spec["name"])
    return {**defaults, **{k: v for k, v in spec.items() if k != "name"}}


def check_policy_loss(recipe: Recipe) -> None:
    """``ValueError`` for a loss parameter out of range or a combination with ``ratio_level``/``loss_agg`` the loss
    does not define (names and types are checked by the config's parameter check)."""
    spec = loss_spec(recipe)
    name, params = spec["name"], {k: v for k, v in spec.items() if k != "name"}
    loss = POLICY_LOSSES[name]
    if recipe.ratio_level == "sequence" and not loss.sequence_ratio:
        raise ValueError(
            f"{name} is a token-level loss; ratio_level: sequence (GSPO's sequence ratio) applies only to "
            f"{[n for n, other in POLICY_LOSSES.items() if other.sequence_ratio]}"
        )
    if loss.aggregation is not None and recipe.loss_agg != loss.aggregation:
        raise ValueError(
            f"{name} is a sequence-level objective (a mean over sequences); set loss_agg: "
            f"{loss.aggregation} (got {recipe.loss_agg})"
        )
    if not params:  # the published defaults are in range (tests/training/test_losses.py); running a loss loads torch
        return
    dummy = torch.zeros(1, 2)
    loss(dummy, dummy, torch.ones(1, 1), torch.ones(1, 2, dtype=torch.bool), recipe.clip, **params)
