"""The builtin GRPO trainer: one run of one arm with one seed.

Each step, top to bottom: the data policy picks prompts (domain-mixture hook),
G rollouts per prompt are sampled with the KV cache, the verifier scores them,
the estimator turns group rewards into advantages, the data policy weights the
rollouts, and a clipped policy-gradient loss is minimised with AdamW.

Random streams are derived from (experiment, seed, purpose, step) — not from the
arm — so arms that share a seed see the same prompts and sampling noise.

    python -m training.train --config results/<exp>/config.json --arm grpo --seed 1 \
        --data results/<exp>/data --base results/<exp>/base/policy.pt --out results/<exp>/runs/grpo/seed-1
"""

from __future__ import annotations

import argparse
import json
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
from training.utils import atomic_path, config_hash, derive_seed, environment_record, write_json


def noisy_verdict(reward: float, noise: float, seed: int, item_id: str, response: str) -> float:
    """Flip a 0/1 verdict with probability ``noise``, decided by a hash of (seed, ε, item, response)."""
    if noise <= 0.0:
        return reward
    u = derive_seed(seed, noise, item_id, response) / 2.0**63
    return 1.0 - reward if u < noise else reward


def aggregate(per_token: torch.Tensor, weights: torch.Tensor, mask: torch.Tensor, mode: str, max_new: int):
    """Weighted loss over active tokens (verl ``agg_loss`` modes); rollouts with weight 0 drop out entirely."""
    mask = mask.to(per_token.dtype) * (weights > 0).to(per_token.dtype)[:, None]
    weighted = per_token * weights[:, None] * mask
    n_seqs = (mask.sum(1) > 0).sum().clamp(min=1)
    if mode == "token-mean":
        return weighted.sum() / mask.sum().clamp(min=1)
    if mode == "seq-mean-token-mean":
        return (weighted.sum(1) / mask.sum(1).clamp(min=1)).sum() / n_seqs
    if mode == "seq-mean-token-sum-norm":
        return (weighted.sum(1) / max_new).sum() / n_seqs
    raise ValueError(f"unknown loss aggregation {mode!r}")


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
    P, G, max_new = recipe["prompts_per_step"], recipe["group_size"], recipe["max_new_tokens"]
    rows, start = [], time.perf_counter()
    print(f"[{arm} seed {seed}] {recipe['steps']} steps × {P} prompts × {G} rollouts; "
          f"estimator {recipe['estimator']}, data policy {recipe['data_policy']}", flush=True)

    with atomic_path(out_dir) as tmp:
        for step in range(1, recipe["steps"] + 1):
            t0 = time.perf_counter()
            # 1. prompts: the data policy's domain mixture, or uniform over the union of pools
            prompt_rng = np.random.default_rng(derive_seed(experiment, seed, "prompts", step))
            shares = data_policy.domain_shares(step)
            if shares is None:
                groups = [union[i] for i in prompt_rng.choice(len(union), size=P, replace=False)]
            else:
                groups = [pools[domain][i] for domain, n in zip(domains, domain_counts(shares, P))
                          for i in prompt_rng.choice(len(pools[domain]), size=n, replace=False)]

            # 2. G rollouts per prompt
            prompt_ids, prompt_valid = left_pad([item["prompt"] for item in groups for _ in range(G)])
            generator = torch.Generator().manual_seed(derive_seed(experiment, seed, "rollouts", step))
            tokens, mask = model.generate(prompt_ids, prompt_valid, max_new, recipe["temperature"], generator)

            # 3. verifier rewards (optionally noisy)
            responses = [decode(t for t, m in zip(row, row_mask) if m).split(EOS)[0]
                         for row, row_mask in zip(tokens.tolist(), mask.tolist())]
            flat = [noisy_verdict(verify(item["task"], item["answer"], response), recipe["reward_noise"],
                                  seed, item["id"], response)
                    for item, response in zip((g for g in groups for _ in range(G)), responses)]
            rewards = torch.tensor(flat).view(P, G)
            lengths = mask.sum(1).view(P, G)

            # 4. advantages and 5. rollout weights
            advantages = compute_advantages(recipe["estimator"], rewards, lengths)
            weights = data_policy.rollout_weights(rewards, advantages, lengths)
            data_policy.observe(step, [item["domain"] for item in groups], rewards)

            # 6. clipped policy-gradient updates (mu passes over the same rollouts)
            with torch.no_grad():
                base_logp, _ = completion_logprobs(base_model, prompt_ids, prompt_valid, tokens, mask)
            old_logp, kept = None, bool((weights > 0).any())
            for _ in range(recipe["updates_per_batch"] if kept else 1):
                logp, logits = completion_logprobs(model, prompt_ids, prompt_valid, tokens, mask)
                if old_logp is None:
                    old_logp = logp.detach()
                loss, clip_frac, kl = policy_loss(logp, old_logp, base_logp, advantages.flatten(),
                                                  weights.flatten(), mask, recipe)
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
                   "tokens_per_s": mask.sum().item() / seconds, "seconds": seconds}
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
            "seeds": {"prompts": "derive_seed(experiment, seed, 'prompts', step)",
                      "rollouts": "derive_seed(experiment, seed, 'rollouts', step)",
                      "torch": derive_seed(experiment, seed, "torch")},
            "seconds": time.perf_counter() - start, "ms_per_step": 1000 * float(steps.seconds.mean()),
            **environment_record(threads)})


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--arm", required=True)
    parser.add_argument("--seed", required=True, type=int)
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--base", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    train(json.loads(Path(args.config).read_text()), args.arm, args.seed, args.data, args.base, args.out)


if __name__ == "__main__":
    main()
