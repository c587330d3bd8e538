"""What armlab's lm-eval models share about a generation request: which answer it is, its random stream, its
sampling settings, and where its text ends.

Answer j of an item (lm-eval's j-th repeat of the item's request) is keyed by (stream, benchmark, item, j), where
``stream`` names the experiment and the training seed but not the arm (evals/run.py ``evaluation_stream``): every
arm of a seed draws answer j from the same randomness, whatever the batching or the order of the requests.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from armlab.contract import TASK_PREFIX


def cut_at(text: str, until: list[str]) -> str:
    """The text before the first occurrence of any stop string."""
    for stop in until:
        if stop:
            text = text.split(stop)[0]
    return text


def request_key(request) -> tuple[str, str]:
    """(benchmark, item) of an lm-eval request: armlab's docs carry their id, other tasks have lm-eval's doc_id."""
    task = str(request.task_name)
    doc = request.doc if isinstance(request.doc, dict) else {}
    item = doc["id"] if "id" in doc else request.doc_id
    return task.removeprefix(TASK_PREFIX), str(item)


def answer_digest(stream: str, benchmark: str, item: str, sample: int) -> bytes:
    """16 bytes naming one answer's randomness."""
    return hashlib.blake2b(f"{stream}\0{benchmark}\0{item}\0{sample}".encode(), digest_size=16).digest()


def answer_seed(stream: str, benchmark: str, item: str, sample: int) -> int:
    """A 63-bit seed of one answer (an engine's per-request seed), from :func:`answer_digest`."""
    return int.from_bytes(answer_digest(stream, benchmark, item, sample)[:8], "little") >> 1


@dataclass(frozen=True)
class Generation:
    """One request's settings, as lm-eval hands them (``until`` strings, max new tokens, temperature 0 = greedy)."""

    until: tuple[str, ...]
    max_new: int
    temperature: float
    top_p: float


def generation_of(request, default_max_new: int) -> Generation:
    """The :class:`Generation` of an lm-eval ``generate_until`` request (greedy unless it asks ``do_sample``)."""
    gen_kwargs = request.args[1]
    until = gen_kwargs.get("until") or []
    until = [until] if isinstance(until, str) else list(until)
    temperature = float(gen_kwargs.get("temperature", 0.0)) if gen_kwargs.get("do_sample") else 0.0
    top_p = float(gen_kwargs.get("top_p", 1.0))
    return Generation(tuple(until), int(gen_kwargs.get("max_gen_toks", default_max_new)), temperature, top_p)


def sample_numbers(requests) -> list[int]:
    """Each request's answer number j: lm-eval repeats an item's request k times, and the j-th copy is sample j."""
    seen: dict[tuple[str, str], int] = {}
    numbers = []
    for request in requests:
        key = request_key(request)
        seen[key] = seen.get(key, -1) + 1
        numbers.append(seen[key])
    return numbers
