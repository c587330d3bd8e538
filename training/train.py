"""The builtin GRPO trainer: one run of one arm with one seed.

:func:`train` reads as the steps it performs, each a function below in the order it runs:
:func:`sample_batch` has the data policy pick prompts (domain mixture, optional pre-rollout choice among
candidates), samples G rollouts per prompt with the KV cache and scores them with the verifier (policies that
refill roll out further prompt batches until their kept groups fill the batch); :func:`weigh` turns group rewards
into advantages (the estimator) and rollout weights (the data policy); :func:`update` minimises the recipe's
policy-gradient loss (training/losses.py, default PPO clip) with AdamW; :func:`record_step` writes the step's row
of the log.

Random streams are derived from (experiment, seed, purpose, step[, refill try]) — not from the arm — so arms that
share a seed see the same prompts and sampling noise (training/rollouts.py, shared with the TRL backend). An arm
with ``recipe.stream`` k > 0 draws them from (experiment/stream-k, ...) instead: independent randomness, same
treatment (an A/A control).

    python -m armlab.training.train --config results/<exp>/config/train/grpo.json --arm grpo --seed 1 \
        --data results/<exp>/data --base results/<exp>/base/policy.pt --out results/<exp>/runs/grpo/seed-1
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from armlab import numerics, registration
from armlab.files import atomic_path, job_environment, one_line_errors, verify_file, write_manifest
from armlab.spec import Recipe
from armlab.training.data import arm_pools
from armlab.training.data_policies import Uniform, make_data_policy
from armlab.training.estimators import compute_advantages
from armlab.training.ledger import write_ledger
from armlab.training.losses import POLICY_LOSSES, loss_spec
from armlab.training.policy import CharTransformer, decode, group_logprobs, left_pad, load_model, save_model
from armlab.training.recipe import kept_checkpoint_steps, resolve_arm
from armlab.training.rollouts import draw_prompts, score, step_seed, stream_key
from armlab.training.utils import config_hash, derive_seed, run_arguments


class AdamW:
    """``torch.optim.AdamW`` on the CPU, step for step and bit for bit, without ``torch.optim.Optimizer``.

    Every ``torch.optim.Optimizer`` imports the torch compiler (``torch._dynamo``, ~2 s) in its constructor
    (``add_param_group``), ``zero_grad`` and ``step`` (``_use_grad_for_differentiable``), whatever its foreach/fused
    flags. This is the arithmetic of torch's default CPU path (``torch.optim.adam._single_tensor_adam``: foreach and
    fused off, amsgrad, maximize, capturable and differentiable off, float lr and betas, decoupled weight decay);
    tests/training/test_trainer.py checks it against ``torch.optim.AdamW`` parameter for parameter, bit for bit.
    """

    def __init__(self, params, lr: float, weight_decay: float, betas=(0.9, 0.999), eps: float = 1e-8):
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.weight_decay, self.betas, self.eps = float(lr), float(weight_decay), betas, eps
        self.steps = 0  # torch keeps it per parameter as a float32 tensor: exact up to 2**24 steps
        self.exp_avg = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        if not any(p.grad is not None for p in self.params):
            return  # torch skips parameters without a gradient and counts steps per parameter
        if any(p.grad is None for p in self.params):
            raise RuntimeError("AdamW: every parameter must have a gradient (a frozen one: requires_grad_(False))")
        (beta1, beta2), lr, eps = self.betas, self.lr, self.eps
        self.steps += 1
        step = float(self.steps)
        bias_correction1, bias_correction2 = 1 - beta1**step, 1 - beta2**step
        step_size, bias_correction2_sqrt = lr / bias_correction1, bias_correction2**0.5
        for param, exp_avg, exp_avg_sq in zip(self.params, self.exp_avg, self.exp_avg_sq):
            grad = param.grad
            if self.weight_decay != 0:
                param.mul_(1 - lr * self.weight_decay)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            param.addcdiv_(exp_avg, denom, value=-step_size)


@dataclass
class Run:
    """What the steps of one run share: who runs, the recipe, the prompt pools, the models and the optimizer."""

    config: dict
    arm: str
    seed: int
    recipe: Recipe
    pools: dict[str, list[dict]]
    model: CharTransformer
    reference: CharTransformer  # the frozen base model, anchor of the KL penalty
    data_policy: Uniform
    optimizer: AdamW
    started: float  # time.perf_counter() once the run was set up: elapsed and ETA count from here
    leak: dict | None = None  # a planted control's leaked evaluation items (training/data.py arm_pools)


@dataclass
class Rollouts:
    """Groups of rollouts: one prompt item per group, tokens and mask (groups·G, N), rewards (groups, G)."""

    items: list[dict]
    tokens: torch.Tensor
    mask: torch.Tensor
    rewards: torch.Tensor

    @property
    def lengths(self) -> torch.Tensor:
        """Completion lengths (groups, G)."""
        return self.mask.sum(1).view(self.rewards.shape)

    def groups(self, index: torch.Tensor) -> Rollouts:
        """The groups at ``index``, in that order."""
        G = self.rewards.shape[1]
        rows = (index[:, None] * G + torch.arange(G)).flatten()
        return Rollouts(
            [self.items[i] for i in index.tolist()], self.tokens[rows], self.mask[rows], self.rewards[index]
        )

    @staticmethod
    def cat(parts: list[Rollouts]) -> Rollouts:
        """The groups of all ``parts``, in order."""
        return Rollouts(
            [item for part in parts for item in part.items],
            torch.cat([part.tokens for part in parts]),
            torch.cat([part.mask for part in parts]),
            torch.cat([part.rewards for part in parts]),
        )


def train(config: dict, arm: str, seed: int, data_dir: Path, base_path: Path, out_dir: Path) -> None:
    """Train ``arm`` with ``seed`` from the base model; write policy.pt, checkpoints/, steps.parquet, manifest.json."""
    verify_file(base_path)  # a truncated base model is named here, not by an opaque error from torch.load
    run = start_run(config, arm, seed, data_dir, base_path)
    n_steps, rows, checkpoint_steps = run.recipe.steps, [], kept_checkpoint_steps(run.recipe)
    with atomic_path(out_dir) as tmp:
        for step in range(1, n_steps + 1):
            t0 = time.perf_counter()
            batch, rolled_out, sampling = sample_batch(run, step)
            advantages, weights = weigh(run, step, batch, rolled_out)
            # the logged kl needs a pass over the frozen base policy: without a KL penalty, only on logged steps
            log_kl = step % run.recipe.log_every == 0 or step == n_steps
            learning, loss_weights = update(run, batch, advantages, weights, log_kl=log_kl)
            rows.append(
                record_step(run, step, batch, weights, loss_weights, learning, sampling, time.perf_counter() - t0)
            )
            if step % run.recipe.log_every == 0 or step == n_steps:
                print_progress(run, rows)
            if step in checkpoint_steps:  # the last step's model is policy.pt
                save_model(run.model, tmp / "checkpoints" / f"step-{step:06d}.pt")
        write_outputs(run, rows, tmp, out_dir)


def start_run(config: dict, arm: str, seed: int, data_dir: Path, base_path: Path) -> Run:
    """Seed torch, load the pools and the base model twice (to train, and as reference), build policy and optimizer."""
    recipe = resolve_arm(config, arm)
    numerics.start_job(config, strict=False)
    torch.manual_seed(derive_seed(stream_key(config["experiment"], recipe), seed, "torch"))
    pools, leak = arm_pools(config, arm, data_dir)
    model, reference = load_model(base_path), load_model(base_path)
    reference.requires_grad_(False)
    model.written_out_attention = reference.written_out_attention = True  # faster here (policy.attention)
    data_policy = make_data_policy(recipe.data_policy, sorted(pools))
    optimizer = AdamW(model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay)
    print(
        f"[{arm} seed {seed}] {recipe.steps} steps × {recipe.prompts_per_step} prompts × "
        f"{recipe.group_size} rollouts; estimator {dict(recipe.estimator)}, data policy {dict(recipe.data_policy)}",
        flush=True,
    )
    if leak:
        print(
            f"[{arm} seed {seed}] planted control: {len(leak['items'])} evaluation items (share {leak['share']:g} "
            f"of each benchmark's) in its training pool, {leak['copies']} copies each (arms.{arm}.leak)",
            flush=True,
        )
    return Run(config, arm, seed, recipe, pools, model, reference, data_policy, optimizer, time.perf_counter(), leak)


def sample_batch(run: Run, step: int) -> tuple[Rollouts, Rollouts, dict]:
    """The step's batch of P scored groups, every group rolled out for it, and the sampling counts of the log."""
    policy, P = run.data_policy, run.recipe.prompts_per_step
    shares = policy.domain_shares(step)
    tried, kept, tries, n_kept, skipped = [], [], 0, 0, 0
    # a policy with max_tries > 1 refills (DAPO): further prompt batches until its kept groups (any rollout weight
    # > 0) fill the batch, so each batch is scored as soon as it is sampled: the refill decides on its rewards
    while tries < policy.max_tries and n_kept < P:
        items, n_skipped = pick_prompts(run, step, tries, shares)
        if items:
            rollouts = roll_out(run, items, step, tries)
            advantages = compute_advantages(run.recipe.estimator, rollouts.rewards, rollouts.lengths)
            kept.append((policy.rollout_weights(rollouts.rewards, advantages, rollouts.lengths) > 0).any(1))
            tried.append(rollouts)
            n_kept += int(kept[-1].sum())
        tries, skipped = tries + 1, skipped + n_skipped
    if not tried:
        raise RuntimeError(f"data policy {dict(run.recipe.data_policy)} chose no prompt in step {step}")
    rolled_out, kept_all = Rollouts.cat(tried), torch.cat(kept)
    # the first P kept groups, topped up with dropped ones (weight 0) when the tries ran out
    in_batch = torch.cat([kept_all.nonzero()[:, 0], (~kept_all).nonzero()[:, 0]])[:P].sort().values
    sampling = {
        "gen_batches": tries,
        "prompts_rolled_out": len(rolled_out.items),
        "prompts_skipped": skipped,
        "rollout_tokens": int(rolled_out.mask.sum()),
    }
    return rolled_out.groups(in_batch), rolled_out, sampling


