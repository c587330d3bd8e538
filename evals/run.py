"""Evaluate one checkpoint on the experiment's benchmarks through lm-evaluation-harness.

Writes the lm-eval results JSON, the per-item samples (``samples_<task>.jsonl``)
and the run's rows of the tidy scores table (``scores.parquet``). ``--model`` names the
lm-eval model (its registry name; the backend's ``lm_eval_model``): ``armlab-builtin``
(evals/lm_eval_adapter.py) serves a builtin ``--checkpoint policy.pt``; lm-eval's own ``hf``
serves a Hugging Face checkpoint of the trl/command backends (``--hf-checkpoint DIR``, or
``--run-manifest`` of the run that wrote it), on the same task configs.

    python -m armlab.evals.run --config results/<exp>/config/eval.json --tasks results/<exp>/lm_eval_tasks \
        --checkpoint results/<exp>/runs/grpo/seed-1/policy.pt --arm grpo --seed 1 --out results/<exp>/evals/grpo/seed-1
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from armlab import numerics, registration  # noqa: E402
from armlab.contract import COLUMNS, TASK_PREFIX, published_name  # noqa: E402
from armlab.evals.lm_eval_tasks import evaluated_benchmarks, sampled_existing_tasks, task_name  # noqa: E402
from armlab.evals.verifiers import GRADED, TIMEOUT, UNPARSED, grade, same_answer, vote_classes  # noqa: E402
from armlab.files import (  # noqa: E402
    BadFile,
    atomic_path,
    file_sha256,
    job_environment,
    json_number,
    one_line_errors,
    read_json,
    verify_file,
    verify_manifest,
    write_manifest,
)
from armlab.registry import Registry  # noqa: E402
from armlab.spec import Eval  # noqa: E402
from armlab.spec import parse as parse_section  # noqa: E402
from armlab.training.backends.checkpoints import is_record, recorded_models  # noqa: E402


def samples_to_scores(
    samples: dict[str, list[dict]], experiment: str, arm: str, seed: int, lm_eval_tasks: dict | None = None
) -> pd.DataFrame:
    """Tidy per-item rows (the scores contract) from lm-eval's logged samples.

    Our benchmarks' samples carry their domain and item id in the doc and log ``acc`` (mean correctness
    over the item's answers) with the counts ``n_correct`` and ``n_samples``; a task of ``lm_eval_tasks``
    (config ``eval.lm_eval_tasks``: name -> domain, metric, filter) is scored by its metric under its filter,
    the mean over the item's answers when it was sampled k times (``lm_eval_tasks.sampled_existing_tasks``),
    with lm-eval's ``doc_id`` as the item.
    """
    lm_eval_tasks = lm_eval_tasks or {}
    run = {"experiment": experiment, "arm": arm, "seed": int(seed)}
    rows = []
    for task, task_samples in samples.items():
        spec = lm_eval_tasks.get(task)
        for number, sample in enumerate(task_samples):
            if spec is None:
                doc = sample.get("doc")
                if not (isinstance(doc, dict) and "domain" in doc and "id" in doc):
                    raise BadFile(
                        f"lm-eval samples of task {task}, sample {number}: no doc with the 'domain' and "
                        f"'id' that armlab's task configs put there"
                    )
                n_samples, n_correct = (_score(sample, key, task, number) for key in ("n_samples", "n_correct"))
                rows.append(
                    {
                        **run,
                        "benchmark": task[len(TASK_PREFIX) :],
                        "domain": doc["domain"],
                        "item": str(doc["id"]),
                        "score": n_correct / n_samples,
                        "n_samples": int(n_samples),
                        "n_correct": n_correct,
                    }
                )
            elif sample.get("filter", "none") == spec["filter"]:
                if "doc_id" not in sample:
                    raise BadFile(f"lm-eval samples of task {task}, sample {number}: no 'doc_id', the item id")
                score = _score(sample, spec["metric"], task, number)
                # k sampled answers (sampled_existing_tasks): the metric is their mean; one answer: a string
                answers = (sample.get("filtered_resps") or [None])[0]
                n_samples = len(answers) if isinstance(answers, list) else 1
                rows.append(
                    {
                        **run,
                        "benchmark": task,
                        "domain": spec["domain"],
                        "item": str(sample["doc_id"]),
                        "score": score,
                        "n_samples": n_samples,
                        # a sum of 0/1 verdicts, whole again (the mean times k can be off by a rounding)
                        "n_correct": round(score * n_samples, 9),
                    }
                )
    frame = pd.DataFrame(rows, columns=COLUMNS).astype({"n_samples": "int64", "n_correct": "float64"})
    return frame.sort_values(["benchmark", "item"], ignore_index=True)


ANSWERS = "answers.parquet"  # per-sample verdicts of an evaluation (docs/contracts.md)
ANSWER_COLUMNS = ["benchmark", "item", "sample", "correct", "extracted", "status", "vote"]


def answer_verdicts(samples: dict[str, list[dict]]) -> pd.DataFrame:
    """Each sampled answer's verdict on armlab's and the external benchmarks: one row per (benchmark, item, sample)
    with what the verifier extracted, whether it could grade it (``status``) and its vote for maj@k.

    Sample j of an item is the j-th of its answers (lm-eval's j-th repeat), drawn from the same stream in
    every arm of a seed; pairing the arms' verdicts by j gives the sampling variance of a difference under
    those common random numbers (analysis/samples/sampled.py). Tasks of ``eval.lm_eval_tasks`` have no rows.
    """
    rows = []
    for task, task_samples in samples.items():
        if not task.startswith(TASK_PREFIX):
            continue
        for number, sample in enumerate(task_samples):
            doc = sample["doc"]
            verdicts = [grade(doc, answer) for answer in sample_answers(sample, task, number)]
            # a verifier's timeout depends on the machine's load: graded twice, such an answer may differ
            timed_out = sample.get("timeouts", 0) or any(v.status == TIMEOUT for v in verdicts)
            if sum(v.correct for v in verdicts) != _score(sample, "n_correct", task, number) and not timed_out:
                raise BadFile(f"lm-eval samples of task {task}, sample {number}: verdicts disagree with n_correct")
            benchmark = task[len(TASK_PREFIX) :]
            votes = vote_classes(verdicts, same_answer(doc))
            rows += [
                (benchmark, str(doc["id"]), j, v.correct, v.extracted, v.status, vote)
                for j, (v, vote) in enumerate(zip(verdicts, votes))
            ]
    frame = pd.DataFrame(rows, columns=ANSWER_COLUMNS).astype(
        {"sample": "int64", "correct": "float64", "extracted": "str", "status": "str", "vote": "int64"}
    )
    return frame.sort_values(ANSWER_COLUMNS[:3], ignore_index=True)


def sample_answers(sample: dict, task: str, number: int) -> list[str]:
    """The answers of one logged sample of armlab's task configs, in sample order: its ``filtered_resps`` (the k
    answers the samples filter keeps, or the one of lm-eval's default ``take_first``)."""
    answers = sample.get("filtered_resps")
    answers = answers[0] if answers and isinstance(answers[0], list) else answers
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise BadFile(f"lm-eval samples of task {task}, sample {number}: filtered_resps {answers!r}")
    return answers


def _score(sample: dict, metric: str, task: str, number: int) -> float:
    score = json_number(sample.get(metric))
    if score is None:
        raise BadFile(
            f"lm-eval samples of task {task}, sample {number}: metric {metric!r} is "
            f"{sample.get(metric, 'missing')!r}; expected a finite number (keys: {sorted(sample)})"
        )
    return score


def evaluation_stream(config: dict, seed: int) -> str:
    """The name of a run's evaluation randomness: the experiment and the training seed, never the arm.

    Arms that share a seed share this stream, so their sampled answers are common random numbers. Runs made
    elsewhere may name the experiment whose streams to draw from (``checkpoints.streams_of``): the armlab
    experiment that trained them, whose evaluation then draws the same answers.
    """
    experiment = (config.get("checkpoints") or {}).get("streams_of", config["experiment"])
    return f"{experiment}/seed-{int(seed)}"


def torch_seed(stream: str) -> int:
    """A 31-bit torch seed derived from an evaluation stream (lm-eval's ``hf`` model samples with torch's RNG)."""
    return int.from_bytes(hashlib.blake2b(stream.encode(), digest_size=4).digest(), "little") >> 1


def _builtin_model_args(config: dict, checkpoint: Path, stream: str) -> dict:
    return {
        "checkpoint": str(checkpoint),
        "batch_size": config["eval"]["batch_size"],
        "max_gen_toks": config["eval"]["max_gen_toks"],
        "threads": config["threads"],
        "stream": stream,
    }


def _hf_model_args(config: dict, checkpoint: Path, stream: str) -> dict:
    import torch

    import armlab.training.backends.hf_char  # noqa: F401 (registers armlab_char, the exported builtin policy, with transformers)

    torch.set_num_threads(config["threads"])
    # the task configs carry max_gen_toks and the stop strings
    return {
        "pretrained": str(checkpoint),
        "batch_size": config["eval"]["batch_size"],
        "device": "cuda" if torch.cuda.is_available() else "cpu",
    }


def _vllm_model_args(config: dict, checkpoint: Path, stream: str) -> dict:
    return {
        "pretrained": str(checkpoint),
        "python": parse_section(Eval, config["eval"]).vllm_python,
        "stream": stream,
        "threads": config["threads"],
        "max_gen_toks": config["eval"]["max_gen_toks"],
    }


class LmEvalModel(NamedTuple):
    """An lm-eval model armlab evaluates checkpoints with."""

    module: str  # the module that registers it with lm-eval; only it is imported (lm-eval's hf imports transformers)
    model_args: Callable[[dict, Path, str], dict]  # its constructor arguments for (config, checkpoint, stream)
    sampling: str  # how it draws sampled answers, for the manifest
    engine: str | None = None  # the eval.engine that serves Hugging Face checkpoints with it


# lm-eval model name (the backends' `lm_eval_model`) -> its entry
MODELS = Registry(
    "lm-eval model",
    {
        "armlab-builtin": LmEvalModel(
            "armlab.evals.lm_eval_adapter",
            _builtin_model_args,
            "one Philox stream per (experiment, seed, benchmark, item, sample), independent of the arm",
        ),
        "hf": LmEvalModel(
            "lm_eval.models.huggingface",
            _hf_model_args,
            "torch's generator seeded once per (experiment, seed), independent of the arm: the same checkpoint "
            "gives the same answers, but arms do not share per-answer draws (their answers' lengths shift the stream)",
            engine="hf",
        ),
        "armlab-vllm": LmEvalModel(
            "armlab.evals.vllm_engine",
            _vllm_model_args,
            "vLLM with one seed per (experiment, seed, benchmark, item, sample), independent of the arm and of the "
            "batch",
            engine="vllm",
        ),
    },
)


def engine_model(config: dict, model: str) -> str:
    """The lm-eval model that serves a checkpoint the backend scores with ``model``: a Hugging Face checkpoint
    (``hf``) goes to the model whose ``engine`` ``eval.engine`` names; the builtin policy is always
    ``armlab-builtin``."""
    if model != "hf":
        return model
    engine = parse_section(Eval, config["eval"]).engine
    return next(name for name, entry in MODELS.items() if entry.engine == engine)


def load_model(config: dict, checkpoint: Path, model: str, stream: str = ""):
    """lm-eval's model ``model`` (its registry name) serving ``checkpoint``; ``stream`` names its sampling."""
    import importlib

    from lm_eval.api.registry import get_model

    entry = MODELS[model]
    importlib.import_module(entry.module)
    return get_model(model)(**entry.model_args(config, checkpoint, stream))


@contextmanager
def environment_in_the_manifest():
    """lm-eval's ``simple_evaluate`` without its last step, ``add_env_info``: torch's ``collect_env``, which runs
    ``pip list`` and compiler probes in subprocesses (0.75 s of a 3.4 s evaluation job). The evaluation's
    manifest.json records the environment (armlab.files.environment_record); results.json keeps lm-eval's keys."""
    from importlib import metadata

    import lm_eval.evaluator

    def versions_only(results: dict) -> None:
        results["pretty_env_info"] = "not collected: the evaluation's manifest.json records the environment"
        for name in ("lm_eval", "transformers"):
            results[f"{name}_version"] = metadata.version(name)

    collect = lm_eval.evaluator.add_env_info
    lm_eval.evaluator.add_env_info = versions_only
    try:
        yield
    finally:
        lm_eval.evaluator.add_env_info = collect


def score_checkpoint(
    config: dict,
    tasks_dir: Path,
    checkpoint: Path,
    arm: str,
    seed: int,
    model: str = "armlab-builtin",
    twins: bool = True,
) -> tuple[dict, dict, pd.DataFrame]:
    """lm-eval's results, its logged samples per task and the tidy scores of ``checkpoint`` on the benchmarks, and
    (``twins``) on their procedural twins (benchmarks ``<b>__twin``: more items of the same evaluation, their answers
    drawn from the same streams, keyed by their own benchmark and item)."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    stream = evaluation_stream(config, seed)
    lm = load_model(config, checkpoint, model, stream)
    extra = config["eval"].get("lm_eval_tasks", {})
    # lm-eval's own task configs (seconds to index) only when the config lists tasks that the folder has not
    task_manager = TaskManager(include_path=str(tasks_dir), include_defaults=False)
    if not set(extra) <= set(task_manager.all_tasks):
        task_manager = TaskManager(include_path=str(tasks_dir), include_defaults=True)
    existing: list = list(extra)
    if extra and config["eval"]["samples"] > 1:  # k answers of lm-eval's own tasks, each graded by the task
        existing = sampled_existing_tasks(list(extra), task_manager, config["eval"])
    with environment_in_the_manifest():
        results = lm_eval.simple_evaluate(
            model=lm,
            tasks=[task_name(b) for b in evaluated_benchmarks(config, twins)] + existing,
            task_manager=task_manager,
            log_samples=True,
            bootstrap_iters=0,
            # every seed lm-eval sets comes from the stream, not the arm (the builtin model keys its own streams)
            random_seed=torch_seed(stream),
            numpy_random_seed=torch_seed(stream),
            torch_random_seed=torch_seed(stream),
        )
    samples = results.pop("samples")
    return results, samples, samples_to_scores(samples, config["experiment"], arm, seed, extra)


def evaluate(
    config: dict,
    tasks_dir: Path,
    checkpoint: Path,
    arm: str,
    seed: int,
    out_dir: Path,
    model: str = "armlab-builtin",
    checkpoint_sha256: str | None = None,
) -> pd.DataFrame:
    """Score ``checkpoint`` (:func:`score_checkpoint`) and write its results, samples, scores and manifest (with
    ``checkpoint_sha256``, the sha256 a record of checkpoints made elsewhere gives it, where there is one)."""
    start = time.perf_counter()
    stream = evaluation_stream(config, seed)
    results, samples, scores = score_checkpoint(config, tasks_dir, checkpoint, arm, seed, model)
    with atomic_path(out_dir) as tmp:
        tmp.mkdir(parents=True)
        (tmp / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
        for task, task_samples in samples.items():
            with open(tmp / f"samples_{task}.jsonl", "w") as f:
                for sample in task_samples:
                    f.write(json.dumps(sample, default=str) + "\n")
        scores.to_parquet(tmp / "scores.parquet", index=False)
        answers = answer_verdicts(samples)
        answers.to_parquet(tmp / ANSWERS, index=False)
        outcomes = answer_outcomes(answers)
        write_manifest(
            tmp,
            {
                "experiment": config["experiment"],
                "arm": arm,
                "seed": seed,
                "checkpoint": str(checkpoint),
                **({} if checkpoint_sha256 is None else {"checkpoint_sha256": checkpoint_sha256}),
                "lm_eval_model": model,
                "batch_size": config["eval"]["batch_size"],  # numerics: how the answers were batched
                "sampling": {key: config["eval"][key] for key in ("samples", "temperature", "top_p", "max_gen_toks")}
                | {"stream": stream, "torch_seed": torch_seed(stream), "how": MODELS[model].sampling},
                # per benchmark, how many answers were graded, unparsed or timed out (the last two counted wrong)
                "outcomes": outcomes,
                # per benchmark, what decides its scores besides the model (the report card compares arms on it)
                "protocol": evaluation_protocol(config, tasks_dir),
                "seconds": time.perf_counter() - start,
                **job_environment(config),
                **registration.record(out_dir),
            },
            *sorted(p.name for p in tmp.iterdir()),
        )
    accuracy = scores.groupby("benchmark").score.mean()
    print(f"[eval {arm} seed {seed}] " + " ".join(f"{b} {a:.2f}" for b, a in accuracy.items()), flush=True)
    for benchmark, counts in outcomes.items():
        missed = {status: n for status, n in counts.items() if status != GRADED and n}
        if missed:
            shown = ", ".join(f"{n} {status}" for status, n in missed.items())
            print(f"[eval {arm} seed {seed}] {benchmark}: {shown} of {sum(counts.values())} answers (counted wrong)")
    return scores


class _TaskLoader(yaml.SafeLoader):
    """YAML's safe loader that reads lm-eval's ``!function module.name`` as its text."""


_TaskLoader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def evaluation_protocol(config: dict, tasks_dir: Path) -> dict[str, dict[str, str | int]]:
    """Benchmark -> what its scores were graded under besides the model: ``samples`` (answers per item),
    ``prompt_template``, ``verifier`` and ``items`` (the sha256 of the items file its lm-eval task reads, or
    the lm-eval task and version of a task of ``eval.lm_eval_tasks``). The sampling settings shared by every
    benchmark are the manifest's ``sampling``."""
    from importlib import metadata

    from armlab.evals.catalogue import prompt_template, samples_of

    external = config["eval"].get("external") or {}
    protocol: dict[str, dict[str, str | int]] = {}
    for benchmark in evaluated_benchmarks(config):
        task = yaml.load((tasks_dir / f"{benchmark}.yaml").read_text(), _TaskLoader)  # noqa: S506 (a safe loader)
        items_file = Path(task["dataset_kwargs"]["data_files"]["test"])
        verifiers = pd.read_parquet(items_file).get("verifier")
        published = published_name(benchmark)  # a twin is evaluated as its benchmark is
        protocol[benchmark] = {
            "samples": samples_of(config, published) if published in external else config["eval"]["samples"],
            "prompt_template": prompt_template(external[published]) if published in external else "{question}",
            "verifier": ", ".join(sorted(set(verifiers))) if verifiers is not None else "exact",
            "items": f"sha256:{file_sha256(items_file)}",
        }
    for name, spec in (config["eval"].get("lm_eval_tasks") or {}).items():
        protocol[name] = {
            "samples": config["eval"]["samples"],
            "prompt_template": f"lm-eval task {name}",
            "verifier": f"lm-eval metric {spec.get('metric', 'exact_match')}, filter {spec.get('filter', 'none')}",
            "items": f"lm-eval task {name} (lm-eval {metadata.version('lm_eval')})",
        }
    return protocol


def answer_outcomes(answers: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Benchmark -> how many of its answers were graded, unparsed or timed out (evals/verifiers.py)."""
    counts = answers.groupby(["benchmark", "status"]).size()
    return {
        benchmark: {status: int(counts.get((benchmark, status), 0)) for status in (GRADED, UNPARSED, TIMEOUT)}
        for benchmark in answers["benchmark"].unique()
    }


def checkpoint_to_evaluate(args: argparse.Namespace) -> Path:
    """The checkpoint the command line names; an armlab checkpoint is first checked against its manifest.

    A ``--hf-checkpoint`` is the user's base model, not an armlab output, so no manifest describes it.
    """
    if args.checkpoint:
        return verify_file(args.checkpoint)
    if args.hf_checkpoint:
        return args.hf_checkpoint
    return named_checkpoint(args.run_manifest, verify_manifest(args.run_manifest))


def named_checkpoint(run_manifest: Path, manifest: dict) -> Path:
    """The checkpoint a (verified) run manifest names: a path inside the run's directory with a recorded sha256,
    or the final one its record of checkpoints made elsewhere names, every file checked against the record."""
    if is_record(manifest):
        return recorded_models(run_manifest)[-1].path
    run_dir = run_manifest.parent.resolve()
    named = manifest.get("checkpoint")
    checkpoint = Path(named).resolve() if isinstance(named, str) else None
    if checkpoint is None or not checkpoint.is_relative_to(run_dir):
        raise BadFile(f"{run_manifest}: checkpoint: expected the path of a checkpoint inside {run_dir}, got {named!r}")
    relative = checkpoint.relative_to(run_dir).as_posix()
    if not any(name == relative or name.startswith(f"{relative}/") for name in manifest["files"]):
        raise BadFile(f"{run_manifest}: checkpoint {relative} has no sha256 in 'files', so it cannot be checked")
    return checkpoint


@one_line_errors
def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--tasks", required=True, type=Path)
    parser.add_argument(
        "--model",
        default="armlab-builtin",
        choices=sorted(MODELS),
        help="the lm-eval model that serves the checkpoint (the backend's lm_eval_model)",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--checkpoint", type=Path, help="an armlab checkpoint file (builtin policy.pt)")
    which.add_argument("--hf-checkpoint", type=Path, help="a Hugging Face checkpoint directory")
    which.add_argument("--run-manifest", type=Path, help="manifest.json of a trl/command run (names its checkpoint)")
    parser.add_argument("--arm", required=True)
    parser.add_argument("--seed", required=True, type=int)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    config = read_json(args.config, "config")
    numerics.start_job(config)
    model = engine_model(config, args.model)
    checkpoint = checkpoint_to_evaluate(args)
    # a record's sha256 of the checkpoint just checked: the workflow compares it with the record's at its next start
    sha256 = read_json(args.run_manifest, "run manifest").get("checkpoint_sha256") if args.run_manifest else None
    evaluate(config, args.tasks, checkpoint, args.arm, args.seed, args.out, model=model, checkpoint_sha256=sha256)


if __name__ == "__main__":
    main()
