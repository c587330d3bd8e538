"""Inputs: validation errors naming the rows, dropping incomplete runs, and the converters."""

import json

import numpy as np
import pandas as pd
import pytest

from armlab.analysis import inputs
from armlab.analysis.config import Comparison
from armlab.analysis.design.synthetic import synthetic_scores
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs import validation
from armlab.contract import COLUMNS

BENCHMARKS = {"add": "math", "sub": "math", "boolexpr": "logic"}
COMPARISONS = (Comparison("estimators", "grpo", ("rloo",)),)


def _scores(items=3, arms=("grpo", "rloo"), seeds=(1, 2, 3)):
    return synthetic_scores(
        arms=arms, seeds=seeds, benchmarks=BENCHMARKS, items=items, experiment="demo", rng=np.random.default_rng(0)
    )


def _validate(frame, **kwargs):
    return validation.validate_scores(frame, experiment="demo", comparisons=COMPARISONS, **kwargs)


def test_a_valid_table_passes_and_keeps_its_rows():
    frame, dropped = _validate(_scores())
    assert len(frame) == 2 * 3 * 3 * 3 and dropped.empty
    assert frame["seed"].dtype == np.int64


def test_an_arm_in_no_comparison_is_not_seed_matched():
    base = _scores(arms=("base",), seeds=(0,))
    frame, _ = _validate(pd.concat([_scores(), base], ignore_index=True))
    assert set(frame["arm"]) == {"grpo", "rloo", "base"}


@pytest.mark.parametrize(
    "mutate, message, row",
    [
        (lambda f: f.assign(score=f["score"].where(f.index != 4)), "missing values", "row 4"),
        (lambda f: f.assign(arm=f["arm"].where(f.index != 6)), "missing values", "row 6"),
        (lambda f: f.assign(score=f["score"].mask(f.index == 5, 1.5)), "outside [0, 1]", "row 5"),
        (lambda f: f.assign(score=f["score"].mask(f.index == 7, -0.1)), "outside [0, 1]", "row 7"),
        (lambda f: pd.concat([f, f.iloc[[2]]]), "duplicate rows", "row 2"),
        (lambda f: f.assign(score=f["score"].astype(object).mask(f.index == 3, "n/a")), "non-numeric", "row 3"),
        (lambda f: f.assign(seed=f["seed"].astype(float).mask(f.index == 8, 1.5)), "expected integers", "row 8"),
        (lambda f: f.assign(experiment=f["experiment"].mask(f.index == 9, "other")), "another experiment", "row 9"),
        (lambda f: f.drop(columns="domain"), "missing column(s) ['domain']", ""),
    ],
)
def test_validation_errors_name_the_rows(mutate, message, row):
    with pytest.raises(AnalysisInputError) as err:
        _validate(mutate(_scores()), source="scores.parquet")
    text = str(err.value)
    assert text.startswith("scores.parquet:") and message in text and row in text


def _counted(k=4):
    """The synthetic table as k answers per item: n_correct of them right, score their mean."""
    frame = _scores()
    n_correct = np.random.default_rng(1).integers(0, k + 1, len(frame)).astype(float)
    return frame.assign(score=n_correct / k, n_samples=k, n_correct=n_correct)


def test_a_table_without_counts_reads_as_one_sample_per_item():
    old = _scores()
    assert "n_samples" not in old.columns
    frame, _ = _validate(old)
    assert list(frame.columns) == COLUMNS
    assert frame["n_samples"].dtype == np.int64 and (frame["n_samples"] == 1).all()
    assert frame["n_correct"].dtype == float and frame["n_correct"].tolist() == old["score"].tolist()


def test_a_table_with_counts_keeps_them_in_contract_types():
    counted = _counted()
    shuffled = counted[[*reversed(counted.columns)]].assign(n_samples=counted["n_samples"].astype(str), extra=1)
    frame, _ = _validate(shuffled)
    assert list(frame.columns) == COLUMNS
    assert frame["n_samples"].dtype == np.int64 and (frame["n_samples"] == 4).all()
    assert frame["n_correct"].dtype == float and frame["n_correct"].tolist() == counted["n_correct"].tolist()
    assert 0 < frame["score"].mean() < 1


