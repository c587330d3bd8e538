"""A tiny character-level causal transformer with KV-cache sampling.

Prompts in a batch are left-padded: ``valid`` marks real tokens, positions count
real tokens only, and every query may always attend to itself so that padded rows
stay finite (they are masked out of every loss).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from armlab.training.tasks import EOS, PAD, VOCAB

STOI = {ch: i for i, ch in enumerate(VOCAB)}
PAD_ID, EOS_ID = STOI[PAD], STOI[EOS]
# token id by code point, -1 outside the vocabulary (left_pad looks code points past the table up at its end)
_TOKEN_OF_CODE_POINT = np.full(max(map(ord, VOCAB)) + 2, -1)
_TOKEN_OF_CODE_POINT[[ord(ch) for ch in VOCAB]] = range(len(VOCAB))


def encode(text: str) -> list[int]:
    try:
        return [STOI[ch] for ch in text]
    except KeyError as err:
        raise ValueError(f"character {err.args[0]!r} in {text!r} is not in the policy's vocabulary") from None


def decode(ids) -> str:
    return "".join(VOCAB[i] for i in ids)


def left_pad(prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (B, T) left-padded with PAD, and the mask of real tokens."""
    lengths = [len(p) for p in prompts]  # one token per character
    width = max(lengths)
    # all prompts at once, through the table of token ids by code point
    points = np.frombuffer("".join(prompts).encode("utf-32-le", "surrogatepass"), dtype="<u4")
    tokens = _TOKEN_OF_CODE_POINT[np.minimum(points, len(_TOKEN_OF_CODE_POINT) - 1)]
    if (tokens < 0).any():
        for prompt in prompts:
            encode(prompt)  # raises for the first prompt with a character outside the vocabulary
    padded = np.full((len(prompts), width), PAD_ID, dtype=np.int64)
    padded[np.arange(width) >= width - np.array(lengths)[:, None]] = tokens  # fills row by row, each in order
    ids = torch.from_numpy(padded)
    return ids, ids != PAD_ID


@dataclass
class PolicyConfig:
    d_model: int = 64
    n_layer: int = 2
    n_head: int = 4
    max_len: int = 48
    vocab_size: int = len(VOCAB)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, written_out: bool = False):
    """Scaled dot-product attention, keys where ``mask`` is False excluded: torch's kernel, or written out.

    torch's ``F.scaled_dot_product_attention`` is the default, so that base policies and evaluations stay bit for
    bit those of earlier commits (base training amplifies any rounding difference into another base policy). The RL
    trainer asks for the written-out softmax(q kᵀ / √d) v: the same function up to float rounding, and at the
    policy's sizes (head size 16, ≤ 48 positions) about 3× faster forward and backward than torch's CPU kernel
    (benchmarks/trainer_bench.py). Every query attends at least to itself, so no row is all excluded.
    """
    if not written_out:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    return scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v


class Block(nn.Module):
    def __init__(self, cfg: PolicyConfig):
        super().__init__()
        self.n_head = cfg.n_head
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(), nn.Linear(4 * cfg.d_model, cfg.d_model)
        )

    def forward(self, x, mask, cache=None, written_out_attention=False):
        B, T, C = x.shape
        # (B, n_head, T, head size) views of the same memory as one view + permute, but the backward joins their
        # gradients with one concatenation, not a stack and a strided copy
        q, k, v = (
            t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(C, -1)
        )
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        y = attention(q, k, v, mask[:, None], written_out_attention)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x)), (k, v)


