"""lm-eval task configs for an experiment's benchmarks, on its local data.

One YAML per benchmark (task ``armlab_<benchmark>``, group-free) plus a tiny
module the YAMLs load their ``process_results`` from, which calls the task
family's exact verifier. Load them with ``TaskManager(include_path=DIR,
include_defaults=False)``; no hub is touched.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from armlab.contract import TASK_PREFIX, published_name, twin_name
from armlab.evals.verifiers import TIMEOUT, UNPARSED, grade
from armlab.training.tasks import EOS

VERIFIER_MODULE = "armlab_verify"


def task_name(benchmark: str) -> str:
    return f"{TASK_PREFIX}{benchmark}"


def evaluated_benchmarks(config: dict, twins: bool = True) -> list[str]:
    """The benchmarks an evaluation scores through armlab's task configs: the config's, those of ``eval.external``
    and (``twins``) the procedural twin ``<b>__twin`` of each that has one (``benchmarks.<b>.twin``,
    ``eval.external.<b>.twin``)."""
    external = config["eval"].get("external") or {}
    names = [*config["benchmarks"], *external]
    if not twins:
        return names
    with_twin = [b for b, spec in [*config["benchmarks"].items(), *external.items()] if spec.get("twin")]
    return names + [twin_name(b) for b in with_twin]


def process_results(doc: dict, results: list) -> dict:
    """lm-eval hook: grade an item's answers with the benchmark's verifier (evals/verifiers.py ``grade``).

    ``results`` holds the one answer of the default ``take_first`` filter, or the list of k answers that the
    :data:`SAMPLES_FILTER` keeps; ``acc`` is their mean correctness (avg@k), the counts are what pass@k needs, and
    ``unparsed`` and ``timeouts`` are the shares of answers nothing could be read from or whose grading timed out
    (both counted wrong).
    """
    answers = results[0] if isinstance(results[0], list) else results[:1]
    verdicts = [grade(doc, answer) for answer in answers]
    correct = sum(v.correct for v in verdicts)
    shares = {name: sum(v.status == status for v in verdicts) / len(verdicts) for name, status in OUTCOMES.items()}
    return {"acc": correct / len(answers), "n_correct": correct, "n_samples": len(answers), **shares}


SAMPLES_FILTER = "samples"  # lm-eval filter of a task with k > 1 answers per item: keeps all k for scoring
OUTCOMES = {"unparsed": UNPARSED, "timeouts": TIMEOUT}  # per-item shares of answers not graded, by why
METRICS = ("acc", "n_correct", "n_samples", *OUTCOMES)


def generation_kwargs(spec: dict, until: list[str] | None = None) -> dict:
    """lm-eval's generation arguments for the evaluation settings ``spec`` (the config's ``eval``): answers end at
    ``until`` (armlab's tasks: at their EOS, a newline; an external benchmark's reasoning spans lines, so it ends at
    the model's own end of sequence, which lm-eval's models add to every ``until``)."""
    kwargs = {
        "until": [EOS] if until is None else until,
        "max_gen_toks": spec["max_gen_toks"],
        "do_sample": spec["temperature"] > 0,
    }
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
        "generation_kwargs": generation_kwargs(sampling, spec.get("until")),
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


def sampled_existing_tasks(names: list[str], task_manager, spec: dict) -> list:
    """Existing lm-eval tasks (``eval.lm_eval_tasks``) evaluated with ``spec['samples']`` answers per item at the
    evaluation's temperature and top-p, each answer graded by the task's own answer extraction and metric.

    lm-eval's ``repeats`` asks for k answers; every filter pipeline of the task keeps all k (its ``take_first``
    becomes ``take_first_k``), so the task's regexes extract an answer from each; the task's own
    ``process_results`` scores each answer alone, and each metric of the item is the mean over its k answers
    (a metric that is not a number keeps the first answer's value).
    """
    import functools

    from lm_eval.filters.selection import TakeFirstFilter, TakeKFilter
    from lm_eval.tasks import get_task_dict

    k = spec["samples"]
    tasks = get_task_dict(names, task_manager)
    sampling = {"do_sample": True, "temperature": spec["temperature"], "top_p": spec["top_p"]}
    for name, task in tasks.items():
        if not hasattr(task, "config") or task.config.output_type != "generate_until":
            raise ValueError(
                f"eval.lm_eval_tasks.{name}: {k} sampled answers per item need a generate_until task (not a group "
                f"or a loglikelihood task); evaluate it with eval.samples 1"
            )
        task.config.repeats = k
        task.config.generation_kwargs = {**(task.config.generation_kwargs or {}), **sampling}
        for ensemble in task._filters:  # each step is a factory of its filter (lm-eval's build_filter_ensemble)
            kept = [f for f in ensemble.filters if getattr(f, "func", f) is not TakeFirstFilter]
            ensemble.filters = [*kept, functools.partial(TakeKFilter, k=k)]
        task.process_results = functools.partial(_each_answer, task.process_results)
    return list(tasks.values())


def _each_answer(process_results, doc: dict, results: list) -> dict:
    """A task's ``process_results`` applied to each of an item's k filtered answers; the metrics' means."""
    per_answer = [process_results(doc, [answer]) for answer in results[0]]
    numeric = (bool, int, float)
    return {
        metric: sum(p[metric] for p in per_answer) / len(per_answer)
        if all(isinstance(p[metric], numeric) for p in per_answer)
        else per_answer[0][metric]
        for metric in per_answer[0]
    }


def write_task_configs(config: dict, data_dir: Path, out_dir: Path, final_dir: Path | None = None) -> list[str]:
    """Write the task YAMLs into ``out_dir`` (with the items of ``eval.external``, read from their sources, in
    ``out_dir/external/``); return the task names. ``final_dir``: where ``out_dir`` will be moved (the YAMLs name
    the external items' files there), ``out_dir`` itself by default."""
    import pandas as pd

    from armlab.evals.catalogue import external_items, samples_of

    out_dir.mkdir(parents=True, exist_ok=True)
    verifier = "from armlab.evals.lm_eval_tasks import process_results  # noqa: F401\n"
    (out_dir / f"{VERIFIER_MODULE}.py").write_text(verifier)
    own = [b for b in evaluated_benchmarks(config) if published_name(b) in config["benchmarks"]]  # and twins
    data_files = {benchmark: data_dir / "eval" / f"{benchmark}.parquet" for benchmark in own}
    specs = {benchmark: {"domain": config["benchmarks"][published_name(benchmark)]["domain"]} for benchmark in own}
    sampling = {benchmark: config["eval"] for benchmark in specs}
    for benchmark, items in external_items(config).items():
        published = published_name(benchmark)
        (out_dir / "external").mkdir(exist_ok=True)
        pd.DataFrame(items).to_parquet(out_dir / "external" / f"{benchmark}.parquet", index=False)
        data_files[benchmark] = Path(final_dir or out_dir) / "external" / f"{benchmark}.parquet"
        specs[benchmark] = {"domain": config["eval"]["external"][published]["domain"], "until": []}
        sampling[benchmark] = {**config["eval"], "samples": samples_of(config, published)}
    names = []
    for benchmark, data_file in data_files.items():
        text = yaml.safe_dump(task_config(benchmark, specs[benchmark], data_file, sampling[benchmark]), sort_keys=False)
        text += f"process_results: !function {VERIFIER_MODULE}.process_results\n"
        (out_dir / f"{benchmark}.yaml").write_text(text)
        names.append(task_name(benchmark))
    return names


def _indexed_names(root: Path) -> set[str]:
    """The task, group and tag names that lm-eval's task YAMLs under ``root`` declare at their top level: a quick
    read of the files (half a second, where ``TaskManager`` takes seconds) that finds most names it indexes. A
    ``group:`` counts only in a group's own config (its ``task:`` a list): lm-eval does not index the old
    ``group:`` key of a task's config (scrolls)."""
    import re

    names: set[str] = set()
    scalar = re.compile(r"^(task|group|tag):[ \t]*([^\s#\[][^\s#]*)", re.M)
    listed = re.compile(r"^(task|group|tag):[ \t]*(?:\[([^\]]*)\]|\n((?:[ \t]+-[^\n]*\n?)+))", re.M)
    group_config = re.compile(r"^task:[ \t]*(?:\[|\n[ \t]+-)", re.M)
    for path in root.rglob("*.yaml"):
        text = path.read_text(encoding="utf-8", errors="replace")
        keys = {"task", "tag", "group"} if group_config.search(text) else {"task", "tag"}
        names.update(name.strip("'\"") for key, name in scalar.findall(text) if key in keys)
        for key, inline, block in listed.findall(text):
            entries = inline.split(",") if inline else [line.strip()[1:] for line in block.splitlines()]
            names.update(entry.split("#")[0].strip().strip("'\"") for entry in entries if key in keys)
    return {name for name in names if name and ":" not in name and " " not in name}


def check_existing_tasks(config: dict, source: str = "config") -> None:
    """Every task of ``eval.lm_eval_tasks`` is one lm-eval knows, before any job (one line with near misses), and,
    offline, its data are in the Hugging Face cache (:func:`_check_cached`).

    Names are looked up in lm-eval's task YAMLs first; only a name not found there costs lm-eval's own index.
    """
    from importlib import util

    from armlab.configfile import ConfigError

    wanted = sorted(config["eval"].get("lm_eval_tasks") or {})
    spec = util.find_spec("lm_eval") if wanted else None
    if spec is None or not spec.submodule_search_locations:
        return  # nothing listed, or no lm-eval here: the evaluation jobs need the eval extra anyway
    root = Path(spec.submodule_search_locations[0], "tasks")
    indexed = _indexed_names(root)
    unread = [name for name in wanted if name not in indexed]
    if unread:
        import difflib

        from lm_eval.tasks import TaskManager

        known = set(TaskManager().all_tasks)
        for name in unread:
            if name not in known:
                close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.8)
                hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
                raise ConfigError(
                    f"{source}: eval.lm_eval_tasks.{name}: lm-eval has no task, group or tag {name!r}{hint} "
                    f"(`lm_eval --tasks list` lists them)"
                )
    _check_cached(wanted, root, source)


