"""Hostile results files: every corrupt, truncated or ambiguous input names itself, early, and touches nothing.

Readers: tidy scores (parquet, CSV, with or without sample counts), wide CSVs, lm-eval results JSON and
samples JSONL (found by pattern or by a manifest CSV), verl validation dumps, the analysis directory and
run directories the report reads, and the files the evaluation job reads. The harness (one error line or
a row listing, no traceback, before the expensive step, the temporary folder unchanged) is the one of
tests/workflows/test_hostile_outputs.py.
"""

import json
import os
import resource
import time

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, report_build
from hostile import FAST, FIXTURE, assert_refused, eval_argv, report

from armlab import cli, files

BUILD = report_build()
DATAFLEX_CONFIG = REPO / "config" / "experiments" / "dataflex_rl_released.yaml"
STAMP = "2026-01-02T03-04-05.678901"  # tests/fixtures/report/build.py's lm-eval timestamp


def _lines(path, change):
    """Rewrite a text file line by line: ``change(lines)`` returns the new lines."""
    path.write_text("\n".join(change(path.read_text().splitlines())) + "\n")


def _set_cell(lines, row, column, value):
    header = lines[0].split(",")
    cells = lines[row].split(",")
    cells[header.index(column)] = value
    return [*lines[:row], ",".join(cells), *lines[row + 1 :]]


# ----------------------------------------------------------------------------- tidy scores (--scores)


def _tidy_csv(root):
    results = BUILD["write_experiment"](root)
    path = root / "scores.csv"
    pd.read_parquet(results / "scores.parquet").to_csv(path, index=False)
    return path


def _uint64_seeds(root):
    path = root / "scores.parquet"
    frame = pd.read_parquet(BUILD["write_experiment"](root) / "scores.parquet")
    frame["seed"] = frame["seed"].astype("uint64")
    frame.loc[3, "seed"] = 2**63 + 5
    frame.to_parquet(path, index=False)
    return path


def _csv_with(change, counts=False):
    """The fixture's tidy CSV changed by ``change``; with ``counts`` the count columns of one sample first."""

    def make(root):
        path = _tidy_csv(root)
        if counts:
            _lines(path, _one_sample)
        _lines(path, change)
        return path

    return make


def _one_sample(lines):
    score = lines[0].split(",").index("score")
    return [lines[0] + ",n_samples,n_correct"] + [f"{line},1,{line.split(',')[score]}" for line in lines[1:]]


def _k_samples(lines, row, n_samples, n_correct, score=None):
    lines = _set_cell(_set_cell(lines, row, "n_samples", n_samples), row, "n_correct", n_correct)
    return lines if score is None else _set_cell(lines, row, "score", score)


def _bytes(name, data):
    def make(root):
        (root / name).write_bytes(data)
        return root / name

    return make


