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
import hashlib
import json
import logging
from collections.abc import Mapping

from armlab.configfile import ConfigError, limits_of, missing_package
from armlab.contract import is_twin, published_name, twin_name
from armlab.spec import ReasoningGymPool, default_of
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


@functools.lru_cache(maxsize=65536)
def entry(name: str, config: str, seed: int, size: int, index: int) -> dict:
    """Item ``index`` of a dataset (:func:`dataset`), generated once per process."""
    return dataset(name, config, seed, size)[index]


def rebuild_of(spec: Mapping, seed: int, size: int) -> dict:
    """The rebuild keys (but the index) of the items a spec (``dataset``, ``config``) draws with ``seed``."""
    config = json.dumps(spec.get("config") or {}, sort_keys=True)
    return {"rg_dataset": spec.get("dataset"), "rg_config": config, "rg_seed": seed, "rg_size": size}


def benchmark_draw(name: str, spec: Mapping, experiment: str) -> tuple[int, int]:
    """(seed, size) of evaluation benchmark ``name``: its first ``n_items``, seeded from (experiment, name)."""
    return derive_seed(experiment, name), int(spec.get("n_items") or EVAL_ITEMS)


def training_draw(name: str, spec: Mapping, config: Mapping) -> tuple[int, int]:
    """(seed, size) of ``trl.reasoning_gym`` entry ``name``: seeded from (experiment, name, "train"), another
    stream than an evaluation benchmark's, and :data:`MAX_DRAWS_PER_PROMPT` draws per prompt wanted."""
    return derive_seed(config["experiment"], name, "train"), wanted_prompts(spec, config) * MAX_DRAWS_PER_PROMPT


def wanted_prompts(spec: Mapping, config: Mapping) -> int:
    """The training prompts an entry of ``trl.reasoning_gym`` asks for (default ``data.pool_per_benchmark``)."""
    return int(spec.get("n_items") or config["data"]["pool_per_benchmark"])


def open_dataset(spec: Mapping, seed: int, size: int, where: str) -> dict:
    """The rebuild keys that a spec's (``dataset``, ``config``) items share, once its first item is drawn; one-line
    errors name ``where`` (reasoning-gym missing, an unknown dataset with near misses, a config its generator
    refuses)."""
    from armlab.registry import Registry

    try:
        from reasoning_gym.factory import DATASETS
    except ImportError:
        raise missing_package("reasoning-gym", "reasoning_gym", where, "source reasoning_gym") from None
    name = spec.get("dataset")
    if name not in DATASETS:
        raise ConfigError(Registry("reasoning-gym dataset", DATASETS).unknown(name, f"{where}.dataset"))
    rebuild = rebuild_of(spec, seed, size)
    draw(rebuild, 0, f"{where}.config")  # a config some generators accept but cannot draw from fails here
    return rebuild


def draw(rebuild: Mapping, index: int, where: str) -> dict:
    """Item ``index`` of the dataset that ``rebuild`` names; whatever its generator raises is one line naming
    ``where``."""
    name = rebuild["rg_dataset"]
    try:
        return entry(name, rebuild["rg_config"], int(rebuild["rg_seed"]), int(rebuild["rg_size"]), index)
    except Exception as exc:  # noqa: BLE001 (a generator's own check, whatever it raises)
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"{where}: reasoning-gym's {name} refused it (item {index}): {message}") from None


def benchmark_entries(name: str, spec: Mapping, experiment: str, where: str) -> tuple[list[dict], dict]:
    """The entries of evaluation benchmark ``name`` (its first ``n_items``, seeded from (experiment, name)) and
    the rebuild keys they share."""
    rebuild = open_dataset(spec, *benchmark_draw(name, spec, experiment), where)
    return [draw(rebuild, index, f"{where}.config") for index in range(rebuild["rg_size"])], rebuild


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
    key = (item["rg_dataset"], item["rg_config"], int(item["rg_seed"]), int(item["rg_size"]))
    try:
        credit = dataset(*key).score_answer(answer=answer, entry=entry(*key, int(item["rg_index"])))
    except Exception:  # noqa: BLE001 (a scorer that chokes on an answer has not given it credit)
        credit = 0.0
    return float(credit >= FULL_CREDIT), answer


DRAWN_BY = ("source", "dataset", "config", "n_items")  # what decides a reasoning-gym benchmark's items


def held_out(config: Mapping) -> dict[str, Mapping]:
    """The reasoning-gym benchmarks of ``eval.external``, by what decides their items: their questions are never
    training prompts."""
    external = (config.get("eval") or {}).get("external") or {}
    drawn = {name: spec for name, spec in external.items() if spec.get("source") == "reasoning_gym"}
    twins = {twin_name(name): spec for name, spec in drawn.items() if spec.get("twin")}  # another draw, held out too
    return {name: {key: spec[key] for key in DRAWN_BY if key in spec} for name, spec in {**drawn, **twins}.items()}


def external_key(name: str) -> str:
    """The config key of a reasoning-gym benchmark of ``eval.external``, or of its twin's draw."""
    return f"eval.external.{published_name(name)}" + (".twin" if is_twin(name) else "")


