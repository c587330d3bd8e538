"""reasoning-gym's generators (github.com/open-thought/reasoning-gym): benchmarks of ``eval.external`` and
training prompts of the TRL backend (``trl.reasoning_gym``), and the grading both share.

An item carries what rebuilds it (:data:`REBUILD_KEYS`: dataset, JSON config, seed, size, index); an answer is
the last ``<answer>…</answer>`` of the response (reasoning-gym's ``extract_answer``, the format its system
prompts ask for), else the whole stripped response, correct when the dataset's own ``score_answer`` gives it full
credit. Seeds come from (experiment, benchmark), and for training prompts (experiment, name, "train"); a training
prompt is never the question of an evaluation item of ``eval.external``'s reasoning-gym benchmarks.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from typing import Any

from armlab.configfile import ConfigError, missing_package
from armlab.training.utils import derive_seed

REBUILD_KEYS = ("rg_dataset", "rg_config", "rg_seed", "rg_size", "rg_index")
EVAL_ITEMS = 100  # an evaluation benchmark's items when it gives no n_items
MAX_DRAWS_PER_PROMPT = 50  # a training pool looks this many draws per prompt deep for distinct ones
FULL_CREDIT = 1.0  # score_answer's score of a correct answer


@functools.lru_cache(maxsize=64)
def dataset(name: str, config: str, seed: int, size: int):
    """reasoning-gym's dataset ``name`` with its JSON ``config``, ``seed`` and ``size`` (built once per process;
    its items are generated when indexed)."""
    import reasoning_gym

    logging.getLogger("reasoning_gym").setLevel(logging.WARNING)
    return reasoning_gym.create_dataset(name, seed=seed, size=size, **json.loads(config))


def open_dataset(spec: Mapping, seed: int, size: int, where: str) -> tuple[Any, dict]:
    """The dataset of a spec (``dataset``, ``config``) and the rebuild keys its items share; one-line errors name
    ``where`` (reasoning-gym missing, an unknown dataset with near misses, a config its generator refuses)."""
    from armlab.registry import Registry

    try:
        from reasoning_gym.factory import DATASETS
    except ImportError:
        raise missing_package("reasoning-gym", "reasoning_gym", where, "source reasoning_gym") from None
    name = spec.get("dataset")
    if name not in DATASETS:
        raise ConfigError(Registry("reasoning-gym dataset", DATASETS).unknown(name, f"{where}.dataset"))
    config = json.dumps(spec.get("config") or {}, sort_keys=True)
    try:
        generated = dataset(name, config, seed, size)
        generated[0]  # a config some generators accept but cannot draw from fails here
    except (TypeError, ValueError, AssertionError) as exc:
        raise ConfigError(f"{where}.config: reasoning-gym's {name} refused it: {str(exc).splitlines()[0]}") from None
    return generated, {"rg_dataset": name, "rg_config": config, "rg_seed": seed, "rg_size": size}


def benchmark_entries(name: str, spec: Mapping, experiment: str, where: str) -> tuple[list[dict], dict]:
    """The entries of evaluation benchmark ``name`` (its first ``n_items``, seeded from (experiment, name)) and
    the rebuild keys they share."""
    size = int(spec.get("n_items") or EVAL_ITEMS)
    generated, rebuild = open_dataset(spec, derive_seed(experiment, name), size, where)
    return [generated[index] for index in range(size)], rebuild


def answer_of(response: str) -> str:
    """The answer in a response: its last ``<answer>…</answer>``, else all of it, stripped."""
    from reasoning_gym.utils import extract_answer

    tagged = extract_answer(response)
    return (response if tagged is None else tagged).strip()


def score(item: Mapping, response: str) -> tuple[float, str]:
    """The verdict on the answer in ``response`` (1 iff the dataset's ``score_answer`` gives it full credit) and
    that answer; 0 and "" for none.

    A partial score is not a correct answer: chain_sum gives 0.5 to "33" for 3, and a verdict must be 0 or 1 for
    pass@k, maj@k and the data policies, which read rewards as pass rates.
    """
    answer = answer_of(response)
    if not answer:
        return 0.0, ""
    generated = dataset(item["rg_dataset"], item["rg_config"], int(item["rg_seed"]), int(item["rg_size"]))
    entry = generated[int(item["rg_index"])]
    return float(generated.score_answer(answer=answer, entry=entry) >= FULL_CREDIT), answer


def held_out(config: Mapping) -> dict[str, Mapping]:
    """The reasoning-gym benchmarks of ``eval.external``: their questions are never training prompts."""
    external = (config.get("eval") or {}).get("external") or {}
    return {name: spec for name, spec in external.items() if spec.get("source") == "reasoning_gym"}


def training_pools(config: Mapping, source: str = "config") -> dict[str, list[dict]]:
    """The training prompts of ``trl.reasoning_gym`` per domain: each entry's ``n_items`` (default
    ``data.pool_per_benchmark``) distinct questions drawn from (experiment, name, "train"), none the question of
    an evaluation item (:func:`held_out`), as items of armlab's pools with their rebuild keys."""
    specs = (config.get("trl") or {}).get("reasoning_gym") or {}
    if not specs:
        return {}
    experiment = config["experiment"]
    evaluated = {
        entry["question"]
        for name, spec in held_out(config).items()
        for entry in benchmark_entries(name, spec, experiment, f"{source}: eval.external.{name}")[0]
    }
    pools: dict[str, list[dict]] = {}
    for name, spec in specs.items():
        where = f"{source}: trl.reasoning_gym.{name}"
        wanted = int(spec.get("n_items") or config["data"]["pool_per_benchmark"])
        size = wanted * MAX_DRAWS_PER_PROMPT
        generated, rebuild = open_dataset(spec, derive_seed(experiment, name, "train"), size, where)
        template, seen = spec.get("prompt", "{question}"), set(evaluated)
        items: list[dict] = []
        for index in range(size):
            if len(items) == wanted:
                break
            entry = generated[index]
            if entry["question"] in seen:
                continue
            seen.add(entry["question"])
            items.append(
                {
                    "id": f"{name}-train-{len(items):05d}",
                    "benchmark": name,
                    "domain": spec["domain"],
                    "task": "",
                    "prompt": template.format(question=entry["question"]),
                    "answer": str(entry["answer"]),
                    **rebuild,
                    "rg_index": index,
                }
            )
        if len(items) < wanted:
            raise ConfigError(
                f"{where}.n_items: {size} draws gave only {len(items)} distinct questions that are not evaluation "
                f"items, but n_items = {wanted}; lower n_items or widen its config"
            )
        pools.setdefault(spec["domain"], []).extend(items)
    return pools
