"""Data policies: which prompts feed a step, and how strongly each rollout counts.

The trainer calls these hooks every step, in this order; :class:`Uniform` holds the
defaults, which change nothing, so a policy overrides only the hooks its rule needs:

- ``domain_shares(step)``: the domain mixture of this step's prompts, or ``None`` to
  draw uniformly from the union of all training pools (mixture arms);
- ``choose_prompts(step, prompt_ids, n, rng)``: which of the drawn candidate prompts
  to roll out, as indices (pre-rollout selection: GRESO, Thompson). The trainer draws
  ``oversample × n`` candidates; ``rng`` is the only randomness a policy may use;
- ``rollout_weights(rewards, advantages, lengths)``: a (groups, G) weight per rollout:
  0/1 for select arms, mean 1 for reweight arms. A policy with ``max_tries > 1``
  refills: the trainer rolls out further prompt batches until the groups with any
  weight > 0 fill the batch or ``max_tries`` batches were tried (DAPO);
- ``observe(step, group_domains, rewards, advantages, prompt_ids)``: feedback on every
  group rolled out this step (adaptive mixtures, per-prompt state);
- ``loss_weights(weights, old_logp, mask)``: the weights the loss applies, per rollout
  (B,) or per token (B, N) (token reweighting, `ar`);
- ``diagnostics()``: extra step-log columns.

``DATA_POLICIES`` maps a name to the class, and that key is the policy's ``name``
(its messages use it); the first docstring line names the source, the parameters
are keyword arguments with the published defaults (see :func:`list_policies`); the class
attributes ``shaped_rewards`` and ``trl`` say whether it runs with a length bonus and how the
TRL backend runs it. Adding a policy is one class and one entry. Rules and sources: ``docs/methods.md``
(Data policies).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Literal

import numpy as np

from armlab.lazy import lazy_module
from armlab.registry import Registry
from armlab.spec import Method
from armlab.training.recipe import list_methods

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")  # imported on first use (armlab.lazy)


def _number(policy: str, name: str, value, low=None, high=None, low_open=False, high_open=False, integer=False):
    """Check one numeric parameter: TypeError for a non-number, ValueError outside its range."""
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise TypeError(f"{policy}: {name} must be {'an integer' if integer else 'a number'}, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{policy}: {name} must be {'>' if low_open else '>='} {low}, got {value}")
    if high is not None and (value >= high if high_open else value > high):
        raise ValueError(f"{policy}: {name} must be {'<' if high_open else '<='} {high}, got {value}")
    return value


def _mean_one(w: torch.Tensor) -> torch.Tensor:
    return w / w.mean().clamp(min=1e-12)


class Uniform:
    """Uniform prompt sampling, every rollout weight 1 — plain GRPO (DataFlex-RL `baseline`)."""

    max_tries = 1  # prompt batches a step may roll out; > 1 refills the batch with kept groups (DAPO)
    oversample = 1  # candidate prompts drawn per batch slot for choose_prompts
    # what validation and the backends read; every policy declares both (tests/training/test_data_policies.py):
    # reads no pass rates, so it runs with rewards that are more than a 0/1 verdict (recipe.length_bonus)
    shaped_rewards: bool = True
    # how the TRL backend runs it: "fixed" domain shares, "adaptive" shares fed back TRL's rewards, None: it cannot
    trl: Literal["fixed", "adaptive"] | None = "fixed"

    def __init__(self, domains: list[str]):
        self.domains = list(domains)

    @property
    def name(self) -> str:
        """The policy's key in ``DATA_POLICIES``, which names it in messages."""
        return POLICY_NAMES[type(self)]

    def domain_shares(self, step: int) -> np.ndarray | None:
        return None

    def choose_prompts(self, step: int, prompt_ids: list[str], n: int, rng: np.random.Generator) -> np.ndarray:
        return np.arange(min(n, len(prompt_ids)))

    def rollout_weights(self, rewards: torch.Tensor, advantages: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return torch.ones_like(rewards)

    def loss_weights(self, weights: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return weights.flatten()

    def observe(
        self,
        step: int,
        group_domains: list[str],
        rewards: torch.Tensor,
        advantages: torch.Tensor | None = None,
        prompt_ids: list[str] | None = None,
    ) -> None:
        pass

    def diagnostics(self) -> dict:
        return {}


# ---------------------------------------------------------------- select: 0/1 rollout weights, no refill


class DiffFilter(Uniform):
    """Keep a group iff low < pass rate < high (strict), as a 0/1 rollout weight — DataFlex-RL `difffilter`."""

    shaped_rewards = False
    trl = None

    def __init__(self, domains, low: float = 0.2, high: float = 0.8):
        super().__init__(domains)
        _number(self.name, "low", low), _number(self.name, "high", high)
        if not 0.0 <= low < high <= 1.0:
            raise ValueError(f"{self.name}: need 0 <= low < high <= 1, got low={low}, high={high}")
        self.low, self.high = low, high

    def rollout_weights(self, rewards, advantages, lengths):
        pass_rate = rewards.mean(1, keepdim=True)
        keep = (pass_rate > self.low) & (pass_rate < self.high)
        return keep.to(rewards.dtype).expand_as(rewards).clone()


class MaxVar(Uniform):
    """Per group keep the round(fraction·G) rollouts of maximal reward variance — DataFlex-RL `maxvar` (PODS).

    PODS: the best subset of size m is the a lowest plus the m − a highest rewards for
    some a = 0..m. ``round`` is Python's (half to even: G = 5 keeps 2); at least one
    rollout is kept. Rewards are sorted descending with ties in index order; among
    equally good a the smallest wins (most rollouts from the top). Advantages are not
    recomputed on the subset (DataFlex-RL's select semantics: a 0/1 mask).
    """

    shaped_rewards = False
    trl = None

    def __init__(self, domains, fraction: float = 0.5):
        super().__init__(domains)
        self.fraction = _number(self.name, "fraction", fraction, 0.0, 1.0, low_open=True)

    def rollout_weights(self, rewards, advantages, lengths):
        G = rewards.shape[1]
        m = max(1, round(self.fraction * G))
        order = torch.sort(rewards, dim=1, descending=True, stable=True).indices
        r = rewards.gather(1, order).double()
        best_score, best_a = None, None
        for a in range(m + 1):  # take the m − a highest and the a lowest
            subset = torch.cat([r[:, : m - a], r[:, G - a :]], 1)
            score = m * (subset**2).sum(1) - subset.sum(1) ** 2  # m²·variance; exact for 0/1 rewards
            if best_score is None:
                best_score, best_a = score, torch.zeros_like(score, dtype=torch.long)
            else:
                better = score > best_score
                best_score, best_a = torch.where(better, score, best_score), torch.where(better, a, best_a)
        position = torch.arange(G)[None, :]
        keep_sorted = (position < (m - best_a)[:, None]) | (position >= (G - best_a)[:, None])
        return torch.zeros_like(rewards).scatter(1, order, keep_sorted.to(rewards.dtype))


class GFPO(Uniform):
    """Per group keep the k = 3 rollouts with the best reward / length — DataFlex-RL `gfpo` (GFPO, token efficiency).

    Ties keep the lower index; a group with G <= k keeps every rollout.
    """

    shaped_rewards = False
    trl = None

    def __init__(self, domains, k: int = 3):
        super().__init__(domains)
        self.k = _number(self.name, "k", k, 1, integer=True)

    def rollout_weights(self, rewards, advantages, lengths):
        efficiency = rewards.double() / lengths.double().clamp(min=1)
        order = torch.sort(efficiency, dim=1, descending=True, stable=True).indices
        return torch.zeros_like(rewards).scatter(1, order[:, : self.k], 1.0)


class TopK(Uniform):
    """Keep the top 50% of the batch's rollouts by |advantage| — DataFlex-RL `topk`.

    Counted over the whole batch: k = max(1, round(fraction·N)) (Python's round), ties keep the lower index.
    """

    shaped_rewards = False
    trl = None

    def __init__(self, domains, fraction: float = 0.5):
        super().__init__(domains)
        self.fraction = _number(self.name, "fraction", fraction, 0.0, 1.0, low_open=True)

    def rollout_weights(self, rewards, advantages, lengths):
        flat = advantages.abs().flatten()
        k = max(1, round(self.fraction * flat.numel()))
        order = torch.sort(flat, descending=True, stable=True).indices
        return torch.zeros_like(flat).scatter(0, order[:k], 1.0).view_as(rewards).to(rewards.dtype)


# ---------------------------------------------------------------- reweight: weights with mean 1


class AdvantageReweight(Uniform):
    """Token weights w_t = α·π_old(t) + (1 − α), α = 0.5, mean 1 over valid tokens — DataFlex-RL `ar`.

    Advantage reweighting (arXiv 2505.12929). π_old(t) = exp(old_logp), the sampling
    policy's probability of the sampled token; the mean is over every valid token of the
    batch (all rollouts weigh 1), so low-probability tokens count less.
    """

    shaped_rewards = False
    trl = None

    def __init__(self, domains, alpha: float = 0.5):
        super().__init__(domains)
        self.alpha = _number(self.name, "alpha", alpha, 0.0, 1.0)

    def loss_weights(self, weights, old_logp, mask):
        rollout = weights.flatten()[:, None].to(old_logp.dtype)
        valid = mask.bool() & (rollout > 0)
        token = self.alpha * old_logp.exp() + (1 - self.alpha)
        token = token / token[valid].mean() if valid.any() else token
        return torch.where(valid, rollout * token, torch.zeros_like(token))


class PER(Uniform):
    """w = (mean_t |A_t| + ε)^α, α = 0.5, ε = 1e-8, rescaled to mean 1 — DataFlex-RL `per` (prioritized replay).

    Outcome advantages are constant over a response, so mean_t |A_t| = |A|.
    """

    shaped_rewards = False
    trl = None

    def __init__(self, domains, alpha: float = 0.5, eps: float = 1e-8):
        super().__init__(domains)
        self.alpha = _number(self.name, "alpha", alpha, 0.0)
        self.eps = _number(self.name, "eps", eps, 0.0, low_open=True)

    def rollout_weights(self, rewards, advantages, lengths):
        return _mean_one((advantages.abs() + self.eps) ** self.alpha).to(rewards.dtype)


class SoftmaxReweight(Uniform):
    """w = softmax(|A| / T) over the batch's rollouts, T = 1, rescaled to mean 1 — DataFlex-RL `softmax`."""

    shaped_rewards = False
    trl = None

    def __init__(self, domains, temperature: float = 1.0):
        super().__init__(domains)
        self.temperature = _number(self.name, "temperature", temperature, 0.0, low_open=True)

    def rollout_weights(self, rewards, advantages, lengths):
        w = torch.softmax(advantages.abs().flatten().double() / self.temperature, 0) * advantages.numel()
        return _mean_one(w).view_as(rewards).to(rewards.dtype)


class DiffBand(Uniform):
    """Weight 2 for rollouts with reward in the batch's [25%, 75%] quantiles, then mean 1 — DataFlex-RL `diffband`.

    The band is closed (both ends inclusive); quantiles interpolate linearly (numpy's default).
    """

    shaped_rewards = False
    trl = None

    def __init__(self, domains, low_q: float = 0.25, high_q: float = 0.75, focus_weight: float = 2.0):
        super().__init__(domains)
        _number(self.name, "low_q", low_q, 0.0, 1.0), _number(self.name, "high_q", high_q, 0.0, 1.0)
        if not low_q <= high_q:
            raise ValueError(f"{self.name}: need low_q <= high_q, got {low_q}, {high_q}")
        self.low_q, self.high_q = low_q, high_q
        self.focus_weight = _number(self.name, "focus_weight", focus_weight, 0.0, low_open=True)

    def rollout_weights(self, rewards, advantages, lengths):
        flat = rewards.flatten().double()
        if flat.numel() < 2:
            return torch.ones_like(rewards)
        low, high = torch.quantile(flat, torch.tensor([self.low_q, self.high_q], dtype=torch.double))
        w = torch.where((flat >= low) & (flat <= high), self.focus_weight, 1.0)
        return _mean_one(w).view_as(rewards).to(rewards.dtype)


# ---------------------------------------------------------------- domain mixtures


class StaticMixture(Uniform):
    """A fixed, equal share of each step's prompts per domain — DataFlex-RL `static`."""

    shaped_rewards = True
    trl = "fixed"

    def domain_shares(self, step):
        return np.full(len(self.domains), 1.0 / len(self.domains))


class _AdaptiveMixture(Uniform):
    """DataFlex-RL's adaptive mixtures: p ∝ softmax(score_d / T), each share clipped to ≥ floor, renormalised.

    Equal shares for the first ``warmup`` steps, then new shares every ``update_every``
    steps from the last ``window`` steps' per-domain statistics (a step's mean reward and
    mean |advantage| of each domain's rollouts; a domain absent from a step has no entry).
    The window counts steps — DataFlex-RL's code keeps the last 50 per-rollout values.
    """

    shaped_rewards = False
    trl = "adaptive"

    def __init__(
        self,
        domains,
        temperature: float = 1.0,
        floor: float = 0.05,
        warmup: int = 1,
        update_every: int = 1,
        window: int = 50,
    ):
        super().__init__(domains)
        K = len(self.domains)
        self.temperature = _number(self.name, "temperature", temperature, 0.0, low_open=True)
        self.floor = _number(self.name, "floor", floor, 0.0, 1.0 / K)
        self.warmup = _number(self.name, "warmup", warmup, 0, integer=True)
        self.update_every = _number(self.name, "update_every", update_every, 1, integer=True)
        self.window = _number(self.name, "window", window, 1, integer=True)
        self._index = {d: i for i, d in enumerate(self.domains)}
        self._steps: deque[int]  # the steps observed, and per step each domain's mean reward and mean |advantage|
        self._reward: deque[np.ndarray]
        self._abs_adv: deque[np.ndarray]
        self._steps, self._reward, self._abs_adv = (deque(maxlen=window) for _ in range(3))
        self._groups = np.zeros(K)  # groups rolled out per domain so far
        self._shares = np.full(K, 1.0 / K)

    def domain_shares(self, step):
        if step > self.warmup and (step - self.warmup - 1) % self.update_every == 0:
            z = self._scores() / self.temperature
            p = np.exp(z - z.max())
            p = np.maximum(p / p.sum(), self.floor)
            self._shares = p / p.sum()
        return self._shares.copy()

    def observe(self, step, group_domains, rewards, advantages=None, prompt_ids=None):
        in_domain = np.array([self._index[d] for d in group_domains])[:, None] == np.arange(len(self.domains))
        n = in_domain.sum(0)
        if advantages is None:
            advantages = torch.full_like(rewards, float("nan"))
        with np.errstate(invalid="ignore", divide="ignore"):
            self._reward.append(in_domain.T @ rewards.double().mean(1).numpy() / n)
            self._abs_adv.append(in_domain.T @ advantages.double().abs().mean(1).numpy() / n)
        self._steps.append(step)
        self._groups += n

    def _window_mean(self, history: deque) -> np.ndarray:
        """Mean over the window of the per-step values (a domain never seen in the window: 0)."""
        values = np.array(history).reshape(-1, len(self.domains))
        seen = ~np.isnan(values)
        return np.where(seen, values, 0).sum(0) / np.maximum(seen.sum(0), 1)

    def _scores(self) -> np.ndarray:
        raise NotImplementedError


class RewardGapMixture(_AdaptiveMixture):
    """p_d ∝ softmax((max_d' r̄_d' − r̄_d)/T), T = 1, floor 0.05 — DataFlex-RL `reward_gap`.

    Domains lagging behind the best get more prompts. r̄_d: mean over the window of the
    domain's per-step mean reward; a domain unseen in the window counts r̄ = 0 (as
    DataFlex-RL's tracker does), i.e. as the one furthest behind.
    """

    def _scores(self):
        mean = self._window_mean(self._reward)
        return mean.max() - mean


class DumpUCBMixture(_AdaptiveMixture):
    """p_d ∝ softmax(ū_d + c·sqrt(2 ln(N+1)/(n_d+1))), c = 1, T = 1, floor 0.05 — DataFlex-RL `dump_ucb` (DUMP).

    ū_d: windowed mean |advantage| of the domain (unseen: 0); n_d: groups (prompts) rolled
    out from the domain since the start, N = Σ n_d.
    """

    def __init__(
        self,
        domains,
        c: float = 1.0,
        temperature: float = 1.0,
        floor: float = 0.05,
        warmup: int = 1,
        update_every: int = 1,
        window: int = 50,
    ):
        super().__init__(domains, temperature, floor, warmup, update_every, window)
        self.c = _number(self.name, "c", c, 0.0)

    def _scores(self):
        mean = self._window_mean(self._abs_adv)
        return mean + self.c * np.sqrt(2 * np.log(self._groups.sum() + 1) / (self._groups + 1))


class TSCLMixture(_AdaptiveMixture):
    """p_d ∝ softmax(|least-squares slope of windowed reward|/T), T = 1, floor 0.05 — DataFlex-RL `tscl`.

    Teacher–student curriculum learning (arXiv 1707.00183): learning progress. The slope is of per-step mean
    reward against the step number (reward per step), over the window's steps in which the domain appeared;
    fewer than two such steps: slope 0.
    """

    def _scores(self):
        if not self._reward:
            return np.zeros(len(self.domains))
        y = np.array(self._reward)
        x = np.broadcast_to(np.array(self._steps, dtype=float)[:, None], y.shape)
        seen = ~np.isnan(y)
        n = seen.sum(0)
        x_mean = np.where(seen, x, 0).sum(0) / np.maximum(n, 1)
        y_mean = np.where(seen, y, 0).sum(0) / np.maximum(n, 1)
        dx = np.where(seen, x - x_mean, 0)
        sxx = (dx**2).sum(0)
        slope = (dx * np.where(seen, y - y_mean, 0)).sum(0) / np.where(sxx > 0, sxx, 1)
        return np.abs(np.where((n >= 2) & (sxx > 0), slope, 0.0))


class EXP3Mixture(Uniform):
    """EXP3 domain mixing: p = (1−γ)·w/Σw + γ/K, w_d ← w_d·exp(γ·r̂_d/(K·p_d)), γ = 0.1 — EXP3 / ODM.

    Online data mixing (Albalak et al. 2023) runs EXP3 over domains with a decaying rate;
    here γ is fixed (0.1). r̂_d: the share of the domain's groups this step whose rewards are not all equal (the
    learnable share, in [0, 1]); a domain without groups this step gets r̂ = 0. Weights
    are kept as logarithms; p_d is the share used to sample the step.
    """

    shaped_rewards = False
    trl = "adaptive"

    def __init__(self, domains, gamma: float = 0.1):
        super().__init__(domains)
        self.gamma = _number(self.name, "gamma", gamma, 0.0, 1.0, low_open=True)
        self._index = {d: i for i, d in enumerate(self.domains)}
        self._log_w = np.zeros(len(self.domains))
        self._p = self._probabilities()

    def _probabilities(self):
        w = np.exp(self._log_w - self._log_w.max())
        return (1 - self.gamma) * w / w.sum() + self.gamma / len(self.domains)

    def domain_shares(self, step):
        self._p = self._probabilities()
        return self._p.copy()

    def observe(self, step, group_domains, rewards, advantages=None, prompt_ids=None):
        K = len(self.domains)
        in_domain = np.array([self._index[d] for d in group_domains])[:, None] == np.arange(K)
        learnable = (rewards != rewards[:, :1]).any(1).double().numpy()
        r_hat = in_domain.T @ learnable / np.maximum(in_domain.sum(0), 1)
        self._log_w = self._log_w + self.gamma * r_hat / (K * self._p)


# ---------------------------------------------------------------- dynamic sampling and per-prompt selection


class DynamicSampling(Uniform):
    """Keep a group iff its rewards are not all equal; refill, at most 10 prompt batches — DAPO dynamic sampling.

    DAPO's refill (verl ``max_num_gen_batches`` = 10): the trainer rolls out further prompt
    batches until the kept groups fill the batch. Where verl stops with an error when the
    cap is hit, here the step trains on the kept groups, topped up to the batch size by
    dropped ones at weight 0 (kept_frac < 1 in the log).
    """

    shaped_rewards = False
    trl = None

    def __init__(self, domains, max_tries: int = 10):
        super().__init__(domains)
        self.max_tries = _number(self.name, "max_tries", max_tries, 1, integer=True)

    def rollout_weights(self, rewards, advantages, lengths):
        informative = (rewards != rewards[:, :1]).any(1, keepdim=True)
        return informative.to(rewards.dtype).expand_as(rewards).clone()


class _PromptTable:
    """Numeric state per prompt id, kept in arrays; a prompt gets its row (with the defaults) when first seen."""

    def __init__(self, **defaults: float) -> None:
        self.defaults = defaults
        self.row: dict[str, int] = {}
        self.columns = {name: np.full(0, value, dtype=float) for name, value in defaults.items()}

    def rows(self, ids: list[str]) -> np.ndarray:
        for prompt_id in ids:
            self.row.setdefault(prompt_id, len(self.row))
        grow = len(self.row) - len(next(iter(self.columns.values())))
        if grow > 0:
            for name, value in self.defaults.items():
                self.columns[name] = np.concatenate([self.columns[name], np.full(grow, value, dtype=float)])
        return np.array([self.row[prompt_id] for prompt_id in ids], dtype=int)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]


def _in_turn(rows: np.ndarray):
    """Positions split into rounds in which every row occurs at most once, in order of occurrence.

    Applying a vectorised update round by round equals applying it observation by observation.
    """
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    run_start = np.r_[0, np.flatnonzero(sorted_rows[1:] != sorted_rows[:-1]) + 1] if rows.size else np.zeros(0, int)
    first = np.repeat(run_start, np.diff(np.r_[run_start, rows.size]))
    occurrence = np.empty(rows.size, dtype=int)
    occurrence[order] = np.arange(rows.size) - first
    for k in range(occurrence.max() + 1 if rows.size else 0):
        yield np.flatnonzero(occurrence == k)


class GRESO(DynamicSampling):
    """Pre-rollout skip w.p. 1 − max(p^c, 0.01), p tuned to a zero-variance target, with DAPO refill — GRESO.

    GRESO (arXiv 2506.02177), defaults from its code. c counts the prompt's most recent
    consecutive all-correct (then p = p_easy) or all-wrong (p = p_hard) rollouts; each time
    a prompt is rolled out counts as one of its epochs. All-correct / all-wrong: rewards all
    equal and >= 0.5 / < 0.5. After every step (GRESO's code waits for epoch 2) p_easy
    moves down by ``adjust`` if that step's all-correct share of rolled-out groups reached
    its target, else up; p_hard likewise with the all-wrong share; both stay in
    [min_p, max_p]; the targets split target_zero_variance 1/3 easy, 2/3 hard. GRESO runs
    on top of DAPO dynamic sampling, so kept groups need unequal rewards and the batch is
    refilled. If every candidate of a try would be skipped, the one most likely kept is
    rolled out, so no try is empty.
    """

    def __init__(
        self,
        domains,
        p_easy: float = 0.5,
        p_hard: float = 0.5,
        target_zero_variance: float = 0.25,
        adjust: float = 0.01,
        min_p: float = 0.05,
        max_p: float = 0.95,
        min_keep: float = 0.01,
        max_tries: int = 10,
    ):
        super().__init__(domains, max_tries)
        for name, value in (
            ("p_easy", p_easy),
            ("p_hard", p_hard),
            ("target_zero_variance", target_zero_variance),
            ("adjust", adjust),
            ("min_p", min_p),
            ("max_p", max_p),
            ("min_keep", min_keep),
        ):
            _number(self.name, name, value, 0.0, 1.0)
        if not min_p <= max_p:
            raise ValueError(f"{self.name}: need min_p <= max_p, got {min_p}, {max_p}")
        self.p_easy, self.p_hard, self.adjust, self.min_p, self.max_p = p_easy, p_hard, adjust, min_p, max_p
        self.target_easy, self.target_hard = target_zero_variance / 3, target_zero_variance * 2 / 3
        self.min_keep = min_keep
        self.state = _PromptTable(easy_streak=0, hard_streak=0)
        self._skipped = 0

    def keep_probability(self, prompt_ids: list[str]) -> np.ndarray:
        rows = self.state.rows(prompt_ids)
        p = self.p_easy ** self.state["easy_streak"][rows] * self.p_hard ** self.state["hard_streak"][rows]
        return np.maximum(p, self.min_keep)

    def choose_prompts(self, step, prompt_ids, n, rng):
        keep = self.keep_probability(prompt_ids)
        chosen = np.flatnonzero(rng.random(len(prompt_ids)) < keep)[:n]
        if chosen.size == 0 and len(prompt_ids) > 0:
            chosen = np.array([int(np.argmax(keep))])
        return chosen

    def observe(self, step, group_domains, rewards, advantages=None, prompt_ids=None):
        zero_var = (rewards == rewards[:, :1]).all(1).numpy()
        mean = rewards.double().mean(1).numpy()
        easy, hard = zero_var & (mean >= 0.5), zero_var & (mean < 0.5)
        rows = self.state.rows(prompt_ids)
        easy_streak, hard_streak = self.state["easy_streak"], self.state["hard_streak"]
        for turn in _in_turn(rows):
            r = rows[turn]
            easy_streak[r] = np.where(easy[turn], easy_streak[r] + 1, 0)
            hard_streak[r] = np.where(hard[turn], hard_streak[r] + 1, 0)
        step_p = self.adjust
        self.p_easy = float(
            np.clip(self.p_easy + (-step_p if easy.mean() >= self.target_easy else step_p), self.min_p, self.max_p)
        )
        self.p_hard = float(
            np.clip(self.p_hard + (-step_p if hard.mean() >= self.target_hard else step_p), self.min_p, self.max_p)
        )

    def diagnostics(self):
        return {"greso_p_easy": self.p_easy, "greso_p_hard": self.p_hard}


class ThompsonDifficulty(Uniform):
    """Roll out the candidates whose Thompson-sampled pass rate is nearest 0.5 (Beta posteriors) — MoPPS / VADE.

    Each prompt has a Beta(α, β) posterior over its pass rate, prior Beta(1, 1). After a
    rollout with mean reward s over G rollouts: α ← λα + (1−λ)α₀ + sG, β ← λβ + (1−λ)β₀ +
    (1−s)G (MoPPS's update, decay λ = 0.5). Candidates: oversample = 8 per slot (MoPPS);
    θ ~ Beta(α, β) per candidate from the trainer's generator; the n with the smallest
    |θ − target| are rolled out (ties: lower index). Rollout weights stay 1.
    """

    shaped_rewards = False
    trl = None

    def __init__(
        self,
        domains,
        oversample: int = 8,
        target: float = 0.5,
        decay: float = 0.5,
        prior_alpha: float = 1.0,
        prior_beta: float = 1.0,
    ):
        super().__init__(domains)
        self.oversample = _number(self.name, "oversample", oversample, 1, integer=True)
        self.target = _number(self.name, "target", target, 0.0, 1.0)
        self.decay = _number(self.name, "decay", decay, 0.0, 1.0)
        self.prior_alpha = _number(self.name, "prior_alpha", prior_alpha, 0.0, low_open=True)
        self.prior_beta = _number(self.name, "prior_beta", prior_beta, 0.0, low_open=True)
        self.state = _PromptTable(alpha=prior_alpha, beta=prior_beta)
        self._sampled: list[np.ndarray] = []

    def posterior(self, prompt_ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
        rows = self.state.rows(prompt_ids)
        return self.state["alpha"][rows], self.state["beta"][rows]

    def choose_prompts(self, step, prompt_ids, n, rng):
        alpha, beta = self.posterior(prompt_ids)
        theta = rng.beta(alpha, beta)
        chosen = np.sort(np.argsort(np.abs(theta - self.target), kind="stable")[:n])
        self._sampled.append(theta[chosen])
        return chosen

    def observe(self, step, group_domains, rewards, advantages=None, prompt_ids=None):
        G = rewards.shape[1]
        success = rewards.double().mean(1).numpy() * G
        rows = self.state.rows(prompt_ids)
        alpha, beta = self.state["alpha"], self.state["beta"]
        for turn in _in_turn(rows):
            r = rows[turn]
            alpha[r] = self.decay * alpha[r] + (1 - self.decay) * self.prior_alpha + success[turn]
            beta[r] = self.decay * beta[r] + (1 - self.decay) * self.prior_beta + (G - success[turn])

    def diagnostics(self):
        sampled, self._sampled = self._sampled, []
        return {"thompson_theta_mean": float(np.concatenate(sampled).mean()) if sampled else float("nan")}


DATA_POLICIES = Registry(
    "data policy",
    {
        "uniform": Uniform,
        # DataFlex-RL select arms
        "difffilter": DiffFilter,
        "maxvar": MaxVar,
        "gfpo": GFPO,
        "topk": TopK,
        # DataFlex-RL reweight arms
        "ar": AdvantageReweight,
        "per": PER,
        "softmax": SoftmaxReweight,
        "diffband": DiffBand,
        # DataFlex-RL domain mixtures
        "static": StaticMixture,
        "reward_gap": RewardGapMixture,
        "dump_ucb": DumpUCBMixture,
        "tscl": TSCLMixture,
        # beyond DataFlex-RL
        "dapo": DynamicSampling,
        "greso": GRESO,
        "thompson": ThompsonDifficulty,
        "exp3": EXP3Mixture,
    },
)
POLICY_NAMES = {cls: name for name, cls in DATA_POLICIES.items()}  # the registry names each policy, once


def make_data_policy(spec: Method, domains: list[str]) -> Uniform:
    """Instantiate the data policy named in ``spec`` ({"name": ..., **params}) over ``domains``."""
    params = {k: v for k, v in spec.items() if k != "name"}
    return DATA_POLICIES[spec["name"]](domains, **params)


def list_policies() -> list[dict]:
    """Name, one-line description and parameters (with defaults) of every registered policy."""
    return list_methods(DATA_POLICIES, 2)


def domain_counts(shares: np.ndarray, total: int) -> np.ndarray:
    """Split ``total`` prompts by ``shares`` with largest-remainder rounding (deterministic, sums to total)."""
    raw = np.asarray(shares, dtype=float) * total
    counts = np.floor(raw).astype(int)
    order = np.argsort(-(raw - counts), kind="stable")
    counts[order[: total - counts.sum()]] += 1
    return counts