TIDY_CASES = {
    "a .parquet that is not parquet": (
        _bytes("scores.parquet", b"experiment,arm\n"),
        ["scores.parquet: not a parquet file"],
        True,
    ),
    "an unknown suffix": (_bytes("scores.tsv", b"experiment\tarm\n"), ["unknown suffix '.tsv'"], True),
    "a header with a column twice": (
        _csv_with(lambda ls: [ls[0] + ",score"] + [line + ",0.5" for line in ls[1:]]),
        ["scores.csv line 1: column(s) ['score'] appear more than once"],
        True,
    ),
    "a 52% cell": (
        _csv_with(lambda ls: _set_cell(ls, 3, "score", "52%")),
        ["score: expected numbers", "scores.csv line 4", "score='52%'"],
        False,
    ),
    "a seed beyond int64": (
        _csv_with(lambda ls: _set_cell(ls, 5, "seed", "99999999999999999999")),
        ["seed: expected integers within int64", "scores.csv line 6"],
        False,
    ),
    "a seed of a billion digits": (
        _csv_with(lambda ls: _set_cell(ls, 2, "seed", "1e999999999")),
        ["seed: expected integers within int64", "scores.csv line 3"],
        False,
    ),
    "a uint64 seed beyond int64": (_uint64_seeds, ["seed: expected integers within int64", f"seed={2**63 + 5}"], False),
    "a row with a field too many": (
        _csv_with(lambda ls: [*ls[:4], ls[4] + ",extra", *ls[5:]]),
        ["scores.csv: not valid CSV", "line 5", "expected a CSV scores file"],
        True,
    ),
    "a file that is not UTF-8": (
        _bytes("scores.csv", b"experiment,arm\n\xff\xfe,x\n"),
        ["scores.csv: not UTF-8 text"],
        True,
    ),
    "an empty file": (_bytes("scores.csv", b""), ["scores.csv: empty; expected a CSV scores file"], True),
    "a count column without the other": (
        _csv_with(lambda ls: [ls[0] + ",n_samples"] + [line + ",1" for line in ls[1:]]),
        ["scores.csv: column 'n_samples' without 'n_correct'"],
        True,
    ),
    "a fractional n_samples": (
        _csv_with(lambda ls: _k_samples(ls, 3, "2.5", "1", "0.4"), counts=True),
        ["n_samples: expected whole numbers >= 1", "scores.csv line 4", "n_samples=2.5"],
        False,
    ),
    "no samples": (
        _csv_with(lambda ls: _k_samples(ls, 2, "0", "0", "0"), counts=True),
        ["n_samples below 1", "scores.csv line 3"],
        False,
    ),
    "more correct answers than samples": (
        _csv_with(lambda ls: _k_samples(ls, 5, "4", "5", "1"), counts=True),
        ["n_correct outside [0, n_samples]", "scores.csv line 6", "n_correct=5.0"],
        False,
    ),
    "common_seeds_only with no seed in common": (
        _csv_with(lambda ls: [ls[0]] + [line.replace(",rloo,", ",rloo,1") for line in ls[1:]]),
        ["analysis.common_seeds_only: no seed was run by every compared arm", "'rloo' [11, 12, 13]"],
        True,
    ),
    "a score that is not n_correct / n_samples": (
        _csv_with(lambda ls: _k_samples(ls, 7, "8", "3", "0.5"), counts=True),
        ["score differs from n_correct / n_samples", "scores.csv line 8", "score=0.5"],
        False,
    ),
}


@pytest.mark.parametrize("case", TIDY_CASES)
def test_a_bad_tidy_scores_file_names_itself(case, tmp_path, monkeypatch, capsys):
    make, expected, one_line = TIDY_CASES[case]
    path = make(tmp_path)
    argv = ["analyze", FIXTURE / "experiment.yaml", "--scores", path, "--out", tmp_path / "analysis", *FAST]
    argv += ["--set", "analysis.common_seeds_only=true"] if "common_seeds_only" in case else []
    assert_refused(tmp_path, monkeypatch, capsys, "armlab", argv, *expected, one_line=one_line)


