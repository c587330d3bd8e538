"""Benchmarks from outside armlab's task families: published datasets read from local files, and reasoning-gym.

An experiment lists them under ``eval.external`` (name -> spec). ``source: file`` reads a file the user
downloaded, in the published schema of a :data:`FORMATS` entry (GSM8K, MATH-500, AIME 2024/2025, AMC23,
GPQA-diamond, MMLU-Pro); ``source: reasoning_gym`` draws items from a reasoning-gym generator seeded from
(experiment, benchmark), graded by its own ``score_answer``. Nothing is fetched from a hub. Each becomes a
benchmark ``armlab_<name>`` like armlab's own, sampled ``eval.samples`` times per item, every answer graded by
the benchmark's verifier (evals/verifiers.py). A missing file, a wrong schema or an unknown format or verifier
is one line naming the file, field or row and where the dataset is published, when the config is loaded.

A new format is one :class:`BenchmarkFormat` and one :data:`FORMATS` entry.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import util
from pathlib import Path

from armlab.configfile import ConfigError, check_limit, check_template, limits_of, missing_package
from armlab.contract import is_twin, twin_name
from armlab.files import BadFile, csv_fields_within, read_json, regular_file, strict_json, text_lines
from armlab.limits import DEFAULT_LIMITS
from armlab.registry import Registry
from armlab.training.utils import derive_seed

STEP_BY_STEP = "{question}\nPlease reason step by step, and put your final answer within \\boxed{{}}."
MULTIPLE_CHOICE = (
    "Answer the following multiple choice question. The last line of your response should be of the form "
    "'Answer: $LETTER' (without quotes) where LETTER is one of {letters}. Think step by step before answering.\n\n"
    "{question}\n\n{options}"
)
LETTERS = "ABCDEFGHIJ"


def after_hashes(solution: str) -> str:
    """GSM8K's reference answer: the number after the solution's last ``####``, thousands commas removed."""
    if "####" not in solution:
        raise ValueError("no '#### <answer>' line at the end of the solution")
    return solution.rsplit("####", 1)[1].strip().replace(",", "")


@dataclass(frozen=True)
class BenchmarkFormat:
    """A published dataset's schema and how papers evaluate it (``settings``: k, temperature, top_p)."""

    published: str  # where the dataset is published, named in every error
    question: str  # field of the question text
    answer: str  # field of the reference answer (or of the correct option's text for GPQA)
    item_id: str | None  # field of the item's id; None: the row number
    verifier: str
    settings: Mapping[str, float]
    prompt: str = STEP_BY_STEP
    domain: str = "math"  # the domain `armlab benchmarks FORMAT` suggests
    reference: Callable[[str], str] = str  # the reference answer from the answer field's text
    # fields of the options: GPQA's correct one then the incorrect ones (shuffled per item), or one field holding
    # the list, whose answer field is then the correct option's letter (MMLU-Pro)
    options: tuple[str, ...] = ()

    @property
    def fields(self) -> list[str]:
        return [f for f in dict.fromkeys((self.question, self.answer, self.item_id, *self.options)) if f]