@pytest.mark.parametrize("present, absent", [("n_samples", "n_correct"), ("n_correct", "n_samples")])
def test_one_count_column_without_the_other_is_an_error_naming_the_missing_one(present, absent):
    with pytest.raises(AnalysisInputError, match=rf"column '{present}' without '{absent}'"):
        _validate(_counted().drop(columns=absent))


@pytest.mark.parametrize(
    "mutate, message, row",
    [
        (
            lambda f: f.assign(n_samples=f["n_samples"].astype(float).mask(f.index == 3, 2.5)),
            "n_samples: expected whole numbers >= 1",
            "row 3",
        ),
        (
            lambda f: f.assign(n_samples=f["n_samples"].astype(object).mask(f.index == 2, "four")),
            "n_samples: expected numbers",
            "row 2",
        ),
        (
            lambda f: f.assign(
                n_samples=f["n_samples"].mask(f.index == 5, 0),
                n_correct=f["n_correct"].mask(f.index == 5, 0.0),
                score=f["score"].mask(f.index == 5, 0.0),
            ),
            "n_samples below 1",
            "row 5",
        ),
        (
            lambda f: f.assign(
                n_correct=f["n_correct"].mask(f.index == 6, 5.0), score=f["score"].mask(f.index == 6, 1.0)
            ),
            "n_correct outside [0, n_samples]",
            "row 6",
        ),
        (
            lambda f: f.assign(
                n_correct=f["n_correct"].mask(f.index == 7, -1.0), score=f["score"].mask(f.index == 7, 0.0)
            ),
            "n_correct outside [0, n_samples]",
            "row 7",
        ),
        (
            lambda f: f.assign(score=f["score"].mask(f.index == 8, (f.at[8, "n_correct"] + 1) % 5 / 4)),
            "score differs from n_correct / n_samples",
            "row 8",
        ),
        (lambda f: f.assign(n_correct=f["n_correct"].mask(f.index == 9, np.nan)), "missing values", "row 9"),
    ],
)
def test_count_errors_name_the_rows(mutate, message, row):
    frame = mutate(_counted())
    with pytest.raises(AnalysisInputError) as err:
        _validate(frame, source="scores.parquet")
    text = str(err.value)
    assert text.startswith("scores.parquet:") and message in text and row in text
    assert text.count("\n  ") == 1  # only the broken row


def test_a_score_within_the_tolerance_of_its_counts_passes():
    frame = _counted(k=3)
    frame["score"] = frame["n_correct"] / 3 + 5e-10
    frame["score"] = frame["score"].clip(0, 1)
    _validate(frame)
    frame.loc[0, "score"] = frame.loc[0, "n_correct"] / 3 + (2e-9 if frame.loc[0, "n_correct"] < 3 else -2e-9)
    with pytest.raises(AnalysisInputError, match=r"score differs from n_correct / n_samples[\s\S]*row 0"):
        _validate(frame)


def test_seeds_that_do_not_match_the_reference_are_an_error():
    frame = _scores()
    frame = frame[~((frame["arm"] == "rloo") & (frame["seed"] == 3))]
    with pytest.raises(AnalysisInputError, match=r"seeds of arm 'rloo' \[1, 2\] do not match .* only in grpo: \[3\]"):
        _validate(frame)
    with pytest.raises(AnalysisInputError, match=r"seeds of arm 'rloo'"):  # dropping is no way around it
        _validate(frame, drop_incomplete=True)


def test_a_compared_arm_without_scores_is_an_error():
    with pytest.raises(AnalysisInputError, match=r"arm\(s\) \['rloo'\] have no scores"):
        _validate(_scores(arms=("grpo",)))


def test_a_benchmark_with_two_domains_or_against_the_config_is_an_error():
    frame = _scores()
    with pytest.raises(AnalysisInputError, match="more than one domain"):
        _validate(frame.assign(domain=frame["domain"].mask(frame.index == 0, "logic")))
    with pytest.raises(AnalysisInputError, match=r"missing \['mul'\], not in config \[\]"):
        _validate(frame, benchmarks={**BENCHMARKS, "mul": "math"})
    with pytest.raises(AnalysisInputError, match=r"domain \(scores, config\) \{'add': \('math', 'logic'\)\}"):
        _validate(frame, benchmarks={**BENCHMARKS, "add": "logic"})