def test_an_arm_named_na_in_a_csv_is_a_name(tmp_path):
    path = _tidy_csv(tmp_path)
    _lines(path, lambda ls: [ls[0]] + [line.replace(",rloo,", ",NA,") for line in ls[1:]])
    config = yaml.safe_load((FIXTURE / "experiment.yaml").read_text())
    config["comparisons"][0]["arms"] = ["dr_grpo", "NA"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    out = tmp_path / "analysis"
    assert cli.main(["analyze", str(tmp_path / "config.yaml"), "--scores", str(path), "--out", str(out), *FAST]) == 0
    comparisons = pd.read_csv(out / "comparisons.csv", keep_default_na=False)
    assert "NA" in set(comparisons["arm"]) and (comparisons["n_seeds"] == 3).all()


# ----------------------------------------------------------------------------- wide CSV


def _wide(change):
    def make(root):
        path = BUILD["write_wide_csv"](root / "wide.csv")
        _lines(path, change)
        return path

    return make


WIDE_CASES = {
    "a 52% cell": (
        _wide(lambda ls: _set_cell(ls, 1, "math500", "52%")),
        ["wide.csv: column 'math500': expected plain numbers (percent", "wide.csv line 2 ('52%')"],
    ),
    "a header with a column twice": (
        _wide(lambda ls: [ls[0] + ",gsm8k"] + [line + ",1.0" for line in ls[1:]]),
        ["wide.csv line 1: column(s) ['gsm8k'] appear more than once"],
    ),
    "a 152 in a percent table": (  # on 5a28ea2: "a percent table needs scale: percent", which it has
        _wide(lambda ls: _set_cell(ls, 1, "math500", "152.0")),
        ["wide.csv: column 'math500': wide.csv line 2 ('152.0') outside 0 to 100 (input.scale: percent)"],
    ),
}


@pytest.mark.parametrize("case", WIDE_CASES)
def test_a_bad_wide_csv_names_itself(case, tmp_path, monkeypatch, capsys):
    make, expected = WIDE_CASES[case]
    argv = [
        "analyze",
        DATAFLEX_CONFIG,
        "--set",
        f"input.path={make(tmp_path)}",
        "--out",
        tmp_path / "analysis",
        "--set",
        "analysis.resamples=200",
    ]
    assert_refused(tmp_path, monkeypatch, capsys, "armlab", argv, *expected)


# ----------------------------------------------------------------------------- lm-eval output


def _run_dir(root, arm="grpo", seed=1):
    return root / "lmeval" / arm / f"seed-{seed}" / "some-org__some-model"


def _results(root):
    return _run_dir(root) / f"results_{STAMP}.json"


def _samples(root, task="add"):
    return _run_dir(root) / f"samples_{task}_{STAMP}.jsonl"


def _sample(line, **changes):
    return json.dumps({**json.loads(line), **changes})


def _drop_doc_id(line):
    record = json.loads(line)
    del record["doc_id"]
    return json.dumps(record)


def _aggregate(root, value):
    report = json.loads(_results(root).read_text())
    report["results"]["add"]["exact_match,none"] = value
    _results(root).write_text(json.dumps(report))


def _no_aggregate(root):
    report = json.loads(_results(root).read_text())
    report["results"]["add"] = {"exact_match,strict-match": 0.5}
    _results(root).write_text(json.dumps(report))


def _effective_docs(root):
    report = json.loads(_results(root).read_text())
    report["n-samples"] = {"add": {"original": 999, "effective": 999}}
    _results(root).write_text(json.dumps(report))


def _huge_seed(root):
    (root / "lmeval" / "rloo" / "seed-2").rename(root / "lmeval" / "rloo" / "seed-99999999999999999999")


LMEVAL_CASES = {
    "a truncated results JSON": (
        lambda r: _results(r).write_text(_results(r).read_text()[:40]),
        [f"results_{STAMP}.json: lm-eval results JSON is not valid JSON"],
    ),
    "a results JSON that is a list": (
        lambda r: _results(r).write_text("[]"),
        ["expected a JSON object with a 'results' mapping"],
    ),
    "a results JSON lacking the task's aggregate": (
        _no_aggregate,
        ["results.add: no 'exact_match,none' (found ['exact_match,strict-match'])"],
    ),
    "a non-numeric aggregate": (lambda r: _aggregate(r, "high"), ["results.add.'exact_match,none' is 'high'"]),
    "a truncated samples line": (
        lambda r: _lines(_samples(r), lambda ls: [*ls[:2], ls[2][:15], *ls[3:]]),
        [f"samples_add_{STAMP}.jsonl line 3: not valid JSON"],
    ),
    "a sample that is not an object": (
        lambda r: _lines(_samples(r), lambda ls: ["[1, 2]", *ls[1:]]),
        ["line 1: expected a JSON object (one lm-eval sample)"],
    ),
    "a sample without doc_id": (
        lambda r: _lines(_samples(r), lambda ls: [*ls[:4], _drop_doc_id(ls[4]), *ls[5:]]),
        ["line 5: no 'doc_id'"],
    ),
    "a text metric": (
        lambda r: _lines(_samples(r), lambda ls: [_sample(ls[0], exact_match="yes"), *ls[1:]]),
        ["line 1: metric 'exact_match' is 'yes'; expected a finite number"],
    ),
    "a null metric": (
        lambda r: _lines(_samples(r), lambda ls: [_sample(ls[0], exact_match=None), *ls[1:]]),
        ["line 1: metric 'exact_match' is None"],
    ),
    "a NaN metric": (
        lambda r: _lines(_samples(r), lambda ls: [_sample(ls[0], exact_match=float("nan")), *ls[1:]]),
        ["line 1: metric 'exact_match' is nan"],
    ),
    "samples of another filter only": (
        lambda r: _lines(_samples(r), lambda ls: [_sample(x, filter="strict") for x in ls]),
        ["no sample with filter 'none' for metric 'exact_match,none'", "['strict']"],
    ),
    "samples that are not UTF-8": (lambda r: _samples(r).write_bytes(b"\xff\xfe{}\n"), ["not UTF-8 text"]),
    "a metric of three answers that is not a mean over them": (
        lambda r: _lines(
            _samples(r),
            lambda ls: [
                _sample(ls[0], exact_match=0.5, resps=[["a", "b", "c"]], filtered_resps=[["a", "b", "c"]]),
                *ls[1:],
            ],
        ),
        [
            f"samples_add_{STAMP}.jsonl line 1: metric 'exact_match' is 0.5 over the 3 answers",
            "the metric of a k-answer filter must be the mean over its answers",
        ],
    ),
    "counts that disagree with the metric": (
        lambda r: _lines(_samples(r), lambda ls: [*ls[:2], _sample(ls[2], n_samples=4, n_correct=5), *ls[3:]]),
        [f"samples_add_{STAMP}.jsonl line 3: n_correct / n_samples = 5/4 = 1.25 but metric 'exact_match' is"],
    ),
    "counts that disagree with the logged answers": (
        lambda r: _lines(
            _samples(r),
            lambda ls: [
                _sample(ls[0], exact_match=0.5, n_samples=4, n_correct=2, resps=[["a", "b"]], filtered_resps=[["a"]]),
                *ls[1:],
            ],
        ),
        [f"samples_add_{STAMP}.jsonl line 1: n_samples is 4 but resps holds 2 generated answer(s)"],
    ),
    "fewer docs than the results count": (
        _effective_docs,
        [f"results_{STAMP}.json: n-samples.add.effective is 999 but samples_add_{STAMP}.jsonl holds"],
    ),
    "a results JSON with a key twice": (  # on 5a28ea2 the last one was read, silently
        lambda r: _results(r).write_text(_results(r).read_text().replace("{", '{"results": {}, ', 1)),
        [f"results_{STAMP}.json: lm-eval results JSON holds the key 'results' twice in one object"],
    ),
    "a seed directory beyond int64": (
        _huge_seed,
        ["seed-99999999999999999999: seed 99999999999999999999 (from input.pattern) is outside int64"],
    ),
}


@pytest.mark.parametrize("case", LMEVAL_CASES)
def test_bad_lm_eval_output_names_the_file_and_line(case, tmp_path, monkeypatch, capsys):
    config = BUILD["write_lmeval"](tmp_path)
    corrupt, expected = LMEVAL_CASES[case]
    corrupt(tmp_path)
    argv = ["analyze", config, "--out", tmp_path / "analysis", *FAST]
    assert_refused(tmp_path, monkeypatch, capsys, "armlab", argv, *expected)


def _manifest_config(root, rows):
    config = yaml.safe_load(BUILD["write_lmeval"](root).read_text())
    config["input"] = {"kind": "lmeval", "manifest": "runs.csv", "metric": "exact_match,none"}
    (root / "manifest.yaml").write_text(yaml.safe_dump(config))
    (root / "runs.csv").write_text("\n".join(rows) + "\n")
    return root / "manifest.yaml"


def _manifest_rows(arms=("grpo", "dr_grpo", "rloo", "difffilter"), names=None):
    return ["arm,seed,path"] + [
        f"{(names or {}).get(arm, arm)},{seed},lmeval/{arm}/seed-{seed}" for arm in arms for seed in (1, 2, 3)
    ]


MANIFEST_CASES = {
    "a header with a column twice": (
        lambda rows: [rows[0] + ",path"] + [r + ",x" for r in rows[1:]],
        ["runs.csv line 1: column(s) ['path'] appear more than once"],
        True,
    ),
    "a seed beyond int64": (
        lambda rows: [*rows[:2], "rloo,99999999999999999999,lmeval/rloo/seed-1", *rows[3:]],
        ["runs.csv: seed: expected integers within int64", "runs.csv line 3"],
        False,
    ),
    "an empty path": (
        lambda rows: [*rows[:4], "grpo,3,", *rows[5:]],
        ["runs.csv: empty cells", "runs.csv line 5"],
        False,
    ),
}


@pytest.mark.parametrize("case", MANIFEST_CASES)
def test_a_bad_lm_eval_manifest_names_itself(case, tmp_path, monkeypatch, capsys):
    change, expected, one_line = MANIFEST_CASES[case]
    config = _manifest_config(tmp_path, change(_manifest_rows()))
    argv = ["analyze", config, "--out", tmp_path / "analysis", *FAST]
    assert_refused(tmp_path, monkeypatch, capsys, "armlab", argv, *expected, one_line=one_line)


def test_an_arm_named_na_in_an_lm_eval_manifest_is_a_name(tmp_path, monkeypatch):
    config = _manifest_config(tmp_path, _manifest_rows(names={"rloo": "NA"}))
    spec = yaml.safe_load(config.read_text())
    spec["comparisons"][0]["arms"] = ["dr_grpo", "NA"]
    config.write_text(yaml.safe_dump(spec))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["analyze", str(config), "--out", "analysis", *FAST]) == 0
    assert "NA" in set(pd.read_csv(tmp_path / "analysis" / "summaries.csv", keep_default_na=False)["arm"])