def pick_prompts(run: Run, step: int, attempt: int, shares: np.ndarray | None) -> tuple[list[dict], int]:
    """Try ``attempt``'s prompts: candidates drawn by domain ``shares``, then the policy's choice; and #skipped."""
    streams, policy, P = (
        stream_key(run.config["experiment"], run.recipe),
        run.data_policy,
        run.recipe.prompts_per_step,
    )
    prompt_rng = np.random.default_rng(step_seed(streams, run.seed, "prompts", step, attempt))
    candidates = draw_prompts(prompt_rng, run.pools, shares, P * policy.oversample)
    choice_rng = np.random.default_rng(step_seed(streams, run.seed, "choice", step, attempt))
    chosen = policy.choose_prompts(step, [item["id"] for item in candidates], P, choice_rng)
    return [candidates[i] for i in chosen], len(candidates) - len(chosen)


def roll_out(run: Run, items: list[dict], step: int, attempt: int) -> Rollouts:
    """G sampled completions per prompt (KV cache), each scored by the verifier (optionally noisy)."""
    recipe, G = run.recipe, run.recipe.group_size
    streams = stream_key(run.config["experiment"], recipe)
    generator = torch.Generator().manual_seed(step_seed(streams, run.seed, "rollouts", step, attempt))
    prompt_ids, prompt_valid = left_pad([item["prompt"] for item in items])
    tokens, mask = run.model.generate(
        prompt_ids, prompt_valid, recipe.max_new_tokens, recipe.temperature, generator, group_size=G
    )
    prompts = [item for item in items for _ in range(G)]
    completions = [
        decode(t for t, m in zip(row, row_mask) if m) for row, row_mask in zip(tokens.tolist(), mask.tolist())
    ]
    rewards = [
        score(item["task"], item["answer"], item["id"], completion, recipe, run.seed)
        for item, completion in zip(prompts, completions)
    ]
    return Rollouts(items, tokens, mask, torch.tensor(rewards).view(len(items), G))