def test_runs_missing_benchmarks_or_items_are_named_and_can_be_dropped():
    frame = _scores()
    gone = ((frame["arm"] == "rloo") & (frame["seed"] == 2) & (frame["benchmark"] == "sub")) | (
        (frame["arm"] == "grpo") & (frame["seed"] == 3) & (frame["benchmark"] == "add") & (frame["item"] == "i0001")
    )
    frame = frame[~gone]
    with pytest.raises(AnalysisInputError) as err:
        _validate(frame)
    text = str(err.value)
    assert "2 run(s) lack benchmarks or items" in text
    assert "arm='rloo' seed=2: missing benchmark(s) ['sub']" in text
    assert "arm='grpo' seed=3: incomplete add (2 of 3 items)" in text
    kept, dropped = _validate(frame, drop_incomplete=True)
    assert sorted(zip(dropped["arm"], dropped["seed"])) == [("grpo", 3), ("rloo", 2)]
    assert not ((kept["arm"] == "rloo") & (kept["seed"] == 2)).any()


# ------------------------------------------------------------------------------ wide CSV

WIDE = """run_id,campaign,model,method,seed,add,sub,bool_col
a,main,m1,grpo,1,50.0,40.0,30.0
b,main,m1,grpo,2,52.0,41.0,33.0
c,main,m1,rloo,1,55.0,42.0,31.0
d,main,m1,rloo,2,51.0,44.0,35.0
e,main,m2,grpo,1,10.0,10.0,10.0
f,other,m1,grpo,1,99.0,99.0,99.0
"""


def _wide(tmp_path, text=WIDE, **kwargs):
    path = tmp_path / "runs.csv"
    path.write_text(text)
    spec = dict(
        experiment="demo",
        benchmarks=BENCHMARKS,
        arm="method",
        seed="seed",
        scale="percent",
        columns={"boolexpr": "bool_col"},
        filters=[{"campaign": "main", "model": "m1"}],
    )
    return inputs.wide_csv.wide_csv_to_tidy(path, **{**spec, **kwargs})


def test_wide_csv_becomes_per_benchmark_tidy_rows(tmp_path):
    frame, _ = _validate(_wide(tmp_path))
    assert len(frame) == 4 * 3 and set(frame["item"]) == {"*"}
    row = frame[(frame["arm"] == "rloo") & (frame["seed"] == 2) & (frame["benchmark"] == "boolexpr")]
    assert row["score"].tolist() == [0.35] and row["domain"].tolist() == ["logic"]


def test_wide_csv_filters_are_alternatives_and_arms_can_be_templates(tmp_path):
    frame = _wide(tmp_path, arm="{model}/{method}", filters=[{"campaign": "main", "model": ["m1", "m2"]}])
    assert sorted(set(frame["arm"])) == ["m1/grpo", "m1/rloo", "m2/grpo"]
    frame = _wide(tmp_path, filters=[{"campaign": "main", "model": "m1"}, {"campaign": "other"}])
    with pytest.raises(AnalysisInputError, match=r"duplicate rows[\s\S]*runs.csv line 2 \[add\]"):
        _validate(frame)  # the two filters both give grpo seed 1


def test_wide_csv_errors_point_into_the_csv(tmp_path):
    with pytest.raises(
        AnalysisInputError,
        match=r"runs\.csv: column 'add': runs\.csv line 2 \('50\.0'\), .* outside 0 to 1 \(input\.scale: fraction\); a "
        r"table in percent needs input\.scale: percent",
    ):
        _validate(_wide(tmp_path, scale="fraction"))
    # a percent table that says so, with a cell above 100: the message says which cell, not to say scale: percent
    with pytest.raises(
        AnalysisInputError,
        match=r"column 'sub': runs\.csv line 4 \('142\.0'\) outside 0 to 100 \(input\.scale: percent\)$",
    ):
        _wide(tmp_path, text=WIDE.replace("c,main,m1,rloo,1,55.0,42.0,31.0", "c,main,m1,rloo,1,55.0,142.0,31.0"))
    broken = WIDE.replace("c,main,m1,rloo,1,55.0,42.0,31.0", "c,main,m1,rloo,1,55.0,,31.0")
    with pytest.raises(AnalysisInputError, match=r"missing values[\s\S]*runs.csv line 4 \[sub\]"):
        _validate(_wide(tmp_path, text=broken))
    with pytest.raises(AnalysisInputError, match=r"column\(s\) \['bool_col'\] not found"):
        _wide(tmp_path, text=WIDE.replace("bool_col", "other_col"))
    with pytest.raises(AnalysisInputError, match="match no rows"):
        _wide(tmp_path, filters=[{"campaign": "nothing"}])
    with pytest.raises(AnalysisInputError, match="not found"):
        inputs.wide_csv.wide_csv_to_tidy(
            tmp_path / "absent.csv",
            experiment="demo",
            benchmarks=BENCHMARKS,
            arm="method",
            seed="seed",
            scale="percent",
        )