# ----------------------------------------------------------------------------- verl validation dumps

VERL_STEP = 40


def _write_verl(root):
    """The fixture's scores as verl validation dumps (one answer per prompt) at ``root/verl/<arm>/seed-<seed>/``,
    and ``root/verl.yaml``, a config that reads them; returns the config's path."""
    config = yaml.safe_load((FIXTURE / "experiment.yaml").read_text())
    for (arm, seed), run in BUILD["fixture_scores"](config, np.random.default_rng(7)).groupby(["arm", "seed"]):
        out = root / "verl" / arm / f"seed-{seed}"
        out.mkdir(parents=True)
        lines = [
            json.dumps(
                {
                    "input": f"{r.benchmark} prompt {r.item}",
                    "output": "the answer",
                    "gts": "42",
                    "score": r.score,
                    "step": VERL_STEP,
                    "reward": r.score,
                    "data_source": f"armlab/{r.benchmark}",
                }
            )
            for r in run.itertuples()
        ]
        (out / f"{VERL_STEP}.jsonl").write_text("\n".join(lines) + "\n")
    converted = {key: config[key] for key in ("experiment", "benchmarks", "comparisons", "analysis")}
    converted["input"] = {
        "kind": "verl",
        "pattern": str(root / "verl" / "{arm}" / "seed-{seed}"),
        "step": "last",
        "sources": {f"armlab/{b}": b for b in config["benchmarks"]},
    }
    (root / "verl.yaml").write_text(yaml.safe_dump(converted))
    return root / "verl.yaml"