# k / temperature / top_p as RLVR papers report these sets (e.g. DeepSeek-R1 §3: temperature 0.6, top-p 0.95, avg@k
# over k samples; AIME's 30 items need k = 32 for a stable average, MATH-500's 500 need few)
R1 = {"temperature": 0.6, "top_p": 0.95, "max_gen_toks": 32768}
FORMATS: Registry[BenchmarkFormat] = Registry(
    "benchmark format",
    {
        "gsm8k": BenchmarkFormat(
            "huggingface.co/datasets/openai/gsm8k (main/test-*.parquet; or test.jsonl of openai/grade-school-math)",
            "question",
            "answer",
            None,
            "math_verify",
            {"samples": 4, **R1},
            reference=after_hashes,
        ),
        "math500": BenchmarkFormat(
            "huggingface.co/datasets/HuggingFaceH4/MATH-500 (test.jsonl)",
            "problem",
            "answer",
            "unique_id",
            "math_verify",
            {"samples": 4, **R1},
        ),
        "aime2024": BenchmarkFormat(
            "huggingface.co/datasets/HuggingFaceH4/aime_2024 (data/train-*.parquet)",
            "problem",
            "answer",
            "id",
            "math_verify",
            {"samples": 32, **R1},
        ),
        "aime2025": BenchmarkFormat(
            "huggingface.co/datasets/math-ai/aime25 (test.jsonl)",
            "problem",
            "answer",
            "id",
            "math_verify",
            {"samples": 32, **R1},
        ),  # fmt: skip
        "amc23": BenchmarkFormat(
            "huggingface.co/datasets/math-ai/amc23 (test-*.parquet)",
            "question",
            "answer",
            "id",
            "math_verify",
            {"samples": 32, **R1},
        ),  # fmt: skip
        "gpqa_diamond": BenchmarkFormat(
            "huggingface.co/datasets/Idavidrein/gpqa (gpqa_diamond.csv; gated: accept its terms first)",
            "Question",
            "Correct Answer",
            "Record ID",
            "choice",
            {"samples": 8, **R1},
            prompt=MULTIPLE_CHOICE,
            domain="science",
            options=("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"),
        ),
        "mmlu_pro": BenchmarkFormat(
            "huggingface.co/datasets/TIGER-Lab/MMLU-Pro (data/test-*.parquet; a subset: where: {category: ...})",
            "question",
            "answer",
            "question_id",
            "choice",
            {"samples": 4, **R1},
            prompt=MULTIPLE_CHOICE,
            domain="science",
            options=("options",),
        ),
    },
)


def read_rows(path: Path, limits: Mapping[str, int] = DEFAULT_LIMITS) -> list[dict]:
    """The rows of a local JSON-lines, JSON (a list), parquet or CSV file, as dicts, read within ``limits``: the file
    at most ``input_file_bytes`` (a JSON file parsed whole ``json_file_bytes``), a line or CSV field at most
    ``input_line_bytes``. ``ValueError`` naming the file and line: a file too large, a line too long, not UTF-8, not
    its format, a JSON key or CSV column twice (a reader would keep one of the two silently)."""
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".csv", ".jsonl", ".json"):
        raise ValueError(f"{path}: expected a .jsonl, .json, .parquet or .csv file")
    try:
        if suffix == ".parquet":
            return _parquet_rows(regular_file(path, "benchmark file", "input_file_bytes", limits))
        if suffix == ".csv":
            return _csv_rows(regular_file(path, "benchmark file", "input_file_bytes", limits), limits)
        if suffix == ".json" and _starts_a_list(regular_file(path, "benchmark file", "input_file_bytes", limits)):
            rows = read_json(path, "benchmark file", limits)
            if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
                raise ValueError(f"{path}: expected a JSON list of objects")
            return rows
        return _json_lines_rows(path, limits)
    except BadFile as exc:
        raise ValueError(str(exc)) from None