# ------------------------------------------------------------------------------ lm-eval


def _write_lmeval(root, arm, seed, scores, corrupt_aggregate=False):
    """lm-eval layout: <dir>/<model>/results_<ts>.json and samples_<task>_<ts>.jsonl; two filters per sample."""
    out = root / arm / f"seed-{seed}" / "org__model"
    out.mkdir(parents=True)
    stamp = "2025-01-02T03-04-05.678901"
    results = {}
    for task, values in scores.items():
        lines = []
        for doc_id, value in enumerate(values):
            for filt, v in (("strict-match", value), ("flexible-extract", 1.0)):
                lines.append(
                    json.dumps(
                        {
                            "doc_id": doc_id,
                            "doc": {"q": doc_id},
                            "filter": filt,
                            "metrics": ["exact_match"],
                            "exact_match": v,
                            "resps": [["x"]],
                        }
                    )
                )
        (out / f"samples_{task}_{stamp}.jsonl").write_text("\n".join(lines) + "\n")
        mean = float(np.mean(values)) + (0.1 if corrupt_aggregate else 0.0)
        results[task] = {"alias": task, "exact_match,strict-match": mean, "exact_match,flexible-extract": 1.0}
    # a task whose name extends another's must not be read as it
    (out / f"samples_add_long_{stamp}.jsonl").write_text(json.dumps({"doc_id": 0, "exact_match": 0.5}) + "\n")
    (out / f"results_{stamp}.json").write_text(json.dumps({"results": results}))


def _lmeval_tree(tmp_path, corrupt=False):
    rng = np.random.default_rng(0)
    for arm in ("grpo", "rloo"):
        for seed in (1, 2):
            _write_lmeval(
                tmp_path / "evals",
                arm,
                seed,
                {t: rng.integers(0, 2, 4).astype(float).tolist() for t in BENCHMARKS},
                corrupt_aggregate=corrupt and arm == "rloo",
            )


def test_lmeval_output_located_by_pattern(tmp_path, monkeypatch):
    _lmeval_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    runs = inputs.runs.runs_from_pattern("evals/{arm}/seed-{seed}", "demo")
    assert sorted((a, s) for a, s, _ in runs) == [("grpo", 1), ("grpo", 2), ("rloo", 1), ("rloo", 2)]
    frame = inputs.lmeval.lmeval_to_tidy(
        runs, experiment="demo", benchmarks=BENCHMARKS, metric="exact_match,strict-match"
    )
    frame, _ = _validate(frame)
    assert len(frame) == 4 * 3 * 4 and set(frame["item"]) == {"0", "1", "2", "3"}
    # the flexible-extract filter (all 1.0) was not read
    assert frame["score"].mean() < 1.0


def test_lmeval_output_located_by_manifest_with_a_metric_per_benchmark(tmp_path):
    _lmeval_tree(tmp_path)
    manifest = tmp_path / "manifest.csv"
    manifest.write_text(
        "arm,seed,path\n" + "".join(f"{a},{s},evals/{a}/seed-{s}\n" for a in ("grpo", "rloo") for s in (1, 2))
    )
    metric = {t: "exact_match,strict-match" for t in BENCHMARKS} | {"add": "exact_match,flexible-extract"}
    frame = inputs.lmeval.lmeval_to_tidy(
        inputs.runs.runs_from_manifest(manifest), experiment="demo", benchmarks=BENCHMARKS, metric=metric
    )
    assert (frame.loc[frame["benchmark"] == "add", "score"] == 1.0).all()


