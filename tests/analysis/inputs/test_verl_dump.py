"""verl validation dumps as tidy scores: the same table as lm-eval's log of the same answers, and errors that
name the file and line.

The dumps are written here as verl's ``RayPPOTrainer._dump_generations`` (verl/trainer/ppo/ray_trainer.py)
writes them: ``<trainer.validation_data_dir>/<global step>.jsonl``, one JSON object a line with ``input``,
``output``, ``gts``, ``score`` and ``step``, then the reward's extra fields (``reward``, here ``acc`` and
``data_source``), the ``val_kwargs.n`` answers of a prompt on consecutive lines.
"""

import hashlib
import json
import os

import numpy as np
import pandas as pd
import pytest

from armlab.analysis import inputs, pipeline
from armlab.analysis.config import parse_config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs import validation
from armlab.contract import COLUMNS

BENCHMARKS = {"add": "math", "boolexpr": "logic"}
SOURCES = {"lighteval/add": "add", "bool-logic": "boolexpr"}
RUNS = [(arm, seed) for arm in ("grpo", "rloo") for seed in (1, 2)]
STEPS = (0, 50, 100)  # verl validates before training (step 0) and every test_freq steps
K = 4  # actor_rollout_ref.rollout.val_kwargs.n
DOCS = 3
STAMP = "2025-01-02T03-04-05.678901"


def _prompt(benchmark, doc_id):
    return f"<|user|>{benchmark} question {doc_id}: what is {doc_id} + {doc_id}?<|assistant|>"


def _correctness(arm, seed, step):
    """(benchmark, doc_id) -> the 0/1 correctness of its K answers in one run's validation at one step."""
    rng = np.random.default_rng([sum(map(ord, arm)), seed, step])
    return {(b, d): rng.integers(0, 2, K) for b in BENCHMARKS for d in range(DOCS)}


def _write_verl(directory, step, right, source=True):
    """One validation dump as verl writes it (lists per field, then one JSON object a line)."""
    inputs, outputs, gts, scores, data_sources = [], [], [], [], []
    by_benchmark = {b: s for s, b in SOURCES.items()}
    for (benchmark, doc_id), answers in right.items():
        for j, r in enumerate(answers):
            inputs.append(_prompt(benchmark, doc_id))
            outputs.append(f"answer {j}: {'right' if r else 'wrong'}")
            gts.append(str(2 * doc_id))
            scores.append(float(r))
            data_sources.append(by_benchmark[benchmark])
    n = len(inputs)
    base = {"input": inputs, "output": outputs, "gts": gts, "score": scores, "step": [step] * n}
    extra = {"reward": scores, "acc": [bool(s) for s in scores]} | ({"data_source": data_sources} if source else {})
    base |= extra
    directory.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({k: v[i] for k, v in base.items()}, ensure_ascii=False) for i in range(n)]
    (directory / f"{step}.jsonl").write_text("\n".join(lines) + "\n")


def _write_lmeval(directory, right):
    """The same answers as lm-eval's log of a task with ``repeats: K`` and filter take_first_k."""
    out = directory / "org__model"
    out.mkdir(parents=True)
    results = {}
    for benchmark in BENCHMARKS:
        lines = []
        for doc_id in range(DOCS):
            answers = right[(benchmark, doc_id)]
            texts = [f"answer {j}: {'right' if r else 'wrong'}" for j, r in enumerate(answers)]
            record = {
                "doc_id": doc_id,
                "doc": {"question": _prompt(benchmark, doc_id)},
                "target": str(2 * doc_id),
                "resps": [texts],
                "filtered_resps": [texts],
                "filter": "take_first_k",
                "metrics": ["exact_match"],
                "exact_match": float(np.mean(answers)),
            }
            lines.append(json.dumps(record) + "\n")
        (out / f"samples_{benchmark}_{STAMP}.jsonl").write_text("".join(lines))
        mean = float(np.mean([np.mean(right[(benchmark, d)]) for d in range(DOCS)]))
        results[benchmark] = {"exact_match,take_first_k": mean}
    (out / f"results_{STAMP}.json").write_text(json.dumps({"results": results}))


