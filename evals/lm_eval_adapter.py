"""An lm-eval ``LM`` for the builtin character-level policy.

Only ``generate_until`` is supported (cut at the ``until`` strings): every armlab benchmark is generative.
Greedy unless the task asks for sampling (``do_sample``, ``temperature``, ``top_p``); a task with lm-eval's
``repeats: k`` hands each item's request over k times, and the j-th copy is sample j.

Sampled answers are common random numbers: answer j of an item is drawn from the uniforms of its own stream,
keyed by (``stream``, benchmark, item, j), where ``stream`` names the experiment and training seed but not
the arm. So arms sharing a seed share their evaluation noise as they share their training noise, the same
checkpoint evaluated twice gives the same answers, and neither depends on batching or request order.
A user with a Hugging Face model uses lm-eval's own ``hf`` model on the same task configs instead.

lm-eval's own command line, with this model registered (lm-eval finds models only among the modules imported)::

    python -m armlab.evals.lm_eval_adapter run --model armlab-builtin --model_args checkpoint=policy.pt \
        --tasks armlab_add --include_path results/<exp>/lm_eval_tasks --output_path out --log_samples
"""

from __future__ import annotations

import logging

import numpy as np
import torch
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from armlab.evals.generation import Generation, answer_digest, cut_at, generation_of, request_key, sample_numbers
from armlab.training.policy import greedy_answers, load_model, sampled_answers

__all__ = ["BuiltinPolicyLM", "cut_at", "sample_uniforms"]

DEFAULT_BATCH_SIZE = 512  # prompts per forward pass
log = logging.getLogger("lm_eval")  # lm-eval's logger: its command line shows what it logs


def sample_uniforms(stream: str, benchmark: str, item: str, sample: int, size: int) -> np.ndarray:
    """The ``size`` uniforms in [0, 1) of one answer's stream (Philox keyed by its :func:`answer_digest`)."""
    key = np.frombuffer(answer_digest(stream, benchmark, item, sample), dtype=np.uint64)
    return np.random.Generator(np.random.Philox(key=key)).random(size)


@register_model("armlab-builtin")
class BuiltinPolicyLM(LM):
    def __init__(
        self,
        checkpoint: str,
        batch_size: int | str = DEFAULT_BATCH_SIZE,
        max_gen_toks: int = 6,
        threads: int = 1,
        stream: str = "",
        device: str | None = None,
        max_batch_size: int | None = None,
    ):
        """``device`` and ``max_batch_size`` are what lm-eval hands every model (its command line: ``cuda:0``, and
        ``batch_size`` 1 or ``auto``); the tiny policy runs on the CPU, and ``auto`` is its default batch."""
        super().__init__()
        if device not in (None, "cpu"):
            log.warning("armlab-builtin runs on the CPU; device %s is not used", device)
        torch.set_num_threads(int(threads))
        self.model = load_model(checkpoint).eval()
        self.batch_size = DEFAULT_BATCH_SIZE if str(batch_size).startswith("auto") else int(batch_size)
        self.max_gen_toks, self.stream = int(max_gen_toks), str(stream)

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        outputs: dict[int, str] = {}  # by request index; every index is in one group of by_settings
        by_settings: dict[Generation, list[int]] = {}
        for index, request in enumerate(requests):
            by_settings.setdefault(generation_of(request, self.max_gen_toks), []).append(index)
        sampled = any(settings.temperature > 0 for settings in by_settings)
        samples = sample_numbers(requests) if sampled else []  # greedy answers need no stream
        for settings, indices in by_settings.items():
            prompts = [requests[i].args[0] for i in indices]
            if settings.temperature == 0:
                texts = greedy_answers(self.model, prompts, settings.max_new, self.batch_size)
            else:
                uniforms = np.stack(
                    [
                        sample_uniforms(self.stream, *request_key(requests[i]), samples[i], settings.max_new)
                        for i in indices
                    ]
                )
                texts = sampled_answers(
                    self.model, prompts, settings.max_new, uniforms, settings.temperature, settings.top_p,
                    self.batch_size,
                )  # fmt: skip
            for index, text in zip(indices, texts):
                # the policy stops at its EOS; the until strings cut what lm-eval asked for
                outputs[index] = cut_at(text, list(settings.until))
        return [outputs[index] for index in range(len(requests))]

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("armlab-builtin supports generate_until tasks only")

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("armlab-builtin supports generate_until tasks only")


if __name__ == "__main__":  # lm-eval's command line, with armlab-builtin registered above
    from lm_eval.__main__ import cli_evaluate

    cli_evaluate()