def weigh(run: Run, step: int, batch: Rollouts, rolled_out: Rollouts) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch's advantages (estimator) and rollout weights (data policy); the policy observes the whole step."""
    estimator = run.recipe.estimator
    advantages = compute_advantages(estimator, batch.rewards, batch.lengths)
    weights = run.data_policy.rollout_weights(batch.rewards, advantages, batch.lengths)
    # feedback on every group rolled out, dropped and refill groups too: each one says how hard its prompt is
    run.data_policy.observe(
        step,
        [item["domain"] for item in rolled_out.items],
        rolled_out.rewards,
        advantages=compute_advantages(estimator, rolled_out.rewards, rolled_out.lengths),
        prompt_ids=[item["id"] for item in rolled_out.items],
    )
    return advantages, weights


def update(
    run: Run, batch: Rollouts, advantages: torch.Tensor, weights: torch.Tensor, log_kl: bool = True
) -> tuple[dict, torch.Tensor]:
    """``updates_per_batch`` clipped policy-gradient passes over the batch; the last pass's stats, the loss weights.

    The reference policy's pass (a forward over the batch) runs only when its log-probabilities are used: for the KL
    penalty (``kl_coef`` > 0) or for the logged ``kl`` (``log_kl``; without it the row's ``kl`` is NaN). With
    ``kl_coef`` 0 the penalty adds nothing, so skipping the pass leaves the update bit for bit as it was.
    """
    recipe, G, mask = run.recipe, run.recipe.group_size, batch.mask
    prompts = left_pad([item["prompt"] for item in batch.items])
    base_logp = None
    if recipe.kl_coef != 0 or log_kl:
        with torch.no_grad():
            base_logp, _ = group_logprobs(run.reference, *prompts, batch.tokens, mask, G)
    old_logp, learn = None, bool((weights > 0).any())
    # a batch without weight takes no step, but one pass still gives its loss, KL and entropy to the log
    for _ in range(recipe.updates_per_batch if learn else 1):
        logp, log_probs = group_logprobs(run.model, *prompts, batch.tokens, mask, G)
        if old_logp is None:  # the sampling policy; token-level policies (ar) weight tokens by it
            old_logp = logp.detach()
            loss_weights = run.data_policy.loss_weights(weights, old_logp, mask)
        loss, clip_frac, kl = policy_loss(logp, old_logp, base_logp, advantages.flatten(), loss_weights, mask, recipe)
        if learn:
            run.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(run.model.parameters(), recipe.grad_clip)
            run.optimizer.step()
    with torch.no_grad():
        entropy = -(log_probs.exp() * log_probs).sum(-1)
    n_tokens = mask.sum().item()
    return {
        "loss": loss.item(),
        "clip_frac": clip_frac,
        "kl": (kl * mask).sum().item() / n_tokens if kl is not None else float("nan"),
        "entropy": (entropy * mask).sum().item() / n_tokens,
        "gradient_updates": recipe.updates_per_batch if learn else 0,
    }, loss_weights


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    base_logp: torch.Tensor | None,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    mask: torch.Tensor,
    recipe: Recipe,
) -> tuple[torch.Tensor, float, torch.Tensor | None]:
    """The recipe's policy loss (training/losses.py; token or GSPO sequence ratio) plus the optional k3 KL penalty.

    The loss (``recipe.policy_loss``, default ``ppo_clip``) gives the per-token loss and its clipped tokens; the
    KL term is added per token, then ``aggregate`` reduces. Without ``base_logp`` (only allowed with ``kl_coef``
    0) there is no KL term and no KL (None).
    """
    log_ratio = logp - old_logp
    if recipe.ratio_level == "sequence":
        seq = (log_ratio * mask).sum(1) / mask.sum(1).clamp(min=1)
        log_ratio = seq[:, None].expand_as(logp)
    spec = loss_spec(recipe)
    params = {k: v for k, v in spec.items() if k != "name"}
    counted = mask & ((weights[:, None] if weights.dim() == 1 else weights) > 0)  # what the losses' statistics see
    pg, clipped = POLICY_LOSSES[spec["name"]](log_ratio, logp, advantages[:, None], counted, recipe.clip, **params)
    if base_logp is None:
        if recipe.kl_coef != 0:
            raise ValueError("policy_loss: a KL penalty (kl_coef > 0) needs the reference log-probabilities")
        kl, per_token = None, pg
    else:
        log_base_ratio = base_logp - logp
        kl = torch.exp(log_base_ratio) - log_base_ratio - 1
        per_token = pg + recipe.kl_coef * kl
    loss = aggregate(per_token, weights, mask, recipe.loss_agg, recipe.max_new_tokens)
    clipped = clipped & mask
    return loss, float(clipped.sum() / mask.sum().clamp(min=1)), kl