@pytest.fixture
def tree(tmp_path):
    """verl dumps under tmp_path/verl/<arm>/seed-<seed>/val, lm-eval logs of step 100 under tmp_path/lmeval."""
    for arm, seed in RUNS:
        for step in STEPS:
            _write_verl(tmp_path / "verl" / arm / f"seed-{seed}" / "val", step, _correctness(arm, seed, step))
        _write_lmeval(tmp_path / "lmeval" / arm / f"seed-{seed}", _correctness(arm, seed, 100))
    return tmp_path


def _runs(root, kind="verl"):
    return [(a, s, root / kind / a / f"seed-{s}" / ("val" if kind == "verl" else "")) for a, s in RUNS]


def _verl(root, step=100, **kwargs):
    return inputs.verl.verl_to_tidy(
        _runs(root), experiment="demo", benchmarks=BENCHMARKS, step=step, **({"sources": SOURCES} | kwargs)
    )


def _item(benchmark, doc_id):
    return hashlib.sha256(_prompt(benchmark, doc_id).encode("utf-8")).hexdigest()[:16]


def _canonical(frame):
    return frame.sort_values(["arm", "seed", "benchmark", "item"]).reset_index(drop=True)


def test_a_verl_dump_is_the_same_table_as_lm_evals_log_of_the_same_answers(tree):
    verl = _verl(tree)
    lmeval = inputs.lmeval.lmeval_to_tidy(
        _runs(tree, "lmeval"), experiment="demo", benchmarks=BENCHMARKS, metric="exact_match,take_first_k"
    )
    assert list(verl.columns) == COLUMNS and len(verl) == len(RUNS) * len(BENCHMARKS) * DOCS
    doc_of = {_item(b, d): str(d) for b in BENCHMARKS for d in range(DOCS)}
    assert set(verl["item"]) == set(doc_of)
    mapped = verl.assign(item=verl["item"].map(doc_of))
    pd.testing.assert_frame_equal(_canonical(mapped), _canonical(lmeval))
    assert (verl["n_samples"] == K).all() and verl["n_samples"].dtype == np.int64
    assert 0 < verl["score"].mean() < 1 and set(verl["n_correct"]) <= set(map(float, range(K + 1)))
    # it validates, and the validated table is the same
    frame, _ = validation.validate_scores(verl, experiment="demo", comparisons=[], benchmarks=BENCHMARKS)
    pd.testing.assert_frame_equal(_canonical(frame), _canonical(verl))


def test_rows_name_the_first_line_of_their_prompt(tree):
    frame = _verl(tree)
    first = frame[(frame["arm"] == "grpo") & (frame["seed"] == 1) & (frame["item"] == _item("add", 1))]
    assert first.index.tolist() == [f"{tree / 'verl/grpo/seed-1/val/100.jsonl'} line {K + 1}"]


def test_step_last_is_the_largest_step_of_each_run(tree):
    last = _verl(tree, step="last")
    pd.testing.assert_frame_equal(last, _verl(tree, step=100))  # 100 > 50 although "100" < "50" as text
    earlier = _verl(tree, step=50)
    assert not earlier["n_correct"].equals(last["n_correct"])
    right = _correctness("rloo", 2, 50)
    row = earlier[(earlier["arm"] == "rloo") & (earlier["seed"] == 2) & (earlier["item"] == _item("boolexpr", 2))]
    assert row["n_correct"].tolist() == [float(right[("boolexpr", 2)].sum())]
    (tree / "verl/grpo/seed-1/val/100.jsonl").unlink()
    last = _verl(tree, step="last")
    assert set(last[(last["arm"] == "grpo") & (last["seed"] == 1)].index.str.contains("/50.jsonl")) == {True}


