"""The builtin GRPO trainer: one run of one arm with one seed.

Each step, top to bottom: the data policy picks prompts (domain mixture, optional
pre-rollout choice among candidates), G rollouts per prompt are sampled with the KV
cache, the verifier scores them (policies that refill sample further prompt batches
until their kept groups fill the batch), the estimator turns group rewards into
advantages, the data policy weights the rollouts (or tokens), and a clipped
policy-gradient loss is minimised with AdamW.

Random streams are derived from (experiment, seed, purpose, step[, refill try]) — not
from the arm — so arms that share a seed see the same prompts and sampling noise.

    python -m training.train --config results/<exp>/config/train/grpo.json --arm grpo --seed 1 \
        --data results/<exp>/data --base results/<exp>/base/policy.pt --out results/<exp>/runs/grpo/seed-1
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from training.config import resolve_arm
from training.data import load_pools
from training.data_policies import domain_counts, make_policy
from training.estimators import compute_advantages
from training.policy import completion_logprobs, decode, left_pad, load_policy, save_policy
from training.tasks import EOS, verify
from training.utils import atomic_path, config_hash, derive_seed, environment_record, run_arguments, write_json


def noisy_verdict(reward: float, noise: float, seed: int, item_id: str, response: str) -> float:
    """Flip a 0/1 verdict with probability ``noise``, decided by a hash of (seed, ε, item, response)."""
    if noise <= 0.0:
        return reward
    u = derive_seed(seed, noise, item_id, response) / 2.0**63
    return 1.0 - reward if u < noise else reward


def aggregate(per_token: torch.Tensor, weights: torch.Tensor, mask: torch.Tensor, mode: str, max_new: int):
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
    raise ValueError(f"unknown loss aggregation {mode!r}")


def draw_prompts(rng: np.random.Generator, pools: dict, union: list, shares, n: int) -> list[dict]:
    """``n`` distinct prompts: uniform over the union of the pools, or split over the domains by ``shares``."""
    if shares is None:
        return [union[i] for i in rng.choice(len(union), size=min(n, len(union)), replace=False)]
    return [pools[domain][i] for domain, k in zip(sorted(pools), domain_counts(shares, n))
            for i in rng.choice(len(pools[domain]), size=min(k, len(pools[domain])), replace=False)]


def rollout(model, items: list[dict], G: int, recipe: dict, seed: int, generator: torch.Generator):
    """G sampled completions per prompt, scored by the verifier: tokens, mask (B·G, max_new), rewards (B, G)."""
    prompt_ids, prompt_valid = left_pad([item["prompt"] for item in items for _ in range(G)])
    tokens, mask = model.generate(prompt_ids, prompt_valid, recipe["max_new_tokens"], recipe["temperature"], generator)
    responses = [decode(t for t, m in zip(row, row_mask) if m).split(EOS)[0]
                 for row, row_mask in zip(tokens.tolist(), mask.tolist())]
    flat = [noisy_verdict(verify(item["task"], item["answer"], response), recipe["reward_noise"],
                          seed, item["id"], response)
            for item, response in zip((item for item in items for _ in range(G)), responses)]
    return tokens, mask, torch.tensor(flat).view(len(items), G)


def policy_loss(logp, old_logp, base_logp, advantages, weights, mask, recipe):
    """Clipped policy-gradient loss (token or GSPO sequence ratio) plus the optional k3 KL penalty."""
    log_ratio = logp - old_logp
    if recipe["ratio_level"] == "sequence":
        seq = (log_ratio * mask).sum(1) / mask.sum(1).clamp(min=1)
        log_ratio = seq[:, None].expand_as(logp)
    ratio = torch.exp(log_ratio)
    clip = recipe["clip"]
    adv = advantages[:, None]
    pg = -torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv)
    log_base_ratio = base_logp - logp
    kl = torch.exp(log_base_ratio) - log_base_ratio - 1
    per_token = pg + recipe["kl_coef"] * kl
    loss = aggregate(per_token, weights, mask, recipe["loss_agg"], recipe["max_new_tokens"])
    clipped = ((ratio - 1).abs() > clip) & mask
    return loss, float(clipped.sum() / mask.sum().clamp(min=1)), kl


def train(config: dict, arm: str, seed: int, data_dir: Path, base_path: Path, out_dir: Path) -> None:
    recipe = resolve_arm(config, arm)
    experiment, threads = config["experiment"], config["threads"]
    torch.set_num_threads(threads)
    torch.manual_seed(derive_seed(experiment, seed, "torch"))
    pools = load_pools(data_dir)
    domains = sorted(pools)
    union = [item for domain in domains for item in pools[domain]]
    model, base_model = load_policy(base_path), load_policy(base_path)
    base_model.requires_grad_(False)
    data_policy = make_policy(recipe["data_policy"], domains)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe["lr"], weight_decay=recipe["weight_decay"])
    P, G = recipe["prompts_per_step"], recipe["group_size"]
    rows, start = [], time.perf_counter()
    print(f"[{arm} seed {seed}] {recipe['steps']} steps × {P} prompts × {G} rollouts; "
          f"estimator {recipe['estimator']}, data policy {recipe['data_policy']}", flush=True)

    with atomic_path(out_dir) as tmp:
        for step in range(1, recipe["steps"] + 1):
            t0 = time.perf_counter()
            # 1-3. prompts, G rollouts each, verifier rewards (optionally noisy). The data policy sets the domain
            #      mixture and may choose among candidate prompts before rollout (GRESO, Thompson); a policy with
            #      max_tries > 1 refills: further prompt batches until its kept groups fill the batch (DAPO).
            #      The first try uses the arm-independent streams of plain GRPO.
            shares = data_policy.domain_shares(step)
            tried, tries, n_kept, skipped = [], 0, 0, 0  # tried: (items, tokens, mask, rewards, kept groups)
            while tries < data_policy.max_tries and n_kept < P:
                stream = (step,) if tries == 0 else (step, tries)
                tries += 1
                prompt_rng = np.random.default_rng(derive_seed(experiment, seed, "prompts", *stream))
                candidates = draw_prompts(prompt_rng, pools, union, shares, P * data_policy.oversample)
                choice_rng = np.random.default_rng(derive_seed(experiment, seed, "choice", *stream))
                chosen = data_policy.choose_prompts(step, [item["id"] for item in candidates], P, choice_rng)
                skipped += len(candidates) - len(chosen)
                if len(chosen) == 0:
                    continue
                items = [candidates[i] for i in chosen]
                generator = torch.Generator().manual_seed(derive_seed(experiment, seed, "rollouts", *stream))
                tokens, mask, rewards = rollout(model, items, G, recipe, seed, generator)
                lengths = mask.sum(1).view(-1, G)
                advantages = compute_advantages(recipe["estimator"], rewards, lengths)
                kept_groups = (data_policy.rollout_weights(rewards, advantages, lengths) > 0).any(1)
                n_kept += int(kept_groups.sum())
                tried.append((items, tokens, mask, rewards, kept_groups))
            if not tried:
                raise RuntimeError(f"data policy {recipe['data_policy']} chose no prompt in step {step}")
            # the batch: the first P kept groups, topped up with dropped ones (weight 0) when the tries ran out
            tried_items, tried_tokens, tried_masks, tried_rewards, tried_kept = zip(*tried)
            all_items = [item for items in tried_items for item in items]
            all_masks, all_rewards = torch.cat(tried_masks), torch.cat(tried_rewards)
            kept_groups = torch.cat(tried_kept)
            batch = torch.cat([kept_groups.nonzero()[:, 0], (~kept_groups).nonzero()[:, 0]])[:P].sort().values
            groups = [all_items[i] for i in batch.tolist()]
            batch_rows = (batch[:, None] * G + torch.arange(G)).flatten()
            tokens, mask, rewards = torch.cat(tried_tokens)[batch_rows], all_masks[batch_rows], all_rewards[batch]
            lengths = mask.sum(1).view(-1, G)
            prompt_ids, prompt_valid = left_pad([item["prompt"] for item in groups for _ in range(G)])

            # 4. advantages, 5. rollout weights, and feedback on every group rolled out this step
            advantages = compute_advantages(recipe["estimator"], rewards, lengths)
            weights = data_policy.rollout_weights(rewards, advantages, lengths)
            all_advantages = advantages if len(all_items) == len(groups) else compute_advantages(
                recipe["estimator"], all_rewards, all_masks.sum(1).view(-1, G))
            data_policy.observe(step, [item["domain"] for item in all_items], all_rewards,
                                advantages=all_advantages, prompt_ids=[item["id"] for item in all_items])

            # 6. clipped policy-gradient updates (mu passes over the same rollouts)
            with torch.no_grad():
                base_logp, _ = completion_logprobs(base_model, prompt_ids, prompt_valid, tokens, mask)
            old_logp, kept = None, bool((weights > 0).any())
            for _ in range(recipe["updates_per_batch"] if kept else 1):
                logp, logits = completion_logprobs(model, prompt_ids, prompt_valid, tokens, mask)
                if old_logp is None:  # the sampling policy; token-level policies (ar) weight tokens by it
                    old_logp = logp.detach()
                    loss_weights = data_policy.loss_weights(weights, old_logp, mask)
                loss, clip_frac, kl = policy_loss(logp, old_logp, base_logp, advantages.flatten(),
                                                  loss_weights, mask, recipe)
                if kept:
                    optimizer.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), recipe["grad_clip"])
                    optimizer.step()

            # 7. log the step
            with torch.no_grad():
                log_probs = torch.log_softmax(logits, -1)
                entropy = -(log_probs.exp() * log_probs).sum(-1)
            seconds = time.perf_counter() - t0
            w = weights.flatten()
            row = {"step": step, "reward": rewards.mean().item(),
                   "frac_zero_var": (rewards.std(1) == 0).float().mean().item() if G > 1 else 1.0,
                   "kept_frac": (w > 0).float().mean().item(),
                   "effective_batch": (w.sum() ** 2 / (w ** 2).sum()).item() if kept else 0.0,
                   "weight_mean": w.mean().item(), "weight_std": w.std().item(), "weight_max": w.max().item(),
                   "loss": loss.item(), "clip_frac": clip_frac,
                   "kl": (kl * mask).sum().item() / mask.sum().item(),
                   "entropy": (entropy * mask).sum().item() / mask.sum().item(),
                   "response_len": lengths.float().mean().item(),
                   "gen_batches": tries, "prompts_rolled_out": len(all_items), "prompts_skipped": skipped,
                   "tokens_per_s": mask.sum().item() / seconds, "seconds": seconds}
            if loss_weights.dim() == 2:  # token weights: their spread over the active tokens
                active = loss_weights[mask & (loss_weights > 0)]
                row.update(token_weight_std=active.std().item(), token_weight_max=active.max().item())
            row.update(data_policy.diagnostics())
            group_domains = np.array([item["domain"] for item in groups])
            for domain in domains:
                in_domain = torch.from_numpy(group_domains == domain)
                row[f"reward_{domain}"] = rewards[in_domain].mean().item() if in_domain.any() else float("nan")
                row[f"share_{domain}"] = in_domain.float().mean().item()
            rows.append(row)
            if step % recipe["log_every"] == 0 or step == recipe["steps"]:
                recent = pd.DataFrame(rows[-recipe["log_every"]:])
                elapsed = time.perf_counter() - start
                print(f"[{arm} seed {seed}] step {step}/{recipe['steps']} reward {recent.reward.mean():.3f} "
                      f"kept {recent.kept_frac.mean():.2f} kl {recent.kl.mean():.4f} "
                      f"{recent.seconds.mean() * 1000:.0f} ms/step, eta {elapsed / step * (recipe['steps'] - step):.0f}s",
                      flush=True)
            if step % recipe["checkpoint_every"] == 0 and step < recipe["steps"]:
                save_policy(model, tmp / "checkpoints" / f"step-{step:06d}.pt")

        save_policy(model, tmp / "policy.pt")
        steps = pd.DataFrame(rows)
        steps.insert(0, "seed", seed)
        steps.insert(0, "arm", arm)
        steps.insert(0, "experiment", experiment)
        steps.to_parquet(tmp / "steps.parquet", index=False)
        write_json(tmp / "manifest.json", {
            "experiment": experiment, "arm": arm, "seed": seed, "recipe": recipe,
            "config_hash": config_hash(config), "config": config,
            "seeds": {"prompts": "derive_seed(experiment, seed, 'prompts', step[, try]) (try >= 1: refill batches)",
                      "choice": "derive_seed(experiment, seed, 'choice', step[, try])",
                      "rollouts": "derive_seed(experiment, seed, 'rollouts', step[, try])",
                      "torch": derive_seed(experiment, seed, "torch")},
            "seconds": time.perf_counter() - start, "ms_per_step": 1000 * float(steps.seconds.mean()),
            **environment_record(threads)})


def main(argv=None) -> None:
    config, args = run_arguments(__doc__.splitlines()[0], "data", "base", argv=argv)
    train(config, args.arm, args.seed, args.data, args.base, args.out)


if __name__ == "__main__":
    main()
