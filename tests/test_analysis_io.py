"""Inputs: validation errors naming the rows, dropping incomplete runs, and the converters."""

import json

import numpy as np
import pandas as pd
import pytest

from analysis import io
from analysis.config import Comparison
from analysis.errors import AnalysisInputError
from analysis.synthetic import synthetic_scores

BENCHMARKS = {"add": "math", "sub": "math", "boolexpr": "logic"}
COMPARISONS = (Comparison("estimators", "grpo", ("rloo",)),)


def _scores(items=3, arms=("grpo", "rloo"), seeds=(1, 2, 3)):
    return synthetic_scores(
        arms=arms, seeds=seeds, benchmarks=BENCHMARKS, items=items, experiment="demo", rng=np.random.default_rng(0)
    )


def _validate(frame, **kwargs):
    return io.validate_scores(frame, experiment="demo", comparisons=COMPARISONS, **kwargs)


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
    return io.wide_csv_to_tidy(path, **{**spec, **kwargs})


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
        match=r"outside \[0, 1\] \(a percent table needs scale: percent\)"
        r"[\s\S]*runs.csv line 2 \[add\]",
    ):
        _validate(_wide(tmp_path, scale="fraction"))
    broken = WIDE.replace("c,main,m1,rloo,1,55.0,42.0,31.0", "c,main,m1,rloo,1,55.0,,31.0")
    with pytest.raises(AnalysisInputError, match=r"missing values[\s\S]*runs.csv line 4 \[sub\]"):
        _validate(_wide(tmp_path, text=broken))
    with pytest.raises(AnalysisInputError, match=r"column\(s\) \['bool_col'\] not found"):
        _wide(tmp_path, text=WIDE.replace("bool_col", "other_col"))
    with pytest.raises(AnalysisInputError, match="match no rows"):
        _wide(tmp_path, filters=[{"campaign": "nothing"}])
    with pytest.raises(AnalysisInputError, match="not found"):
        io.wide_csv_to_tidy(
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
    runs = io.lmeval_runs_from_pattern("evals/{arm}/seed-{seed}", "demo")
    assert sorted((a, s) for a, s, _ in runs) == [("grpo", 1), ("grpo", 2), ("rloo", 1), ("rloo", 2)]
    frame = io.lmeval_to_tidy(runs, experiment="demo", benchmarks=BENCHMARKS, metric="exact_match,strict-match")
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
    frame = io.lmeval_to_tidy(
        io.lmeval_runs_from_manifest(manifest), experiment="demo", benchmarks=BENCHMARKS, metric=metric
    )
    assert (frame.loc[frame["benchmark"] == "add", "score"] == 1.0).all()


def test_lmeval_item_means_must_equal_the_reported_aggregate(tmp_path):
    _lmeval_tree(tmp_path, corrupt=True)
    runs = [("rloo", 1, tmp_path / "evals/rloo/seed-1")]
    with pytest.raises(AnalysisInputError, match=r"results\.add\.'exact_match,strict-match' = .* mean item score"):
        io.lmeval_to_tidy(runs, experiment="demo", benchmarks=BENCHMARKS, metric="exact_match,strict-match")
    with pytest.raises(AnalysisInputError, match="metric 'acc' not in the sample"):
        io.lmeval_to_tidy(runs, experiment="demo", benchmarks=BENCHMARKS, metric="acc,strict-match")


def test_lmeval_missing_task_is_reported_by_validation(tmp_path):
    _lmeval_tree(tmp_path)
    for path in (tmp_path / "evals/rloo/seed-2").rglob("samples_sub_*.jsonl"):
        path.unlink()
    runs = [(a, s, tmp_path / f"evals/{a}/seed-{s}") for a in ("grpo", "rloo") for s in (1, 2)]
    frame = io.lmeval_to_tidy(runs, experiment="demo", benchmarks=BENCHMARKS, metric="exact_match,strict-match")
    with pytest.raises(AnalysisInputError, match=r"arm='rloo' seed=2: missing benchmark\(s\) \['sub'\]"):
        _validate(frame)