def test_a_dump_of_one_benchmark_without_data_sources(tmp_path):
    right = {k: v for k, v in _correctness("grpo", 1, 5).items() if k[0] == "add"}
    _write_verl(tmp_path / "run", 5, right, source=False)
    frame = inputs.verl.verl_to_tidy(
        [("grpo", 1, tmp_path / "run")], experiment="demo", benchmarks=BENCHMARKS, step=5, benchmark="add"
    )
    assert set(frame["benchmark"]) == {"add"} and set(frame["domain"]) == {"math"} and len(frame) == DOCS
    assert frame["n_correct"].tolist() == [
        float(right[("add", d)].sum()) for d in sorted(range(DOCS), key=lambda d: _item("add", d))
    ]


def test_a_config_of_kind_verl_runs_the_analysis(tree, monkeypatch):
    monkeypatch.chdir(tree)
    config = _config(pattern="verl/{arm}/seed-{seed}/val", step="last", sources=SOURCES)
    scores, source = inputs.load_scores(config)
    assert source.startswith("verl validation dumps (step last) of 4 run(s)")
    assert "verl/grpo/seed-1/val/100.jsonl line 1" in scores.index  # relative, as the pattern
    pd.testing.assert_frame_equal(scores.reset_index(drop=True), _verl(tree).reset_index(drop=True))
    result = pipeline.run_analysis(config, scores, source)
    assert set(result.comparisons["arm"]) == {"rloo"}


def _config(**spec):
    return parse_config(
        {
            "experiment": "demo",
            "comparisons": [{"family": "f", "reference": "grpo", "arms": ["rloo"]}],
            "benchmarks": {b: {"domain": d} for b, d in BENCHMARKS.items()},
            "input": {"kind": "verl", **spec},
            "analysis": {"resamples": 200},
        },
        source="verl.yaml",
    )


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            {"pattern": "p/{arm}/{seed}", "step": 1, "sources": SOURCES, "metric": "x"},
            "unknown key(s) ['metric'] for kind verl",
        ),
        ({"pattern": "p/{arm}/{seed}", "sources": SOURCES}, "kind verl needs 'step'"),
        ({"step": 1, "sources": SOURCES}, "one of 'pattern', 'manifest'"),
        ({"pattern": "p/{arm}/{seed}", "step": 1}, "one of 'sources' (data source -> benchmark), 'benchmark'"),
        (
            {"pattern": "p/{arm}/{seed}", "step": 1, "sources": SOURCES, "benchmark": "add"},
            "one of 'sources' (data source -> benchmark), 'benchmark'",
        ),
        (
            {"pattern": "p/{arm}/{seed}", "step": 1, "sources": {"lighteval/add": "mul"}},
            "input.sources: benchmark(s) ['mul'] not in the config's benchmarks ['add', 'boolexpr']",
        ),
        (
            {"pattern": "p/{arm}/{seed}", "step": 1, "sources": ["lighteval/add"]},
            "input.sources: expected a mapping data source -> benchmark",
        ),
        ({"pattern": "p/{arm}/{seed}", "step": 1, "benchmark": "mul"}, "input.benchmark: 'mul' is not in the config"),
        ({"pattern": "p/{arm}/{seed}", "step": "first", "benchmark": "add"}, "input.step: expected a training step"),
        ({"pattern": "p/{arm}/{seed}", "step": -5, "benchmark": "add"}, "input.step: expected a training step"),
        ({"pattern": "p/{arm}/{seed}", "step": 1, "benchmark": "add", "source_field": 3}, "input.source_field"),
    ],
)
def test_a_bad_verl_config_names_the_config_and_key_before_reading_files(tmp_path, monkeypatch, spec, message):
    monkeypatch.chdir(tmp_path)  # no directory matches the pattern: the config is refused first
    with pytest.raises(AnalysisInputError) as err:
        inputs.load_scores(_config(**spec))
    assert str(err.value).startswith("verl.yaml: input") and message in str(err.value), str(err.value)


def _lines(path, change):
    path.write_text("\n".join(change(path.read_text().splitlines())) + "\n")


def _edit(line, **changes):
    record = json.loads(line)
    for key, value in changes.items():
        if value is None:
            del record[key]
        else:
            record[key] = value
    return json.dumps(record)