def _dump(root):
    return root / "verl" / "rloo" / "seed-2" / f"{VERL_STEP}.jsonl"


def _verl_input(root, **changes):
    config = yaml.safe_load((root / "verl.yaml").read_text())
    config["input"] |= changes
    (root / "verl.yaml").write_text(yaml.safe_dump(config))


VERL_CASES = {
    "a truncated dump": (
        lambda r: _lines(_dump(r), lambda ls: [*ls[:2], ls[2][:25], *ls[3:]]),
        [f"rloo/seed-2/{VERL_STEP}.jsonl line 3: not valid JSON"],
    ),
    "a reward with a format penalty": (
        lambda r: _lines(_dump(r), lambda ls: [*ls[:4], _sample(ls[4], score=-0.5), *ls[5:]]),
        [
            f"{VERL_STEP}.jsonl line 5: score -0.5 is outside [0, 1]",
            "the scores must be per-answer correctness in [0, 1]",
        ],
    ),
    "a line of another step": (
        lambda r: _lines(_dump(r), lambda ls: [_sample(ls[0], step=VERL_STEP - 1), *ls[1:]]),
        [f"{VERL_STEP}.jsonl line 1: step {VERL_STEP - 1}, but the file is the dump of step {VERL_STEP}"],
    ),
    "a line without its answer": (
        lambda r: _lines(_dump(r), lambda ls: [*ls[:1], json.dumps({"input": "x", "score": 1.0}), *ls[2:]]),
        [f"{VERL_STEP}.jsonl line 2: no ['output']"],
    ),
    "an unknown data source": (
        lambda r: _lines(_dump(r), lambda ls: [*ls[:6], _sample(ls[6], data_source="openai/gsm8k"), *ls[7:]]),
        [f"{VERL_STEP}.jsonl line 7: data source 'openai/gsm8k' is not in input.sources"],
    ),
    "a step without a dump": (
        lambda r: _verl_input(r, step=7),
        ["seed-1/7.jsonl: not found; expected the validation dump of step 7 (steps found: [40])"],
    ),
    "a source mapped to an unknown benchmark": (
        lambda r: _verl_input(r, sources={"armlab/add": "gsm8k"}),
        ["verl.yaml: input.sources: benchmark(s) ['gsm8k'] not in the config's benchmarks"],
    ),
    "a key of another kind": (
        lambda r: _verl_input(r, metric="exact_match,none"),
        ["verl.yaml: input: unknown key(s) ['metric'] for kind verl"],
    ),
}