def test_lmeval_item_means_must_equal_the_reported_aggregate(tmp_path):
    _lmeval_tree(tmp_path, corrupt=True)
    runs = [("rloo", 1, tmp_path / "evals/rloo/seed-1")]
    with pytest.raises(AnalysisInputError, match=r"results\.add\.'exact_match,strict-match' = .* mean item score"):
        inputs.lmeval.lmeval_to_tidy(runs, experiment="demo", benchmarks=BENCHMARKS, metric="exact_match,strict-match")
    with pytest.raises(AnalysisInputError, match="metric 'acc' not in the sample"):
        inputs.lmeval.lmeval_to_tidy(runs, experiment="demo", benchmarks=BENCHMARKS, metric="acc,strict-match")


def test_lmeval_missing_task_is_reported_by_validation(tmp_path):
    _lmeval_tree(tmp_path)
    for path in (tmp_path / "evals/rloo/seed-2").rglob("samples_sub_*.jsonl"):
        path.unlink()
    runs = [(a, s, tmp_path / f"evals/{a}/seed-{s}") for a in ("grpo", "rloo") for s in (1, 2)]
    frame = inputs.lmeval.lmeval_to_tidy(
        runs, experiment="demo", benchmarks=BENCHMARKS, metric="exact_match,strict-match"
    )
    with pytest.raises(AnalysisInputError, match=r"arm='rloo' seed=2: missing benchmark\(s\) \['sub'\]"):
        _validate(frame)


# ------------------------------------------------------------------------------ lm-eval, several answers per doc

STAMP = "2025-01-02T03-04-05.678901"


def _answers(rng, k):
    """k answers of one doc and whether each is right."""
    right = rng.integers(0, 2, k).astype(bool)
    return [f"answer {j}: {'42' if r else 'wrong'}" for j, r in enumerate(right)], right


def _sample(doc_id, answers, filt, kept, **metrics):
    """One logged sample as lm-eval writes it: ``resps`` one request's k answers, ``filtered_resps`` per filter."""
    return {
        "doc_id": doc_id,
        "doc": {"q": doc_id},
        "target": "42",
        "arguments": {"gen_args_0": {"arg_0": f"question {doc_id}", "arg_1": "{}"}},
        "resps": [answers],
        "filtered_resps": [kept],
        "filter": filt,
        "metrics": sorted(metrics),
        **metrics,
    }