DUMP = "verl/rloo/seed-2/val/100.jsonl"


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (
            lambda p: p.unlink(),
            "verl/rloo/seed-2/val/100.jsonl: not found; expected the validation dump of step 100 "
            "(steps found: [0, 50])",
        ),
        (lambda p: _lines(p, lambda ls: [*ls[:3], ls[3][:30], *ls[4:]]), f"{DUMP} line 4: not valid JSON"),
        (lambda p: _lines(p, lambda ls: ls[:-1] + [ls[-1][:-9]]), f"{DUMP} line {2 * DOCS * K}: not valid JSON"),
        (
            lambda p: _lines(p, lambda ls: [*ls[:1], "[1, 2]", *ls[2:]]),
            f"{DUMP} line 2: expected a JSON object (one answer of verl's validation dump)",
        ),
        (
            lambda p: _lines(p, lambda ls: [*ls[:4], _edit(ls[4], output=None), *ls[5:]]),
            f"{DUMP} line 5: no ['output']; expected verl's validation fields input, output, score",
        ),
        (
            lambda p: _lines(p, lambda ls: [_edit(ls[0], input=None, score=None), *ls[1:]]),
            f"{DUMP} line 1: no ['input', 'score']",
        ),
        (lambda p: _lines(p, lambda ls: [_edit(ls[0], input=7), *ls[1:]]), f"{DUMP} line 1: input is 7"),
        (
            lambda p: _lines(p, lambda ls: [*ls[:6], _edit(ls[6], score="high"), *ls[7:]]),
            f"{DUMP} line 7: score 'high' is not a finite number; the scores must be per-answer correctness",
        ),
        (
            lambda p: _lines(p, lambda ls: [*ls[:6], _edit(ls[6], score=float("nan")), *ls[7:]]),
            f"{DUMP} line 7: score nan is not a finite number",
        ),
        (
            lambda p: _lines(p, lambda ls: [*ls[:2], _edit(ls[2], score=-1.0), *ls[3:]]),
            f"{DUMP} line 3: score -1.0 is outside [0, 1]; the scores must be per-answer correctness in [0, 1] "
            "for this table",
        ),
        (
            lambda p: _lines(p, lambda ls: [*ls[:2], _edit(ls[2], score=1.1), *ls[3:]]),
            f"{DUMP} line 3: score 1.1 is outside [0, 1]",
        ),
        (
            lambda p: _lines(p, lambda ls: [*ls[:8], _edit(ls[8], step=50), *ls[9:]]),
            f"{DUMP} line 9: step 50, but the file is the dump of step 100",
        ),
        (
            lambda p: _lines(p, lambda ls: [*ls[:9], _edit(ls[9], data_source="openai/gsm8k"), *ls[10:]]),
            f"{DUMP} line 10: data source 'openai/gsm8k' is not in input.sources ['bool-logic', 'lighteval/add']",
        ),
        (
            lambda p: _lines(p, lambda ls: [*ls[:9], _edit(ls[9], data_source=None), *ls[10:]]),
            f"{DUMP} line 10: no 'data_source'; input.sources maps a line's data source to a benchmark",
        ),
        (lambda p: p.write_text("\n"), f"{DUMP}: no validation lines"),
        (lambda p: p.write_bytes(b"\xff\xfe{}\n"), f"{DUMP}: not UTF-8 text"),
    ],
)
def test_a_bad_verl_dump_names_the_file_and_line(tree, corrupt, message):
    corrupt(tree / DUMP)
    with pytest.raises(AnalysisInputError) as err:
        _verl(tree)
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_missing_runs_and_steps_name_the_directory(tree, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(AnalysisInputError, match=r"empty: no <step>.jsonl \(input.step: last\)"):
        inputs.verl.verl_to_tidy(
            [("grpo", 1, empty)], experiment="demo", benchmarks=BENCHMARKS, step="last", sources=SOURCES
        )
    with pytest.raises(AnalysisInputError, match=r"absent: not found; expected verl's trainer.validation_data_dir"):
        inputs.verl.verl_to_tidy(
            [("grpo", 1, tmp_path / "absent")], experiment="demo", benchmarks=BENCHMARKS, step=1, sources=SOURCES
        )
    with pytest.raises(AnalysisInputError, match=r"7.jsonl: not found; .* \(steps found: \[0, 50, 100\]\)"):
        _verl(tree, step=7)


def test_a_dump_named_for_one_benchmark_with_two_data_sources_is_an_error(tree):
    with pytest.raises(AnalysisInputError) as err:
        _verl(tree, sources=None, benchmark="add")
    text = str(err.value)
    assert f"{tree / 'verl/grpo/seed-1/val/100.jsonl'} line {DOCS * K + 1}" in text
    assert "data sources ['bool-logic', 'lighteval/add'] in one dump" in text and "input.sources" in text


def test_a_configurable_source_field(tree):
    for arm, seed in RUNS:
        path = tree / "verl" / arm / f"seed-{seed}" / "val" / "100.jsonl"
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        for record in lines:
            record["dataset"] = record.pop("data_source")
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(AnalysisInputError, match="line 1: no 'data_source'"):
        _verl(tree)
    assert len(_verl(tree, source_field="dataset")) == len(RUNS) * len(BENCHMARKS) * DOCS


def test_a_configurable_score_field_reads_the_correctness_beside_a_shaped_reward(tree):
    """verl's ``score`` is the reward; a reward function that adds a format bonus returns the bare correctness
    as an extra field (``acc``), which ``score_field`` reads."""
    expected = _verl(tree)
    for arm, seed in RUNS:
        path = tree / "verl" / arm / f"seed-{seed}" / "val" / "100.jsonl"
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        for record in lines:
            record["acc"], record["score"] = record["score"], record["score"] + 0.5  # a format bonus
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(AnalysisInputError, match=r"line \d+: score 1\.5 is outside \[0, 1\].*input\.score_field"):
        _verl(tree)
    pd.testing.assert_frame_equal(_canonical(_verl(tree, score_field="acc")), _canonical(expected))


def _fifo(path):
    path.unlink()
    os.mkfifo(path)


def _directory(path):
    path.unlink()
    path.mkdir()


def _dev_zero(path):
    path.unlink()
    path.symlink_to("/dev/zero")


LMEVAL_SAMPLES = "lmeval/rloo/seed-2"
LMEVAL_METRIC = "exact_match,take_first_k"


@pytest.mark.parametrize(
    "replace, kind", [(_fifo, "a FIFO (named pipe)"), (_directory, "a directory"), (_dev_zero, "a device")]
)
@pytest.mark.parametrize("reader", ["verl", "lmeval samples", "lmeval results"])
def test_a_dump_that_is_not_a_regular_file_is_refused_in_one_line(tree, replace, kind, reader):
    """On 5f41e59 a FIFO blocked the analysis forever, a link to /dev/zero grew the process to 23 GB, a directory
    gave a traceback."""
    if reader == "verl":
        target, read = tree / DUMP, lambda: _verl(tree)
    else:
        pattern = "samples_add_*.jsonl" if reader == "lmeval samples" else "results_*.json"
        (target,) = (tree / LMEVAL_SAMPLES).rglob(pattern)
        runs = [(a, s, tree / "lmeval" / a / f"seed-{s}") for a, s in RUNS]

        def read():
            return inputs.lmeval.lmeval_to_tidy(runs, experiment="demo", benchmarks=BENCHMARKS, metric=LMEVAL_METRIC)

    replace(target)
    with pytest.raises(AnalysisInputError) as err:
        read()
    assert str(err.value).startswith(f"{target}: ") and f"is {kind}, not a regular file" in str(err.value)
    assert "\n" not in str(err.value)


def test_two_dumps_of_one_step_are_refused_not_one_silently_ignored(tree):
    """On 5f41e59 0010.jsonl beside 10.jsonl: one was read, the other ignored without a word."""
    val = tree / "verl" / "grpo" / "seed-1" / "val"
    (val / "0100.jsonl").write_bytes((val / "100.jsonl").read_bytes())
    with pytest.raises(AnalysisInputError, match=r"val: two validation dumps of step 100 \(0100.jsonl and 100.jsonl\)"):
        _verl(tree)
