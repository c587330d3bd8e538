"""lm-eval task configs for an experiment's benchmarks, on its local data.

One YAML per benchmark (task ``armlab_<benchmark>``, group-free) plus a tiny
module the YAMLs load their ``process_results`` from, which calls the task
family's exact verifier. Load them with ``TaskManager(include_path=DIR,
include_defaults=False)``; no hub is touched.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from armlab.contract import TASK_PREFIX
from armlab.training.tasks import EOS, verify

VERIFIER_MODULE = "armlab_verify"


def task_name(benchmark: str) -> str:
    return f"{TASK_PREFIX}{benchmark}"


def process_results(doc: dict, results: list) -> dict:
    """lm-eval hook: score an item's answers with the benchmark's verifier.

    ``results`` holds the one answer of the default ``take_first`` filter, or the list of k answers that the
    :data:`SAMPLES_FILTER` keeps; ``acc`` is their mean correctness (avg@k), and the counts are what pass@k needs.
    """
    answers = results[0] if isinstance(results[0], list) else results[:1]
    correct = sum(verify(doc["task"], doc["answer"], answer) for answer in answers)
    return {"acc": correct / len(answers), "n_correct": correct, "n_samples": len(answers)}


SAMPLES_FILTER = "samples"  # lm-eval filter of a task with k > 1 answers per item: keeps all k for scoring
METRICS = ("acc", "n_correct", "n_samples")


def generation_kwargs(spec: dict) -> dict:
    """lm-eval's generation arguments for the evaluation settings ``spec`` (the config's ``eval``)."""
    kwargs = {"until": [EOS], "max_gen_toks": spec["max_gen_toks"], "do_sample": spec["temperature"] > 0}
    if spec["temperature"] > 0:
        kwargs |= {"temperature": spec["temperature"], "top_p": spec["top_p"]}
    return kwargs


def task_config(benchmark: str, spec: dict, data_file: Path, sampling: dict) -> dict:
    """One benchmark's lm-eval task; ``sampling`` is the config's ``eval`` (samples, temperature, top_p, ...)."""
    config = {
        "task": task_name(benchmark),
        "dataset_path": "parquet",
        "dataset_kwargs": {"data_files": {"test": str(Path(data_file).resolve())}},
        "test_split": "test",
        "output_type": "generate_until",
        # column names, not Jinja ("{{prompt}}"): lm-eval compiles a Jinja template anew for every doc, 1.2 s of a
        # 6.8 s evaluation job; a column name is read as it is, with the same text
        "doc_to_text": "prompt",
        "doc_to_target": "answer",
        "generation_kwargs": generation_kwargs(sampling),
        "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in METRICS],
        "metadata": {"version": 1.0, "domain": spec["domain"], "benchmark": benchmark},
    }
    if sampling["samples"] > 1:
        # lm-eval's own repeats: k requests per item; take_first_k hands all k answers to process_results
        config["repeats"] = sampling["samples"]
        config["filter_list"] = [
            {"name": SAMPLES_FILTER, "filter": [{"function": "take_first_k", "k": sampling["samples"]}]}
        ]
    return config


def write_task_configs(config: dict, data_dir: Path, out_dir: Path) -> list[str]:
    """Write the task YAMLs into ``out_dir``; return the task names."""
    out_dir.mkdir(parents=True, exist_ok=True)
    verifier = "from armlab.evals.lm_eval_tasks import process_results  # noqa: F401\n"
    (out_dir / f"{VERIFIER_MODULE}.py").write_text(verifier)
    names = []
    for benchmark, spec in config["benchmarks"].items():
        text = yaml.safe_dump(
            task_config(benchmark, spec, data_dir / "eval" / f"{benchmark}.parquet", config["eval"]),
            sort_keys=False,
        )
        text += f"process_results: !function {VERIFIER_MODULE}.process_results\n"
        (out_dir / f"{benchmark}.yaml").write_text(text)
        names.append(task_name(benchmark))
    return names


def main(argv=None) -> None:
    import argparse
    import json

    from armlab.training.utils import atomic_path

    parser = argparse.ArgumentParser(description="Write lm-eval task configs for an experiment's benchmarks.")
    parser.add_argument("--config", required=True)
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    with atomic_path(args.out) as tmp:
        names = write_task_configs(json.loads(Path(args.config).read_text()), args.data, tmp)
    print(f"wrote {len(names)} lm-eval task configs to {args.out}", flush=True)


if __name__ == "__main__":
    main()