class CharTransformer(nn.Module):
    def __init__(self, cfg: PolicyConfig):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.apply(self._init)
        self.written_out_attention = False  # the RL trainer's choice (see attention); not saved with the weights

    @staticmethod
    def _init(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, ids: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, V) for a full left-padded sequence."""
        x, _ = self.prefill(ids, valid)
        return self.head(self.ln_f(x))

    def prefill(self, ids: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, list]:
        """Hidden states (B, T, C) of a full left-padded sequence, and each block's keys and values (its KV cache)."""
        T = ids.shape[1]
        positions = (valid.long().cumsum(1) - 1).clamp(min=0)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        mask = (causal[None] & valid[:, None, :]) | torch.eye(T, dtype=torch.bool)[None]
        return self._blocks(self.tok(ids) + self.pos(positions), mask, [None] * len(self.blocks))

    def extend(self, ids: torch.Tensor, valid: torch.Tensor, past_valid: torch.Tensor, caches: list):
        """Hidden states (B, S, C) of ``ids`` appended after cached tokens (``past_valid`` marks the real ones), and
        the caches with them added; the same states as :meth:`prefill` over the whole sequence."""
        S = ids.shape[1]
        positions = (past_valid.long().sum(1, keepdim=True) + valid.long().cumsum(1) - 1).clamp(min=0)
        causal = torch.ones(S, S, dtype=torch.bool).tril()
        own = (causal[None] & valid[:, None, :]) | torch.eye(S, dtype=torch.bool)[None]
        mask = torch.cat([past_valid[:, None, :].expand(-1, S, -1), own], 2)
        return self._blocks(self.tok(ids) + self.pos(positions), mask, caches)

    def _blocks(self, x, mask, caches):
        new_caches = []
        for block, cache in zip(self.blocks, caches):
            x, kv = block(x, mask, cache, self.written_out_attention)
            new_caches.append(kv)
        return x, new_caches

    @torch.no_grad()
    def generate(
        self,
        prompt_ids,
        prompt_valid,
        max_new: int,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
        greedy: bool = False,
        uniforms: torch.Tensor | None = None,
        top_p: float = 1.0,
        group_size: int = 1,
    ):
        """Sample ``group_size`` completions per prompt with a KV cache.

        Training samples with ``generator``; evaluation passes ``uniforms`` (B, max_new), one per row and
        position, so that each row's answer depends on its own uniforms only (:func:`pick_tokens`).
        Returns (tokens (B, max_new), mask (B, max_new) of tokens up to and including EOS), B = prompts × group_size,
        prompt-major: prompt i's completions are rows i·G … i·G + G − 1.
        """
        T = prompt_ids.shape[1]
        if T + max_new > self.cfg.max_len:
            raise ValueError(f"prompt of {T} tokens + {max_new} new tokens exceeds max_len {self.cfg.max_len}")
        hidden, caches = self.prefill(prompt_ids, prompt_valid)
        logits, key_valid = self.head(self.ln_f(hidden[:, -1])), prompt_valid
        (logits, key_valid), caches = _for_groups(group_size, [logits, key_valid], caches)  # the prompt's pass once
        B = logits.shape[0]
        tokens = torch.full((B, max_new), PAD_ID, dtype=torch.long)
        active = torch.ones(B, dtype=torch.bool)
        done = torch.zeros(B, dtype=torch.bool)
        out_mask = torch.zeros(B, max_new, dtype=torch.bool)
        for t in range(max_new):
            if greedy:
                token = logits.argmax(-1)
            elif uniforms is not None:
                token = pick_tokens(logits, temperature, top_p, uniforms[:, t])
            else:
                probs = F.softmax(logits / temperature, dim=-1)
                token = torch.multinomial(probs, 1, generator=generator).squeeze(1)
            active = ~done
            tokens[:, t] = torch.where(active, token, PAD_ID)
            out_mask[:, t] = active
            done = done | (token == EOS_ID)
            if bool(done.all()) or t == max_new - 1:
                break
            new_valid = torch.ones(B, 1, dtype=torch.bool)  # finished rows go on (their tokens are masked out)
            hidden, caches = self.extend(tokens[:, t : t + 1], new_valid, key_valid, caches)
            logits, key_valid = self.head(self.ln_f(hidden[:, -1])), torch.cat([key_valid, new_valid], 1)
        return tokens, out_mask


def pick_tokens(logits: torch.Tensor, temperature: float, top_p: float, uniforms: torch.Tensor) -> torch.Tensor:
    """One token per row by inverse-CDF sampling from softmax(logits / temperature), cut to its top-p nucleus.

    Nucleus (top-p) sampling, Holtzman et al. 2020 ("The Curious Case of Neural Text Degeneration"): the
    most probable tokens whose mass first reaches ``top_p`` are kept and renormalised; the row's uniform
    picks the token where the cumulative mass of that set (in descending probability) first exceeds it.
    """
    probs = F.softmax(logits / temperature, dim=-1)
    ordered, order = probs.sort(dim=-1, descending=True, stable=True)
    ordered = ordered * ((ordered.cumsum(-1) - ordered) < top_p)  # the token that crosses top_p stays in
    cdf = ordered.double().cumsum(-1)  # in float64: a uniform just below 1 must not round up to the whole mass
    last_kept = (ordered > 0).sum(-1, keepdim=True) - 1
    pick = torch.minimum((cdf <= uniforms[:, None].double() * cdf[:, -1:]).sum(-1, keepdim=True), last_kept)
    return order.gather(-1, pick).squeeze(1)


