"""An lm-eval ``LM`` for the builtin character-level policy.

Only ``generate_until`` is supported (greedy, cut at the ``until`` strings): every
armlab benchmark is generative. A user with a Hugging Face model replaces this
adapter with lm-eval's own ``hf`` model on the same task configs.
"""

from __future__ import annotations

import torch
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from training.policy import greedy_answers, load_model


def cut_at(text: str, until: list[str]) -> str:
    """The text before the first occurrence of any stop string."""
    for stop in until:
        if stop:
            text = text.split(stop)[0]
    return text


@register_model("armlab-builtin")
class BuiltinPolicyLM(LM):
    def __init__(self, checkpoint: str, batch_size: int = 512, max_gen_toks: int = 6, threads: int = 1):
        super().__init__()
        torch.set_num_threads(int(threads))
        self.model = load_model(checkpoint).eval()
        self.batch_size, self.max_gen_toks = int(batch_size), int(max_gen_toks)

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        outputs: list[str | None] = [None] * len(requests)
        by_kwargs: dict[tuple, list[int]] = {}
        for index, request in enumerate(requests):
            gen_kwargs = request.args[1]
            until = gen_kwargs.get("until") or []
            until = [until] if isinstance(until, str) else list(until)
            key = (tuple(until), int(gen_kwargs.get("max_gen_toks", self.max_gen_toks)))
            by_kwargs.setdefault(key, []).append(index)
        for (until, max_new), indices in by_kwargs.items():
            # greedy_answers stops at the policy's EOS; the until strings cut what lm-eval asked for
            texts = greedy_answers(self.model, [requests[i].args[0] for i in indices], max_new, self.batch_size)
            for index, text in zip(indices, texts):
                outputs[index] = cut_at(text, list(until))
        return outputs

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("armlab-builtin supports generate_until tasks only")

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("armlab-builtin supports generate_until tasks only")