def aggregate(
    per_token: torch.Tensor, weights: torch.Tensor, mask: torch.Tensor, mode: str, max_new: int
) -> torch.Tensor:
    """Weighted loss over active tokens (verl ``agg_loss`` modes); rollouts with weight 0 drop out entirely.

    ``weights`` is one per rollout (B,) or one per token (B, N); a token of weight 0 drops out too.
    """
    weights = weights[:, None] if weights.dim() == 1 else weights
    mask = mask.to(per_token.dtype) * (weights > 0).to(per_token.dtype)
    weighted = per_token * weights * mask
    n_seqs = (mask.sum(1) > 0).sum().clamp(min=1)
    if mode == "token-mean":
        return weighted.sum() / mask.sum().clamp(min=1)
    if mode == "seq-mean-token-mean":
        return (weighted.sum(1) / mask.sum(1).clamp(min=1)).sum() / n_seqs
    if mode == "seq-mean-token-sum-norm":
        return (weighted.sum(1) / max_new).sum() / n_seqs
    if mode == "token-sum":
        return weighted.sum()
    if mode == "seq-mean-token-sum":
        return weighted.sum(1).sum() / n_seqs
    raise ValueError(f"unknown loss aggregation {mode!r}")


def record_step(
    run: Run,
    step: int,
    batch: Rollouts,
    weights: torch.Tensor,
    loss_weights: torch.Tensor,
    learning: dict,
    sampling: dict,
    seconds: float,
) -> dict:
    """The step's row of the log: rewards, weights, loss stats, sampling counts, speed, diagnostics, domains."""
    G, rewards, mask, w = run.recipe.group_size, batch.rewards, batch.mask, weights.flatten()
    row = {
        "step": step,
        "reward": rewards.mean().item(),
        "frac_zero_var": (rewards.std(1) == 0).float().mean().item() if G > 1 else 1.0,
        "kept_frac": (w > 0).float().mean().item(),
        "effective_batch": (w.sum() ** 2 / (w**2).sum()).item() if (w > 0).any() else 0.0,
        "weight_mean": w.mean().item(),
        "weight_std": w.std().item(),
        "weight_max": w.max().item(),
        **learning,
        "response_len": batch.lengths.float().mean().item(),
        **sampling,
        "trained_tokens": int(mask.sum()) * learning["gradient_updates"],
        "tokens_per_s": mask.sum().item() / seconds,
        "seconds": seconds,
    }
    if loss_weights.dim() == 2:  # token weights: their spread over the active tokens
        active = loss_weights[mask & (loss_weights > 0)]
        row.update(token_weight_std=active.std().item(), token_weight_max=active.max().item())
    row.update(run.data_policy.diagnostics())
    group_domains = np.array([item["domain"] for item in batch.items])
    for domain in sorted(run.pools):
        in_domain = torch.from_numpy(group_domains == domain)
        row[f"reward_{domain}"] = rewards[in_domain].mean().item() if in_domain.any() else float("nan")
        row[f"share_{domain}"] = in_domain.float().mean().item()
    return row