def _offline() -> bool:
    """Whether the evaluation jobs fetch nothing from the hub (the Makefile's and the tests' HF_*_OFFLINE=1)."""
    import os

    return any(os.environ.get(key, "").lower() in ("1", "true", "yes", "on") for key in OFFLINE_VARIABLES)


OFFLINE_VARIABLES = ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")


def _task_files(root: Path) -> dict[str, list[Path]]:
    """Task or tag name -> the task YAMLs under ``root`` that declare it (a quick read, as :func:`_indexed_names`);
    a group's own config (its ``task:`` a list) under the group's name."""
    import re

    files: dict[str, list[Path]] = {}
    declared = re.compile(r"^[\"']?(?:task|tag)[\"']?:[ \t]*(?:\[([^\]]*)\]|([^\s#\[][^\s#]*))", re.M)
    for path in root.rglob("*.yaml"):
        text = path.read_text(encoding="utf-8", errors="replace")
        for inline, scalar in declared.findall(text):
            for name in inline.split(",") if inline else [scalar]:
                files.setdefault(name.strip().strip("'\""), []).append(path)
        group = re.search(r"^group:[ \t]*(\S+)", text, re.M)
        if group and re.search(r"^task:[ \t]*(?:\[|\n[ \t]+-)", text, re.M):
            files.setdefault(group[1].strip("'\""), []).append(path)
    return files