def _write_multi(directory, records, results):
    out = directory / "org__model"
    out.mkdir(parents=True)
    for task, lines in records.items():
        (out / f"samples_{task}_{STAMP}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (out / f"results_{STAMP}.json").write_text(json.dumps({"results": results}))


def _multi_run(directory, docs=5, k=4, rng=None):
    """A run evaluated with ``repeats: k``: task add logged with take_first_k and take_first; task sub by
    armlab's task config (n_samples and n_correct as metrics); task boolexpr with majority_vote."""
    rng = rng or np.random.default_rng(3)
    records = {"add": [], "sub": [], "boolexpr": []}
    truth = {}
    for doc_id in range(docs):
        answers, right = _answers(rng, k)
        truth[("add", doc_id)] = right
        records["add"].append(_sample(doc_id, answers, "take_first_k", answers, exact_match=float(right.mean())))
        records["add"].append(_sample(doc_id, answers, "take_first", answers[0], exact_match=float(right[0])))
        answers, right = _answers(rng, 2 * k)
        truth[("sub", doc_id)] = right
        records["sub"].append(
            _sample(
                doc_id,
                answers,
                "none",
                answers[0],
                acc=float(right.mean()),
                n_samples=2 * k,
                n_correct=int(right.sum()),
            )
        )
        answers, right = _answers(rng, k)
        truth[("boolexpr", doc_id)] = right[:1]
        vote = answers[0]
        records["boolexpr"].append(_sample(doc_id, answers, "maj", [vote], exact_match=float(right[0])))

    def mean(task, pick=lambda r: r.mean()):
        return float(np.mean([pick(truth[(task, d)]) for d in range(docs)]))

    results = {
        "add": {"exact_match,take_first_k": mean("add"), "exact_match,take_first": mean("add", lambda r: float(r[0]))},
        "sub": {"acc,none": mean("sub")},
        "boolexpr": {"exact_match,maj": mean("boolexpr")},
    }
    _write_multi(directory, records, results)
    return truth


MULTI_METRIC = {"add": "exact_match,take_first_k", "sub": "acc,none", "boolexpr": "exact_match,maj"}


def test_lmeval_samples_of_several_answers_convert_with_their_counts(tmp_path):
    truth = _multi_run(tmp_path / "run")
    frame = inputs.lmeval.lmeval_to_tidy(
        [("grpo", 1, tmp_path / "run")], experiment="demo", benchmarks=BENCHMARKS, metric=MULTI_METRIC
    )
    assert list(frame.columns) == COLUMNS
    frame = frame.set_index(["benchmark", "item"])
    for (task, doc_id), right in truth.items():
        row = frame.loc[(task, str(doc_id))]
        assert row["n_samples"] == len(right) and row["n_correct"] == right.sum(), (task, doc_id)
        assert row["score"] == pytest.approx(right.mean())
    assert set(frame.loc["add", "n_samples"]) == {4} and set(frame.loc["sub", "n_samples"]) == {8}
    assert set(frame.loc["boolexpr", "n_samples"]) == {1}  # majority_vote keeps one answer
    # the same file read with take_first: one answer per doc
    first = inputs.lmeval.lmeval_to_tidy(
        [("grpo", 1, tmp_path / "run")],
        experiment="demo",
        benchmarks=BENCHMARKS,
        metric=MULTI_METRIC | {"add": "exact_match,take_first"},
    ).set_index(["benchmark", "item"])
    assert set(first.loc["add", "n_samples"]) == {1}
    assert first.loc["add", "n_correct"].tolist() == [float(truth[("add", d)][0]) for d in range(5)]


def _rewrite(directory, task, line, **changes):
    """Change fields of one sample (1-based line) of a task's samples file."""
    path = next(directory.rglob(f"samples_{task}_*.jsonl"))
    lines = path.read_text().splitlines()
    record = json.loads(lines[line - 1])
    for key, value in changes.items():
        if value is None:
            record.pop(key, None)
        else:
            record[key] = value
    lines[line - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    "task, line, changes, message",
    [
        (
            "add",
            3,
            {"exact_match": 0.3},
            r"line 3: metric 'exact_match' is 0.3 over the 4 answers that filter 'take_first_k' kept, which "
            r"gives 1.2 correct answers, not a whole number; the metric of a k-answer filter must be the mean over "
            r"its answers .*: choose a filter that keeps one answer",
        ),
        ("sub", 2, {"n_samples": 2.5}, r"line 2: n_samples is 2.5; expected a whole number >= 1"),
        ("sub", 4, {"n_samples": 0}, r"line 4: n_samples is 0; expected a whole number >= 1"),
        ("sub", 1, {"n_correct": None}, r"line 1: n_samples is 8 and n_correct is 'missing'; expected both"),
        ("sub", 5, {"n_samples": "8"}, r"line 5: n_samples is '8' and n_correct is \d+; expected both as numbers"),
        ("sub", 3, {"n_samples": 16}, r"line 3: n_correct / n_samples = \d+/16 = .* but metric 'acc' is"),
    ],
)
def test_lmeval_counts_that_do_not_add_up_name_the_file_and_line(tmp_path, task, line, changes, message):
    _multi_run(tmp_path / "run")
    _rewrite(tmp_path / "run", task, line, **changes)
    with pytest.raises(AnalysisInputError, match=rf"samples_{task}_{STAMP}\.jsonl {message}"):
        inputs.lmeval.lmeval_to_tidy(
            [("grpo", 1, tmp_path / "run")], experiment="demo", benchmarks=BENCHMARKS, metric=MULTI_METRIC
        )


def test_lmeval_loglikelihood_choices_and_unlogged_answers_are_one_sample():
    pair = ["-1.25", "False"]  # lm-eval writes a (loglikelihood, is_greedy) response as text
    one_choice = {"resps": [[pair]], "filtered_resps": [pair]}
    choices = {"resps": [[pair], [pair], [pair]], "filtered_resps": [pair, pair, pair]}
    for record in (one_choice, choices, {}, {"filtered_resps": ["a"]}, {"filtered_resps": [["a"]]}):
        assert inputs.lmeval._lmeval_counts({**record, "acc": 1.0}, "acc", 1.0, "none", "x") == (1, 1.0)
    assert inputs.lmeval._lmeval_counts(
        {"resps": [["a", "b"]], "filtered_resps": [["a", "b"]]}, "acc", 0.5, "k", "x"
    ) == (
        2,
        1.0,
    )
    with pytest.raises(AnalysisInputError, match="x: filtered_resps holds no answer"):
        inputs.lmeval._lmeval_counts({"resps": [[]], "filtered_resps": [[]]}, "acc", 0.0, "k", "x")


def test_every_converter_returns_the_contract_columns(tmp_path):
    assert list(_wide(tmp_path).columns) == COLUMNS
    wide = _wide(tmp_path)
    assert (wide["n_samples"] == 1).all() and wide["n_correct"].equals(wide["score"])
    _lmeval_tree(tmp_path)
    runs = inputs.runs.runs_from_pattern(str(tmp_path / "evals/{arm}/seed-{seed}"), "demo")
    frame = inputs.lmeval.lmeval_to_tidy(
        runs, experiment="demo", benchmarks=BENCHMARKS, metric="exact_match,strict-match"
    )
    assert list(frame.columns) == COLUMNS and (frame["n_samples"] == 1).all()
    assert frame["n_samples"].dtype == np.int64 and frame["n_correct"].equals(frame["score"])


@pytest.mark.parametrize("rows", [40, 20_000])  # ~12,600 distinct values per column: the codes no longer fit an int64
def test_duplicated_keys_on_integer_codes_are_pandas_duplicated(rows):
    from armlab.contract import KEY, duplicated_keys

    rng = np.random.default_rng(rows)
    pick = lambda n: rng.integers(0, n, rows)  # noqa: E731
    distinct = rows if rows > 1000 else 3
    frame = pd.DataFrame(
        {
            "experiment": [f"e{i}" for i in pick(distinct if rows > 1000 else 1)],
            "arm": [f"a{i}" for i in pick(distinct)],
            "seed": pick(distinct),
            "benchmark": [f"b{i}" for i in pick(distinct)],
            "item": [f"i{i}" for i in pick(distinct)],
        }
    )
    frame = pd.concat([frame, frame.iloc[: rows // 10]], ignore_index=True)  # plant duplicates
    frame.loc[len(frame) - 1, "item"] = None  # a missing key value equals another missing one, as in pandas
    frame.loc[0, "item"] = None
    found = duplicated_keys(frame)
    pd.testing.assert_series_equal(found, frame.duplicated(KEY, keep=False))
    assert found.sum() >= 2 * (rows // 10) - 4
    sizes = [frame[column].nunique() + 2 for column in KEY]
    assert (np.prod(sizes, dtype=object) >= 2**63) == (rows > 1000)  # both paths are exercised


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            {"kind": "lm_eval", "pattern": "evals/{arm}/seed-{seed}"},
            "input.kind: unknown input kind 'lm_eval'; did you mean 'lmeval'?; expected one of "
            "['lmeval', 'tidy', 'verl', 'wide_csv']",
        ),
        # before the formats' registry: a KeyError, and the command's status 3 (an internal failure)
        ({"kind": "tidy"}, "input: kind tidy needs ['path']"),
        ({"kind": "tidy", "path": "s.csv", "metric": "acc"}, "input: unknown key(s) ['metric'] for kind tidy"),
    ],
)
def test_an_input_section_that_names_no_format_it_can_read_is_one_line(spec, message, tmp_path, capsys):
    from armlab import cli

    config = tmp_path / "config.yaml"
    comparisons = [{"family": "f", "reference": "grpo", "arms": ["rloo"]}]
    config.write_text(json.dumps({"experiment": "demo", "comparisons": comparisons, "input": spec}))
    assert cli.main(["analyze", str(config), "--out", str(tmp_path / "analysis")]) == 2
    err = capsys.readouterr().err
    assert err == f"armlab analyze: error: {config}: {message}\n"


def test_every_input_format_takes_its_keys_and_reads_a_tidy_frame():
    """One registry of formats: each entry's keys are the ones its module documents and its reader is the module's."""
    assert list(inputs.FORMATS) == ["tidy", "wide_csv", "lmeval", "verl"]
    for kind, found in inputs.FORMATS.items():
        assert found.required <= found.keys and found.needs_benchmarks == (kind != "tidy")
        documented = inputs.__doc__.split(f"``kind: {kind}``")[1].split("``kind:")[0]
        assert all(f"``{key}``" in documented for key in found.keys), (kind, sorted(found.keys))