def print_progress(run: Run, rows: list[dict]) -> None:
    """One line: the means of the last ``log_every`` rows, the time per step and the time left."""
    step, n_steps = rows[-1]["step"], run.recipe.steps
    recent = pd.DataFrame(rows[-run.recipe.log_every :])
    elapsed = time.perf_counter() - run.started
    print(
        f"[{run.arm} seed {run.seed}] step {step}/{n_steps} reward {recent.reward.mean():.3f} "
        f"kept {recent.kept_frac.mean():.2f} kl {recent.kl.mean():.4f} "
        f"{recent.seconds.mean() * 1000:.0f} ms/step, eta {elapsed / step * (n_steps - step):.0f}s",
        flush=True,
    )


def write_outputs(run: Run, rows: list[dict], tmp: Path, out_dir: Path) -> None:
    """The trained model, the step log and the manifest with the sha256 of every output (written at ``tmp``,
    installed at ``out_dir``)."""
    experiment, seed = run.config["experiment"], run.seed
    save_model(run.model, tmp / "policy.pt")
    steps = pd.DataFrame(rows)
    counts = steps.rename(columns={"prompts_rolled_out": "prompts"})
    write_ledger(counts, sum(p.numel() for p in run.model.parameters()), tmp)
    steps.insert(0, "seed", seed)
    steps.insert(0, "arm", run.arm)
    steps.insert(0, "experiment", experiment)
    steps.to_parquet(tmp / "steps.parquet", index=False)
    write_manifest(
        tmp,
        {
            "experiment": experiment,
            "arm": run.arm,
            "seed": seed,
            "recipe": run.recipe.as_dict(),
            # a planted control's leaked evaluation items (arms.<arm>.leak); absent for every other run
            **({"leak": run.leak} if run.leak else {}),
            "config_hash": config_hash(run.config),
            "config": run.config,
            "seeds": {
                "prompts": "derive_seed(streams, seed, 'prompts', step[, try]) (try >= 1: refill batches)",
                "choice": "derive_seed(streams, seed, 'choice', step[, try])",
                "rollouts": "derive_seed(streams, seed, 'rollouts', step[, try])",
                "streams": stream_key(experiment, run.recipe),
                "torch": derive_seed(stream_key(experiment, run.recipe), seed, "torch"),
            },
            "seconds": time.perf_counter() - run.started,
            "ms_per_step": 1000 * float(steps.seconds.mean()),
            **job_environment(run.config),
            **registration.record(out_dir),
        },
        *sorted(p.name for p in tmp.iterdir()),
    )  # every output of the run


@one_line_errors
def main(argv=None) -> None:
    config, args = run_arguments(__doc__.splitlines()[0], "data", "base", argv=argv)
    numerics.start_job(config)  # before any torch operation, checked
    train(config, args.arm, args.seed, args.data, args.base, args.out)


if __name__ == "__main__":
    main()