def completion_logprobs(model: CharTransformer, prompt_ids, prompt_valid, tokens, token_mask):
    """Per-token log-probabilities (B, N) of the completion tokens, and those (B, N, V) of every token at their
    positions."""
    ids = torch.cat([prompt_ids, tokens], dim=1)
    valid = torch.cat([prompt_valid, token_mask], dim=1)
    logits = model(ids[:, :-1], valid[:, :-1])[:, prompt_ids.shape[1] - 1 :]
    return _token_logprobs(logits, tokens)


def group_logprobs(model: CharTransformer, prompt_ids, prompt_valid, tokens, token_mask, group_size: int):
    """:func:`completion_logprobs` for ``group_size`` completions per prompt (rows prompt-major, as
    :meth:`CharTransformer.generate` gives them), the prompts' positions computed once per prompt, not per row.

    The same function as :func:`completion_logprobs` over the prompts repeated ``group_size`` times, up to float
    rounding (tests/training/test_trainer.py), at 1/G of the prompt positions' cost, forward and backward: a shared
    prefix whose gradient is summed over its group.
    """
    hidden, caches = model.prefill(prompt_ids, prompt_valid)
    (last, prompt_valid), caches = _for_groups(group_size, [hidden[:, -1:], prompt_valid], caches)
    completion, _ = model.extend(tokens[:, :-1], token_mask[:, :-1], prompt_valid, caches)
    return _token_logprobs(model.head(model.ln_f(torch.cat([last, completion], 1))), tokens)


def _for_groups(group_size: int, rows: list[torch.Tensor], caches: list) -> tuple[list[torch.Tensor], list]:
    """Each prompt's rows and KV cache repeated for the ``group_size`` completions of its group."""
    if group_size == 1:
        return rows, caches

    def repeat(t: torch.Tensor) -> torch.Tensor:
        return t.repeat_interleave(group_size, 0)

    return [repeat(t) for t in rows], [tuple(map(repeat, kv)) for kv in caches]


def _token_logprobs(logits: torch.Tensor, tokens: torch.Tensor):
    log_probs = torch.log_softmax(logits, dim=-1)
    return log_probs.gather(-1, tokens[..., None]).squeeze(-1), log_probs


def save_model(model: CharTransformer, path: str | Path) -> None:
    """Write the model's config and weights to ``path`` atomically."""
    from armlab.files import atomic_path

    with atomic_path(path) as tmp:
        torch.save({"config": vars(model.cfg), "state_dict": model.state_dict()}, tmp)


def load_model(path: str | Path) -> CharTransformer:
    """The model saved by :func:`save_model`, on the CPU."""
    blob = torch.load(path, map_location="cpu", weights_only=True)
    model = CharTransformer(PolicyConfig(**blob["config"]))
    model.load_state_dict(blob["state_dict"])
    return model


def _answers(model: CharTransformer, prompts: list[str], max_new: int, batch_size: int, **how) -> list[str]:
    """Completions (text before EOS) in batches; ``how`` are :meth:`CharTransformer.generate`'s options,
    ``uniforms`` (one row per prompt) sliced along with the prompts."""
    uniforms = how.pop("uniforms", None)
    answers = []
    for start in range(0, len(prompts), batch_size):
        ids, valid = left_pad(prompts[start : start + batch_size])
        if uniforms is not None:
            how["uniforms"] = torch.as_tensor(uniforms[start : start + batch_size])
        tokens, mask = model.generate(ids, valid, max_new, **how)
        for row, row_mask in zip(tokens.tolist(), mask.tolist()):
            text = decode(t for t, m in zip(row, row_mask) if m)
            answers.append(text.split(EOS)[0])
    return answers


def greedy_answers(model: CharTransformer, prompts: list[str], max_new: int, batch_size: int = 256) -> list[str]:
    """Greedy completions (text before EOS) for a list of prompts."""
    return _answers(model, prompts, max_new, batch_size, greedy=True)


def sampled_answers(
    model: CharTransformer,
    prompts: list[str],
    max_new: int,
    uniforms,
    temperature: float,
    top_p: float = 1.0,
    batch_size: int = 256,
) -> list[str]:
    """Sampled completions for a list of prompts, row i drawn with ``uniforms[i]`` (max_new of them)."""
    return _answers(model, prompts, max_new, batch_size, temperature=temperature, top_p=top_p, uniforms=uniforms)
