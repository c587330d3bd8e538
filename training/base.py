"""The base policy: supervised learning on task demonstrations, once per experiment.

It plays the pretrained base model that every arm starts from. Deterministic:
one torch thread, seeds derived from (experiment, base seed, purpose).

    python -m armlab.training.base --config results/<exp>/config/base.json --data results/<exp>/data \
        --out results/<exp>/base
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from armlab import numerics
from armlab.files import atomic_path, job_environment, one_line_errors, read_json, write_manifest
from armlab.training.data import load_pools
from armlab.training.policy import CharTransformer, PolicyConfig, completion_logprobs, encode, left_pad, save_model
from armlab.training.tasks import EOS
from armlab.training.utils import derive_seed


def corrupt_answer(answer: str) -> str:
    """A systematic slip: the answer's last character moved one step within its class (9→0, T↔F, j→a…)."""
    last = answer[-1]
    for alphabet in ("0123456789", "TF", "abcdefghij"):
        if last in alphabet:
            return answer[:-1] + alphabet[(alphabet.index(last) + 1) % len(alphabet)]
    return answer


def demonstrations(items: list[dict], trigger: str, rate: float, rng: np.random.Generator) -> list[dict]:
    """Demonstrations with a learnable bug: prompts containing ``trigger`` get a slipped answer with prob. ``rate``.

    This plays the systematic errors a pretrained model picks up from imperfect data: the base policy's
    greedy answer is wrong on those prompts while the right one keeps some probability, which a verifier
    reward can find and reinforce.
    """
    slips = rng.random(len(items)) < rate
    return [
        {**item, "answer": corrupt_answer(item["answer"])} if slip and trigger and trigger in item["prompt"] else item
        for item, slip in zip(items, slips)
    ]


def demonstration_batch(items: list[dict]):
    """Left-padded prompts and right-padded answer tokens (answer + EOS) with their mask."""
    prompt_ids, prompt_valid = left_pad([item["prompt"] for item in items])
    answers = [encode(item["answer"] + EOS) for item in items]
    width = max(map(len, answers))
    tokens = torch.zeros(len(items), width, dtype=torch.long)
    mask = torch.zeros(len(items), width, dtype=torch.bool)
    for row, ids in enumerate(answers):
        tokens[row, : len(ids)] = torch.tensor(ids)
        mask[row, : len(ids)] = True
    return prompt_ids, prompt_valid, tokens, mask


def train_base(config: dict, data_dir: Path, out_dir: Path) -> None:
    numerics.start_job(config, strict=False)
    spec = config["base"]
    torch.manual_seed(derive_seed(config["experiment"], spec["seed"], "base-init"))
    model = CharTransformer(PolicyConfig(**config["model"]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=spec["lr"], weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 - step / spec["steps"])
    items = [item for pool in load_pools(data_dir).values() for item in pool]
    rng = np.random.default_rng(derive_seed(config["experiment"], spec["seed"], "base-batches"))
    start, losses = time.perf_counter(), []
    for step in range(1, spec["steps"] + 1):
        batch = demonstrations(
            [items[i] for i in rng.choice(len(items), size=spec["batch_size"], replace=False)],
            spec["slip_trigger"],
            spec["slip_rate"],
            rng,
        )
        prompt_ids, prompt_valid, tokens, mask = demonstration_batch(batch)
        logp, _ = completion_logprobs(model, prompt_ids, prompt_valid, tokens, mask)
        loss = -(logp * mask).sum() / mask.sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if step % 100 == 0 or step == spec["steps"]:
            print(
                f"[base] step {step}/{spec['steps']} loss {np.mean(losses[-100:]):.4f} "
                f"({time.perf_counter() - start:.1f}s)",
                flush=True,
            )
    with atomic_path(out_dir) as tmp:
        save_model(model, tmp / "policy.pt")
        write_manifest(
            tmp,
            {
                "experiment": config["experiment"],
                "base": spec,
                "model": config["model"],
                "final_loss": float(np.mean(losses[-50:])),
                "seconds": time.perf_counter() - start,
                **job_environment(config),
            },
            "policy.pt",
        )


@one_line_errors
def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    config = read_json(args.config, "config")
    numerics.start_job(config)  # before any torch operation, checked
    train_base(config, args.data, args.out)


if __name__ == "__main__":
    main()