def test_verl_dumps_convert_and_analyze(tmp_path, monkeypatch):
    config = _write_verl(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["analyze", str(config), "--out", "analysis", *FAST]) == 0
    accuracy = pd.read_csv(tmp_path / "analysis" / "accuracy.csv")
    assert len(accuracy) == 4 * 3 * 6 and accuracy["value"].between(0, 1).all()


@pytest.mark.parametrize("case", VERL_CASES)
def test_a_bad_verl_dump_names_the_file_and_line(case, tmp_path, monkeypatch, capsys):
    config = _write_verl(tmp_path)
    corrupt, expected = VERL_CASES[case]
    corrupt(tmp_path)
    argv = ["analyze", config, "--out", tmp_path / "analysis", *FAST]
    assert_refused(tmp_path, monkeypatch, capsys, "armlab", argv, *expected)


# ----------------------------------------------------------------------------- sizes (limits:)


def _padded(path, padding):
    """``path`` made the largest file of its kind by ``padding`` (blank lines or spaces, which read as nothing)."""
    with path.open("a") as f:
        f.write(padding * 20_000)
    return path


def _long_line(path, row):
    """``path`` with line ``row`` (1-based) made the longest of its kind by a long extra field; returns the line."""
    _lines(path, lambda ls: [*ls[: row - 1], _sample(ls[row - 1], note="x" * 20_000), *ls[row:]])
    return path.read_bytes().split(b"\n")[row - 1]


def _tidy_parquet(root):
    return BUILD["write_experiment"](root) / "scores.parquet"


# name -> (the input's config and files, the file or line the limit is set on, the limit, its line number or None)
SIZE_CASES = {
    "a tidy parquet": (lambda r: (FIXTURE / "experiment.yaml", _tidy_parquet(r)), "input_file_bytes", None),
    "a tidy CSV": (lambda r: (FIXTURE / "experiment.yaml", _tidy_csv(r)), "input_file_bytes", None),
    "a verl dump": (lambda r: (_write_verl(r), _padded(_dump(r), "\n")), "input_file_bytes", None),
    "an lm-eval results JSON": (
        lambda r: (BUILD["write_lmeval"](r), _padded(_results(r), " ")),
        "json_file_bytes",
        None,
    ),
    "an lm-eval samples file": (
        lambda r: (BUILD["write_lmeval"](r), _padded(_samples(r), "\n")),
        "input_file_bytes",
        None,
    ),
    "a line of a verl dump": (lambda r: (_write_verl(r), _dump(r)), "input_line_bytes", 3),
    "a line of lm-eval samples": (lambda r: (BUILD["write_lmeval"](r), _samples(r)), "input_line_bytes", 2),
}


def _size_case(case, root):
    """(``armlab analyze`` argv with the case's limit at the size of its file or line, that size, what names it)"""
    make, limit, row = SIZE_CASES[case]
    config, path = make(root)
    size = path.stat().st_size if row is None else len(_long_line(path, row))
    scores = ["--scores", path] if config == FIXTURE / "experiment.yaml" else []
    argv = ["analyze", config, *scores, "--out", root / "analysis", *FAST]
    where = f"{path.parent.name}/{path.name}" + ("" if row is None else f" line {row}")
    return argv, size, where


@pytest.mark.parametrize("case", SIZE_CASES)
def test_a_file_or_line_above_its_limit_is_refused_naming_the_limit(case, tmp_path, monkeypatch, capsys):
    argv, size, where = _size_case(case, tmp_path)
    limit = SIZE_CASES[case][1]
    err = assert_refused(tmp_path, monkeypatch, capsys, "armlab", [*argv, "--set", f"limits.{limit}={size - 1}"], where)
    assert f"above the limit of {size - 1} bytes; set limits.{limit} in the config" in err or (
        f"longer than the limit of {size - 1} bytes; set limits.{limit} in the config" in err
    ), err
    if SIZE_CASES[case][2] is None:
        assert f"is {size} bytes" in err, err