def _datasets_of(name: str, files: dict[str, list[Path]], seen: set[str]) -> list[tuple[str, str | None, dict]]:
    """(dataset_path, dataset_name, dataset_kwargs) of every task that lm-eval task, group or tag ``name`` runs, as
    far as the quick read finds their YAMLs (a group's members, recursively; includes followed)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    if name in seen:
        return []
    seen.add(name)
    found = []
    for path in files.get(name, []):
        try:
            task = load_yaml(path, resolve_func=False)
        except Exception:  # noqa: BLE001 (a YAML lm-eval's own loader may read otherwise: not ours to judge)
            continue
        members = task.get("task")
        if isinstance(members, list):
            for member in members:
                if isinstance(member, str):
                    found += _datasets_of(member, files, seen)
        elif isinstance(task.get("dataset_path"), str):
            found.append((task["dataset_path"], task.get("dataset_name"), task.get("dataset_kwargs") or {}))
    return found


def _check_cached(wanted: list[str], root: Path, source: str) -> None:
    """Offline (:func:`_offline`), the datasets of every listed task must be in the Hugging Face cache, or every
    evaluation job would fail to load them: one line naming the task and the dataset, before any job. A dataset of
    local files (``dataset_kwargs.data_files``) and a task the quick read cannot follow are left to lm-eval."""
    if not _offline():
        return
    import datasets

    from armlab.configfile import ConfigError

    files = _task_files(root)
    for name in wanted:
        for path, subset, kwargs in dict.fromkeys(
            (p, s, json.dumps(k, sort_keys=True, default=str)) for p, s, k in _datasets_of(name, files, set())
        ):
            if json.loads(kwargs).get("data_files"):
                continue
            try:
                datasets.load_dataset_builder(path, subset)
            except (ConnectionError, FileNotFoundError) as exc:
                shown = f"{path}, {subset}" if subset else path
                raise ConfigError(
                    f"{source}: eval.lm_eval_tasks.{name}: its data ({shown}) are not in the Hugging Face cache, and "
                    f"the evaluation jobs fetch nothing (HF_DATASETS_OFFLINE / HF_HUB_OFFLINE); load it once online "
                    f'(python -c "import datasets; datasets.load_dataset({path!r}, {subset!r})") '
                    f"({type(exc).__name__})"
                ) from None
            except Exception:  # noqa: BLE001,S112 (a loader script or a config datasets cannot judge offline)
                continue


def main(argv=None) -> None:
    import argparse
    import json

    from armlab.files import atomic_path

    parser = argparse.ArgumentParser(description="Write lm-eval task configs for an experiment's benchmarks.")
    parser.add_argument("--config", required=True)
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    with atomic_path(args.out) as tmp:
        names = write_task_configs(json.loads(Path(args.config).read_text()), args.data, tmp, final_dir=args.out)
    print(f"wrote {len(names)} lm-eval task configs to {args.out}", flush=True)


if __name__ == "__main__":
    main()
