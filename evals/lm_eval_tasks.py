"""lm-eval task configs for an experiment's benchmarks, on its local data.

One YAML per benchmark (task ``armlab_<benchmark>``, group-free) plus a tiny
module the YAMLs load their ``process_results`` from, which calls the task
family's exact verifier. Load them with ``TaskManager(include_path=DIR,
include_defaults=False)``; no hub is touched.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from training.tasks import EOS, verify

TASK_PREFIX = "armlab_"
VERIFIER_MODULE = "armlab_verify"


def task_name(benchmark: str) -> str:
    return f"{TASK_PREFIX}{benchmark}"


def process_results(doc: dict, results: list[str]) -> dict:
    """lm-eval hook: score one generation with the benchmark's verifier."""
    return {"acc": verify(doc["task"], doc["answer"], results[0])}


def task_config(benchmark: str, spec: dict, data_file: Path, max_gen_toks: int) -> dict:
    return {
        "task": task_name(benchmark),
        "dataset_path": "parquet",
        "dataset_kwargs": {"data_files": {"test": str(Path(data_file).resolve())}},
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "{{prompt}}",
        "doc_to_target": "{{answer}}",
        "generation_kwargs": {"until": [EOS], "max_gen_toks": max_gen_toks, "do_sample": False},
        "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}],
        "metadata": {"version": 1.0, "domain": spec["domain"], "benchmark": benchmark},
    }


def write_task_configs(config: dict, data_dir: Path, out_dir: Path) -> list[str]:
    """Write the task YAMLs into ``out_dir``; return the task names."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{VERIFIER_MODULE}.py").write_text("from evals.lm_eval_tasks import process_results  # noqa: F401\n")
    names = []
    for benchmark, spec in config["benchmarks"].items():
        text = yaml.safe_dump(
            task_config(benchmark, spec, data_dir / "eval" / f"{benchmark}.parquet", config["eval"]["max_gen_toks"]),
            sort_keys=False,
        )
        text += f"process_results: !function {VERIFIER_MODULE}.process_results\n"
        (out_dir / f"{benchmark}.yaml").write_text(text)
        names.append(task_name(benchmark))
    return names


def main(argv=None) -> None:
    import argparse
    import json

    from training.utils import atomic_path

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