@pytest.mark.parametrize("case", SIZE_CASES)
def test_a_file_or_line_at_its_limit_is_read(case, tmp_path, monkeypatch):
    argv, size, _ = _size_case(case, tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli.main([str(a) for a in [*argv, "--set", f"limits.{SIZE_CASES[case][1]}={size}"]]) == 0


def _sparse(path, size):
    """``path`` replaced by a sparse file of ``size`` bytes (zeros that take no disk) at once."""
    path.unlink(missing_ok=True)
    with path.open("wb") as f:
        f.truncate(size)
    return path


SPARSE_CASES = {
    "a terabyte parquet": (
        lambda r: (FIXTURE / "experiment.yaml", _sparse(r / "scores.parquet", 10**12)),
        f"scores.parquet: scores file is {10**12} bytes, above the limit of {8 * 2**30} bytes; "
        f"set limits.input_file_bytes",
    ),
    "a terabyte CSV": (
        lambda r: (FIXTURE / "experiment.yaml", _sparse(r / "scores.csv", 10**12)),
        "scores.csv: scores file is 1000000000000 bytes, above the limit",
    ),
    "a terabyte verl dump": (
        lambda r: (_write_verl(r), _sparse(_dump(r), 10**12)),
        f"seed-2/{VERL_STEP}.jsonl: a verl validation dump (JSON lines) is 1000000000000 bytes, above the limit",
    ),
    "a terabyte lm-eval results JSON": (
        lambda r: (BUILD["write_lmeval"](r), _sparse(_results(r), 10**12)),
        f"lm-eval results JSON is 1000000000000 bytes, above the limit of {2**29} bytes; set limits.json_file_bytes",
    ),
    "a line of 65 MiB": (
        lambda r: (_write_verl(r), _sparse(_dump(r), 65 * 2**20)),
        f"seed-2/{VERL_STEP}.jsonl line 1: longer than the limit of {2**26} bytes; set limits.input_line_bytes",
    ),
}


@pytest.mark.parametrize("case", SPARSE_CASES)
def test_a_huge_input_is_refused_before_it_is_read(case, tmp_path, monkeypatch, capsys):
    make, expected = SPARSE_CASES[case]
    config, path = make(tmp_path)
    scores = ["--scores", path] if config == FIXTURE / "experiment.yaml" else []
    argv = ["analyze", config, *scores, "--out", tmp_path / "analysis", *FAST]
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    before, start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter()
    assert cli.main([str(a) for a in argv]) == 2  # (assert_refused would hash the terabyte)
    assert time.perf_counter() - start < 10  # reading a terabyte would take hours
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 2**17  # KiB: below 128 MiB of growth
    err = capsys.readouterr().err
    assert err.startswith("armlab analyze: error: ") and err.count("\n") == 1 and expected in err, err


# ----------------------------------------------------------------------------- what the report and the jobs read


def _rerecord(directory, name, text):
    """Replace a recorded file and record its new sha256, as if armlab had written it so."""
    (directory / name).write_text(text)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["files"][name] = files.file_sha256(directory / name)
    (directory / "manifest.json").write_text(json.dumps(manifest))


def _unknown_setting(results):
    manifest = json.loads((results / "analysis" / "manifest.json").read_text())
    manifest["settings"]["bogus"] = 1
    (results / "analysis" / "manifest.json").write_text(json.dumps(manifest))


REPORT_CASES = {
    "an analysis table with a column twice": (
        lambda r: _rerecord(r / "analysis", "rankings.csv", "ranking,arm,arm\nx,a,b\n"),
        ["analysis/rankings.csv line 1: column(s) ['arm'] appear more than once"],
    ),
    "an analysis table that is not CSV": (
        lambda r: _rerecord(r / "analysis", "dropped.csv", 'arm,seed\n"unclosed,1\n'),
        ["analysis/dropped.csv: not valid CSV"],
    ),
    "an analysis manifest with a setting analyze never writes": (
        _unknown_setting,
        ["analysis/manifest.json: settings:", "'bogus'"],
    ),
    "a run directory that is not seed-<integer>": (
        lambda r: (r / "runs" / "rloo" / "seed-2").rename(r / "runs" / "rloo" / "seed-two"),
        ["runs/rloo/seed-two: expected a directory seed-<integer>"],
    ),
}


@pytest.mark.parametrize("case", REPORT_CASES)
def test_the_report_names_a_bad_results_file(case, work, monkeypatch, capsys):
    root, results = work
    corrupt, expected = REPORT_CASES[case]
    corrupt(results)
    assert_refused(root, monkeypatch, capsys, "armlab", report(results, root / "new-report"), *expected)


def _run_manifest(results, text):
    run = results / "runs" / "grpo" / "seed-1"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(text)
    return ["--run-manifest", run / "manifest.json"]


def _config_not_json(results):
    (results.parent.parent / "config.json").write_text("{'single': 'quotes'}")
    return ["--checkpoint", results / "base" / "policy.pt"]


EVAL_CASES = {
    "a config that is not JSON": (_config_not_json, ["config.json: config is not valid JSON"]),
    "a run manifest that is not JSON": (
        lambda r: _run_manifest(r, '{"checkpoint": '),
        ["runs/grpo/seed-1/manifest.json: manifest is not valid JSON"],
    ),
    "a run manifest that is a list": (
        lambda r: _run_manifest(r, "[]"),
        ["runs/grpo/seed-1/manifest.json: expected a JSON object"],
    ),
    "a run manifest without checksums": (
        lambda r: _run_manifest(r, '{"checkpoint": "/x"}'),
        ["runs/grpo/seed-1/manifest.json: no 'files'"],
    ),
}


@pytest.mark.parametrize("case", EVAL_CASES)
def test_the_evaluation_names_a_bad_input(case, tiny, monkeypatch, capsys):
    root, results = tiny
    make, expected = EVAL_CASES[case]
    assert_refused(root, monkeypatch, capsys, "armlab.evals.run", eval_argv(results, *make(results)), *expected)


def test_a_sample_without_its_metric_names_the_task_and_sample():
    from armlab.evals.run import samples_to_scores

    spec = {"gsm8k": {"domain": "math", "metric": "exact_match", "filter": "none"}}
    with pytest.raises(files.BadFile, match=r"task gsm8k, sample 1: metric 'exact_match' is 'missing'"):
        samples_to_scores({"gsm8k": [{"doc_id": 0, "exact_match": 1.0}, {"doc_id": 1}]}, "exp", "grpo", 1, spec)
    with pytest.raises(files.BadFile, match=r"task gsm8k, sample 0: no 'doc_id'"):
        samples_to_scores({"gsm8k": [{"exact_match": 1.0}]}, "exp", "grpo", 1, spec)


# ----------------------------------------------------------------------------- step logs (armlab steps)


def _metrics_log(text):
    def make(root):
        path = root / "logs" / "grpo" / "seed-1" / "metrics.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(text)
        return "jsonl", root / "logs" / "{arm}" / "seed-{seed}" / "metrics.jsonl"

    return make


def _special_log(make_file):
    """A second run whose metrics.jsonl is what ``make_file(path)`` leaves there: a FIFO, a link to /dev/zero."""

    def make(root):
        kind, pattern = _metrics_log('{"step": 1, "reward": 0.5}\n')(root)
        path = root / "logs" / "grpo" / "seed-2" / "metrics.jsonl"
        path.parent.mkdir(parents=True)
        make_file(path)
        return kind, pattern

    return make


def _deep_trainer_state(root):
    path = root / "logs" / "grpo" / "seed-1" / "trainer_state.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"log_history": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return "trl", root / "logs" / "{arm}" / "seed-{seed}" / "trainer_state.json"


STEP_LOG_CASES = {
    # on 5a28ea2: a traceback from the parquet writer
    "a step of 1e20": (_metrics_log('{"step": 1e20, "reward": 0.5}\n'), ["line 1: step is 1e+20; expected a whole"]),
    # on 5a28ea2: read as step 1
    "a step that is true": (
        _metrics_log('{"step": true, "reward": 0.5}\n'),
        ["line 1: step is True; expected a whole"],
    ),
    # on 5a28ea2: left out of the output without a word
    "a FIFO as a run's log": (
        _special_log(os.mkfifo),
        ["seed-2/metrics.jsonl: file matching --pattern is a FIFO (named pipe), not a regular file"],
    ),
    "a link to /dev/zero as a run's log": (
        _special_log(lambda path: path.symlink_to("/dev/zero")),
        ["seed-2/metrics.jsonl: file matching --pattern is a device, not a regular file"],
    ),
    # on 5a28ea2: a RecursionError traceback
    "a trainer_state.json nested 100,000 deep": (
        _deep_trainer_state,
        ["trainer_state.json: TRL trainer state is nested deeper than Python's JSON parser goes"],
    ),
}


@pytest.mark.parametrize("case", STEP_LOG_CASES)
def test_a_bad_step_log_names_itself(case, tmp_path, monkeypatch, capsys):
    make, expected = STEP_LOG_CASES[case]
    kind, pattern = make(tmp_path)
    argv = ["steps", kind, "--pattern", pattern, "--experiment", "x", "--out", tmp_path / "runs"]
    assert_refused(tmp_path, monkeypatch, capsys, "armlab", argv, *expected)