def training_pools(config: Mapping, source: str = "config") -> dict[str, list[dict]]:
    """The training prompts of ``trl.reasoning_gym`` per domain: each entry's ``n_items`` (default
    ``data.pool_per_benchmark``) distinct questions drawn from (experiment, name, "train"), none the question of
    an evaluation item (:func:`held_out`), as items of armlab's pools with their rebuild keys; a prompt above
    ``limits.prompt_chars`` characters is one line naming it."""
    specs = (config.get("trl") or {}).get("reasoning_gym") or {}
    if not specs:
        return {}
    evaluated = {
        item["question"]
        for name, spec in held_out(config).items()
        for item in benchmark_entries(name, spec, config["experiment"], f"{source}: {external_key(name)}")[0]
    }
    pools: dict[str, list[dict]] = {}
    longest = limits_of(source, dict(config))["prompt_chars"]
    for name, spec in specs.items():
        where = f"{source}: trl.reasoning_gym.{name}"
        wanted = wanted_prompts(spec, config)
        rebuild = open_dataset(spec, *training_draw(name, spec, config), where)
        template, seen = spec.get("prompt", default_of(ReasoningGymPool, "prompt")), set(evaluated)
        items: list[dict] = []
        for index in range(rebuild["rg_size"]):
            if len(items) == wanted:
                break
            drawn = draw(rebuild, index, f"{where}.config")
            if drawn["question"] in seen:
                continue
            seen.add(drawn["question"])
            prompt = template.format(question=drawn["question"])
            if len(prompt) > longest:
                raise ConfigError(
                    f"{where}: prompt {name}-train-{len(items):05d} is {len(prompt)} characters, above the limit of "
                    f"{longest}; set limits.prompt_chars to allow it"
                )
            items.append(
                {
                    "id": f"{name}-train-{len(items):05d}",
                    "benchmark": name,
                    "domain": spec["domain"],
                    "task": "",
                    "prompt": prompt,
                    "answer": str(drawn["answer"]),
                    **rebuild,
                    "rg_index": index,
                }
            )
        if len(items) < wanted:
            raise ConfigError(
                f"{where}.n_items: {rebuild['rg_size']} draws gave only {len(items)} distinct questions that are not "
                f"evaluation items, but n_items = {wanted}; lower n_items or widen its config"
            )
        pools.setdefault(spec["domain"], []).extend(items)
    return pools


_PROBE = """
import json, sys
from armlab.training.reasoning_gym_tasks import item_digests
print(json.dumps([item_digests(*key) for key in json.loads(sys.argv[1])]))
"""


def item_digests(name: str, config: str, seed: int, size: int, count: int) -> list[str]:
    """A digest of the question and answer of each of a dataset's first ``count`` items."""
    return [
        hashlib.sha256(json.dumps([str(item["question"]), str(item["answer"])]).encode()).hexdigest()[:16]
        for item in (entry(name, config, seed, size, index) for index in range(count))
    ]


def draws_of(config: Mapping, source: str = "config") -> dict[str, tuple]:
    """Every reasoning-gym draw of the experiment, evaluation benchmarks and training prompts: key -> (dataset,
    JSON config, seed, size, items used), the values of its rebuild keys but the index and how many of its first
    items the jobs use (a benchmark's every item; a training pool's, up to the last index it took)."""
    drawn = [
        (external_key(name), spec, benchmark_draw(name, spec, config["experiment"]), None)
        for name, spec in held_out(config).items()
    ]
    pools = [item for pool in training_pools(config, source).values() for item in pool]
    drawn += [
        (f"trl.reasoning_gym.{name}", spec, training_draw(name, spec, config), name)
        for name, spec in ((config.get("trl") or {}).get("reasoning_gym") or {}).items()
    ]
    draws = {}
    for key, spec, (seed, size), pool in drawn:
        used = size if pool is None else 1 + max(item["rg_index"] for item in pools if item["benchmark"] == pool)
        draws[f"{source}: {key}" + ("" if key.endswith(".twin") else ".dataset")] = (
            *rebuild_of(spec, seed, size).values(),
            used,
        )
    return draws


def check_reproducible(draws: Mapping[str, tuple]) -> None:
    """Every item a job uses of each draw is the same here and in two fresh processes with other hash seeds (compared
    by digest, item by item): the evaluation job rebuilds an item to grade it, and every training job draws its
    prompts anew, so a generator whose items
    depend on Python's hash seed or on global random state (reasoning-gym's word_ladder, isomorphic_strings, ...)
    would grade other items than it asked and let evaluation questions into training. One line naming the key."""
    import os
    import subprocess
    import sys

    if not draws:
        return
    probe = json.dumps(list(draws.values()))
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _PROBE, probe],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        for hash_seed in ("1", "2")
    ]
    outputs = []
    for run in runs:
        out, err = run.communicate()
        if run.returncode:
            last = (err.strip().splitlines() or ["no message"])[-1]
            raise ConfigError(f"{next(iter(draws))}: reasoning-gym failed in a fresh process: {last}")
        outputs.append(json.loads(out))
    here = [item_digests(*key) for key in draws.values()]
    for (where, key), mine, first, second in zip(draws.items(), here, *outputs):
        if not mine == first == second:
            index = next(i for i, digests in enumerate(zip(mine, first, second)) if len(set(digests)) > 1)
            raise ConfigError(
                f"{where}: reasoning-gym's {key[0]} draws its item {index} (of the {key[-1]} the jobs use) "
                f"otherwise in another process (its items depend on Python's hash seed or on global random state), "
                f"so armlab could neither rebuild its items to grade them nor keep its evaluation questions out of "
                f"training; choose another dataset"
            )