def _parquet_rows(path: Path) -> list[dict]:
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable parquet file ({str(exc).splitlines()[0]})") from None
    repeated = sorted({c for c in frame.columns if list(frame.columns).count(c) > 1})
    if repeated:
        raise ValueError(f"{path}: column(s) {repeated} appear more than once; expected each column once")
    return [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


def _csv_rows(path: Path, limits: Mapping[str, int]) -> list[dict]:
    """The rows of a CSV file under its header (a byte-order mark dropped), every field within the line limit."""
    with open(path, newline="", encoding="utf-8-sig") as f, csv_fields_within(limits):
        reader = csv.DictReader(f)
        try:
            header = reader.fieldnames or []
            repeated = sorted({column for column in header if header.count(column) > 1})
            if repeated:
                raise ValueError(
                    f"{path}: line 1: column(s) {repeated} appear more than once in the header; expected each once"
                )
            return list(reader)
        except csv.Error as exc:  # raised while reading the line after the last one read
            if "field larger than field limit" in str(exc):
                raise ValueError(
                    f"{path}: line {reader.line_num + 1}: a field longer than the limit of "
                    f"{limits['input_line_bytes']} bytes; set limits.input_line_bytes in the config to read it"
                ) from None
            raise ValueError(f"{path}: line {reader.line_num + 1}: not valid CSV ({exc})") from None


def _starts_a_list(path: Path) -> bool:
    """Whether a .json file holds one JSON list (else it is read as JSON lines), from its first non-blank byte."""
    with open(path, "rb") as f:
        start = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return start.startswith(b"[")


def _json_lines_rows(path: Path, limits: Mapping[str, int]) -> list[dict]:
    rows = []
    for number, line in text_lines(path, "benchmark file", limits):
        if not line.strip():
            continue
        try:
            row = strict_json(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: line {number}: not JSON ({exc.msg})") from None
        except ValueError as exc:
            raise ValueError(f"{path}: line {number}: {exc}") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}: line {number}: expected a JSON object, got {type(row).__name__}")
        rows.append(row)
    return rows


def _plain(value):
    """A parquet cell as JSON would give it (numpy arrays to lists, numpy scalars to Python)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def _text(value) -> str:
    """A cell as answer text: a whole float (AMC23's answers in parquet) without its ".0"."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def shuffled_options(benchmark: str, item: str, options: list[str]) -> tuple[list[str], int]:
    """GPQA's options in an order fixed by (benchmark, item) (the correct one first on file); its index."""
    import numpy as np

    order = np.random.default_rng(derive_seed(benchmark, item)).permutation(len(options))
    return [options[i] for i in order], int(np.flatnonzero(order == 0)[0])


def file_items(
    name: str, spec: Mapping, where: str, limits: Mapping[str, int] = DEFAULT_LIMITS, key: str = "path"
) -> list[dict]:
    """The items of a ``source: file`` benchmark: id, prompt, reference answer (one-line errors name ``where``); the
    file read within ``limits`` (:func:`read_rows`), every prompt at most ``limits["prompt_chars"]`` characters.
    ``key``: the spec's key of the file (``twin``: the file of its procedural twin)."""
    fmt = FORMATS.entry(spec.get("format"), f"{where}.format", ConfigError)
    path = Path(spec[key]).expanduser()
    if not path.exists() and not path.is_symlink():
        raise ConfigError(
            f"{where}.{key}: {path}: no such file; the {spec['format']} format reads a local copy of "
            f"{fmt.published} (nothing is fetched at run time)"
        )
    try:
        rows = read_rows(path, limits)
    except (ValueError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"{where}.{key}: {str(exc).splitlines()[0]}") from None
    renamed = dict(spec.get("fields") or {})
    for key, value in (spec.get("where") or {}).items():
        rows = [row for row in rows if row.get(renamed.get(key, key)) == value]
    if not rows:
        selection = f" with {dict(spec['where'])}" if spec.get("where") else ""
        raise ConfigError(f"{where}.{key}: {path}: no rows{selection}; expected items in the schema of {fmt.published}")
    rows = rows[: spec.get("n_items") or len(rows)]
    items, seen = [], set()
    for number, row in enumerate(rows):
        missing = [renamed.get(f, f) for f in fmt.fields if renamed.get(f, f) not in row]
        if missing:
            found = [str(field)[:40] for field in row][:12]
            raise ConfigError(
                f"{where}.{key}: {path}: row {number}: no field {missing[0]!r}; the row has {found} (the "
                f"{spec['format']} schema of {fmt.published} has {fmt.fields}; map yours with {where}.fields)"
            )
        named = {f: row[renamed.get(f, f)] for f in fmt.fields}  # under the format's field names
        item = str(named[fmt.item_id]) if fmt.item_id else f"{name}-{number:05d}"
        if item in seen:
            raise ConfigError(f"{where}.{key}: {path}: row {number}: item id {item!r} appears twice")
        seen.add(item)
        question = named[fmt.question]
        if not isinstance(question, str) or not question.strip():
            field_name = renamed.get(fmt.question, fmt.question)
            got = "empty" if isinstance(question, str) else f"{str(question)[:40]!r} (a JSON {_json_kind(question)})"
            raise ConfigError(
                f"{where}.{key}: {path}: row {number}: {field_name!r} is {got}; expected the question's text"
            )
        try:
            prompt, answer = _prompt_and_answer(fmt, prompt_template(spec), name, item, named)
        except ValueError as exc:
            raise ConfigError(f"{where}.{key}: {path}: row {number} (item {item}): {exc}") from None
        if len(prompt) > limits["prompt_chars"]:
            raise ConfigError(f"{where}.{key}: {path}: row {number} (item {item}): {_long_prompt(prompt, limits)}")
        items.append({"id": item, "prompt": prompt, "answer": answer})
    return items


def _json_kind(value) -> str:
    """What a value read from a file is, in JSON's words."""
    kinds = {bool: "boolean", int: "number", float: "number", dict: "object", list: "list", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


def _long_prompt(prompt: str, limits: Mapping[str, int]) -> str:
    return (
        f"its prompt is {len(prompt)} characters, above the limit of {limits['prompt_chars']}; set "
        f"limits.prompt_chars to allow it"
    )


def _prompt_and_answer(fmt: BenchmarkFormat, template: str, name: str, item: str, row: Mapping) -> tuple[str, str]:
    """The prompt of one row (under the format's field names) and its reference answer (a letter for choices)."""
    question = row[fmt.question].strip()
    if not fmt.options:
        answer = fmt.reference(_text(row[fmt.answer]))
        if not answer:
            raise ValueError(f"field {fmt.answer!r} is empty; expected the reference answer")
        return template.format(question=question), answer
    if len(fmt.options) == 1:  # one list field of options, the key a letter
        options = row[fmt.options[0]]
        if not isinstance(options, list) or not 2 <= len(options) <= len(LETTERS):
            raise ValueError(f"field {fmt.options[0]!r}: expected a list of 2 to {len(LETTERS)} options")
        key = str(row[fmt.answer]).strip().upper()
        if key not in LETTERS[: len(options)]:
            raise ValueError(f"field {fmt.answer!r}: {key!r} is not the letter of one of its {len(options)} options")
    else:
        options, correct = shuffled_options(name, item, [str(row[f]).strip() for f in fmt.options])
        key = LETTERS[correct]
    letters = LETTERS[: len(options)]
    listed = "\n".join(f"{letter}) {str(option).strip()}" for letter, option in zip(letters, options))
    return template.format(question=question, options=listed, letters=", ".join(letters)), key


def reasoning_gym_items(
    name: str, spec: Mapping, experiment: str, where: str, limits: Mapping[str, int] = DEFAULT_LIMITS
) -> tuple[list[dict], dict]:
    """Items of a ``source: reasoning_gym`` benchmark: dataset ``spec['dataset']`` with ``spec['config']``, its seed
    drawn from (experiment, benchmark); each item carries what rebuilds it for its verifier. A prompt above
    ``limits["prompt_chars"]`` characters is one line naming the item."""
    from armlab.training.reasoning_gym_tasks import benchmark_entries

    entries, rebuild = benchmark_entries(name, spec, experiment, where)
    template = prompt_template(spec)
    items = []
    for index, entry in enumerate(entries):
        item = f"{name}-{index:05d}"
        prompt = template.format(question=entry["question"])
        if len(prompt) > limits["prompt_chars"]:
            raise ConfigError(f"{where}: item {item}: {_long_prompt(prompt, limits)}")
        items.append({"id": item, "prompt": prompt, "answer": str(entry["answer"]), "rg_index": index})
    return items, rebuild


def external_items(config: Mapping, source: str = "config") -> dict[str, list[dict]]:
    """Every ``eval.external`` benchmark's items as armlab evaluation items (id, benchmark, domain, task,
    verifier, prompt, answer; reasoning-gym's rebuild keys); errors are one line naming ``source`` and the key."""
    from armlab.evals.verifiers import VERIFIERS

    out = {}
    limits = limits_of(source, dict(config))
    for name, spec in (config["eval"].get("external") or {}).items():
        where = f"{source}: eval.external.{name}"
        rebuild: dict = {}  # what rebuilds a reasoning-gym item for its verifier
        if spec["source"] == "file":
            for key in ("format", "path"):
                if key not in spec:
                    raise ConfigError(f"{where}: source file needs {key!r} (formats: {sorted(FORMATS)})")
            fmt = FORMATS.entry(spec["format"], f"{where}.format", ConfigError)
            # {options} and {letters} only where the format has options to list
            fields = ("question", "options", "letters") if fmt.options else ("question",)
            check_template(spec.get("prompt"), f"{where}.prompt", fields, limits["prompt_chars"])
            items = file_items(name, spec, where, limits)
            twin = _file_twin(name, spec, where, limits, items)
            default = fmt.verifier
        else:
            check_template(spec.get("prompt"), f"{where}.prompt", longest=limits["prompt_chars"])
            if "dataset" not in spec:
                raise ConfigError(f"{where}: source reasoning_gym needs 'dataset' (a reasoning-gym dataset name)")
            items, rebuild = reasoning_gym_items(name, spec, config["experiment"], where, limits)
            twin = _reasoning_gym_twin(name, spec, config["experiment"], where, limits, items)
            default = "reasoning_gym"
        verifier = spec.get("verifier", default)
        checker = VERIFIERS.entry(verifier, f"{where}.verifier", ConfigError)
        if checker.requirement and util.find_spec(checker.requirement.replace("-", "_")) is None:
            raise missing_package(checker.requirement, checker.extra, f"{where}.verifier", f"verifier {verifier!r}")
        for benchmark, (its_items, its_rebuild) in {name: (items, rebuild), **twin}.items():
            for item in its_items:
                problem = checker.reference_problem(item["answer"])
                if problem:
                    key = f"{where}.twin" if is_twin(benchmark) else where
                    raise ConfigError(f"{key}: item {item['id']}: reference answer {item['answer']!r}: {problem}")
            out[benchmark] = [
                {
                    **item,
                    "id": str(item["id"]),
                    "benchmark": benchmark,
                    "domain": spec["domain"],
                    "task": "",
                    "verifier": verifier,
                    **its_rebuild,
                }
                for item in its_items
            ]
    return out


def _fresh(items: list[dict], published: list[dict], where: str) -> list[dict]:
    """A twin's items, each checked to be fresh: none has the prompt of one of the benchmark's ``published`` items."""
    prompts = {item["prompt"]: item["id"] for item in published}
    for item in items:
        if item["prompt"] in prompts:
            raise ConfigError(
                f"{where}: item {item['id']} has the prompt of the benchmark's item {prompts[item['prompt']]}; a twin "
                f"holds fresh items of the same kind, none of the benchmark's own"
            )
    return items


def _file_twin(name: str, spec: Mapping, where: str, limits: Mapping[str, int], published: list[dict]) -> dict:
    """``{<name>__twin: (items, {})}`` of a file benchmark's ``twin`` (a file in the benchmark's format, fields and
    ``where``, read like it), or ``{}`` without one."""
    if not spec.get("twin"):
        return {}
    if not isinstance(spec["twin"], str):
        raise ConfigError(f"{where}.twin: expected the path of a file of fresh items in the {spec['format']} format")
    items = file_items(twin_name(name), spec, where, limits, key="twin")
    return {twin_name(name): (_fresh(items, published, f"{where}.twin"), {})}


def _reasoning_gym_twin(
    name: str, spec: Mapping, experiment: str, where: str, limits: Mapping[str, int], published: list[dict]
) -> dict:
    """``{<name>__twin: (items, rebuild keys)}`` of a reasoning-gym benchmark's ``twin: true``: another draw of its
    dataset and config, seeded from (experiment, ``<name>__twin``), without the draws whose question is one of the
    benchmark's, or ``{}`` without one."""
    if not spec.get("twin"):
        return {}
    if spec["twin"] is not True:
        raise ConfigError(f"{where}.twin: expected true (another draw of the dataset); a file twin is for source file")
    items, rebuild = reasoning_gym_items(twin_name(name), spec, experiment, f"{where}.twin", limits)
    asked = {item["prompt"] for item in published}
    fresh = [item for item in items if item["prompt"] not in asked]
    if 2 * len(fresh) < len(items):
        raise ConfigError(
            f"{where}.twin: {len(items) - len(fresh)} of its {len(items)} draws repeat a question of the benchmark; "
            f"the dataset's config leaves too few questions for a twin of fresh ones"
        )
    return {twin_name(name): (fresh, rebuild)}


def prompt_template(spec: Mapping) -> str:
    """The prompt template of one ``eval.external`` benchmark: its own ``prompt``, else its format's (a
    reasoning-gym benchmark's default is the bare question)."""
    default = FORMATS[spec["format"]].prompt if spec["source"] == "file" else "{question}"
    return str(spec.get("prompt", default))


def samples_of(config: Mapping, name: str) -> int:
    """The answers per item of external benchmark ``name``: its own ``samples``, else ``eval.samples``."""
    return int(config["eval"]["external"][name].get("samples", config["eval"]["samples"]))


def _check_samples(config: Mapping, source: str, name: str) -> None:
    """A benchmark's own answers per item: sampled (temperature > 0) when above 1, within ``limits.samples``, and
    at least every k of pass@k and maj@k."""
    samples, key = samples_of(config, name), f"eval.external.{name}.samples"
    if samples > 1 and config["eval"]["temperature"] == 0:
        raise ConfigError(f"{source}: {key}: {samples} answers at eval.temperature 0 would be copies of the greedy one")
    check_limit(source, key, samples, limits_of(source, dict(config)), "samples")
    for measure in ("pass_k", "maj_k"):
        above = [k for k in config["eval"].get(measure) or [] if k > samples]
        if above:
            raise ConfigError(
                f"{source}: {key}: {samples} answers per item, but eval.{measure} asks for {above}; "
                f"{measure.replace('_', '@')} needs at least k answers per item"
            )


def check_external(config: Mapping, source: str = "config", character_level: bool = False) -> None:
    """The external benchmarks can supply their items (files read, schemas and verifiers checked), and their names
    are not taken by a benchmark or an lm-eval task: before any job. ``character_level``: a model of armlab's
    characters answers them (the builtin policy, its export, TRL's tiny Qwen2), so every prompt must be in its
    characters and fit its context (``model.max_len``) with ``eval.max_gen_toks`` new ones."""
    from armlab.training.reasoning_gym_tasks import external_key
    from armlab.training.tasks import character_prompt_problem

    external = config["eval"].get("external") or {}
    for name in external:
        _check_samples(config, source, name)
    for section in ("benchmarks", "eval.lm_eval_tasks"):
        names = config["benchmarks"] if section == "benchmarks" else config["eval"].get("lm_eval_tasks") or {}
        taken = sorted(set(external) & set(names))
        if taken:
            raise ConfigError(f"{source}: eval.external.{taken[0]}: also in {section}; benchmark names are unique")
    read = external_items(config, source)
    if not character_level:
        return
    for name, items in read.items():
        for item in items:
            max_len, new = config["model"]["max_len"], config["eval"]["max_gen_toks"]
            problem = character_prompt_problem(item["prompt"], max_len, new, "eval.max_gen_toks")
            if problem:
                raise ConfigError(
                    f"{source}: {external_key(name)}: item {item['id']}: {problem}; evaluate a Hugging Face "
                    f"checkpoint with its own tokenizer (trl.model) or give a prompt template"
                )
