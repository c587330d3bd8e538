"""The Python API (armlab.analysis.api): compare() on a DataFrame is `armlab analyze` on the same table, and
rliable-style score arrays become a tidy table whose row i of every arm is the run of one seed."""

import filecmp

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, report_build

from armlab import cli
from armlab.analysis import tables
from armlab.analysis.api import compare, from_score_arrays, verdicts
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.pipeline import write_outputs


def test_compare_on_a_frame_writes_what_armlab_analyze_writes(tmp_path):
    build = report_build()
    results = build["write_experiment"](tmp_path / "work")
    raw = yaml.safe_load(build["CONFIG"].read_text())
    config = tmp_path / "analysis.yaml"  # an analysis-only config: what compare() is given as arguments
    config.write_text(yaml.safe_dump({key: raw[key] for key in ("experiment", "comparisons", "analysis")}))
    scores = results / "scores.parquet"
    assert cli.main(["analyze", str(config), "--scores", str(scores), "--out", str(tmp_path / "cli")]) == 0

    result = compare(pd.read_parquet(scores), comparisons=raw["comparisons"], analysis=raw["analysis"])
    write_outputs(result, tmp_path / "api")
    for name in ("comparisons.csv", "summaries.csv", "rankings.csv", "variance_components.csv"):
        assert filecmp.cmp(tmp_path / "cli" / name, tmp_path / "api" / name, shallow=False), name

    def report(folder):  # all but the line naming the input and config (provenance)
        return [line for line in (folder / "report.md").read_text().splitlines() if not line.startswith("Input: ")]

    assert report(tmp_path / "cli") == report(tmp_path / "api")
    assert len(verdicts(result)) == 3 and verdicts(result)[0].startswith("estimators: dr_grpo vs grpo")


def _arrays(seeds=8, tasks=5, effect=0.08):
    """Reference runs with a run effect every arm of a seed shares; one arm shifted by ``effect``, one not."""
    rng = np.random.default_rng(3)
    reference = rng.uniform(0.3, 0.7, (seeds, tasks)) + rng.normal(0, 0.05, (seeds, 1))
    return {
        "grpo": reference,
        "planted": reference + effect + rng.normal(0, 0.01, (seeds, tasks)),
        "null": reference + rng.normal(0, 0.01, (seeds, tasks)),
    }


def test_score_arrays_find_a_planted_effect_and_not_a_planted_null():
    arrays = _arrays()
    result = compare(from_score_arrays(arrays), reference="grpo")
    rows = result.comparisons[
        (result.comparisons["level"] == "summary") & (result.comparisons["ci_method"] == "sign_flip")
    ]
    primary = rows[rows["measure"] == rows["measure"].iloc[0]].set_index("arm")
    # the primary summary is the mean over tasks (one domain); its paired difference, computed by hand
    for arm in ("planted", "null"):
        by_hand = (arrays[arm].mean(axis=1) - arrays["grpo"].mean(axis=1)).mean()
        assert primary.loc[arm, "mean_diff"] == pytest.approx(by_hand, abs=1e-12)
    # 8 seeds, all positive: exact sign-flip p = 2/256, Holm over two arms 4/256
    assert primary.loc["planted", "p_value"] == pytest.approx(2 / 256)
    verdict = dict(zip(primary.index, tables.verdicts(primary)))
    assert verdict["planted"] == "better"
    assert verdict["null"] not in ("better", "worse")
    assert [line.split(":")[1].split(" on ")[0].strip() for line in verdicts(result)] == [
        "planted vs grpo",
        "null vs grpo",
    ]


def test_row_i_of_every_arm_is_the_run_of_seed_i():
    arrays = {"a": np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]), "b": np.array([[0.7, 0.8], [0.9, 1.0]])}
    tidy = from_score_arrays(arrays, ["math", "logic"], seeds=[11, 12, 13], domains={"math": "m", "logic": "l"})
    for arm, values in arrays.items():
        back = tidy[tidy["arm"] == arm].pivot(index="seed", columns="benchmark", values="score")
        assert list(back.index) == [11, 12, 13][: len(values)]
        np.testing.assert_array_equal(back[["math", "logic"]].to_numpy(), values)
    assert set(zip(tidy["benchmark"], tidy["domain"])) == {("math", "m"), ("logic", "l")}
    assert (tidy["item"] == "*").all()
    # runs not matched by seed: the unpaired analysis uses every run
    result = compare(tidy, reference="a", analysis={"pairing": "unpaired"})
    assert set(result.comparisons["n_seeds"]) == {2} and set(result.comparisons["n_reference_seeds"]) == {3}


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: from_score_arrays({"a": np.ones((3, 2)), "b": np.ones((3, 4))}),
            "arm 'b': expected an array of runs x 2",
        ),
        (lambda: from_score_arrays({"a": np.ones((3, 2))}, ["x"]), "1 task names for arrays of 2 tasks"),
        (lambda: from_score_arrays({"a": np.ones((3, 2))}, seeds=[1, 1, 2]), "expected 3 distinct whole-number seeds"),
        (lambda: from_score_arrays({"a": np.ones((3, 2))}, seeds=[1, 2, 3, 4]), "expected 3 distinct whole-number"),
        (lambda: from_score_arrays({"a": np.ones((3, 2))}, seeds=[1, 2, 2.5]), "expected 3 distinct whole-number"),
        (lambda: from_score_arrays({}), "no arms; expected {arm: array of runs x tasks}"),
        (lambda: from_score_arrays({"a": np.ones(3)}), "arm 'a': expected a 2-D array of runs x tasks, got shape (3,)"),
        (lambda: compare(from_score_arrays({"a": np.ones((3, 2))}), comparisons=[], arms=["a"]), "arms go with"),
        (lambda: from_score_arrays({"a": np.ones((3, 2))}, domains={"task0": "x"}), "task(s) ['task1'] have no domain"),
        (lambda: compare(from_score_arrays({"a": np.ones((3, 2))}), reference="b"), "reference 'b' is not an arm"),
        (lambda: compare(from_score_arrays({"a": np.ones((3, 2))})), "expected either reference (with arms) or"),
        (lambda: compare(pd.DataFrame({"arm": ["a"]}), reference="a"), "scores lack the column(s)"),
        (
            lambda: compare(from_score_arrays({"a": np.full((3, 2), 2.0), "b": np.ones((3, 2))}), reference="a"),
            "[0, 1]",
        ),
    ],
)
def test_bad_input_is_one_line_naming_what_was_expected(call, message):
    with pytest.raises(AnalysisInputError) as refused:
        call()
    assert message in str(refused.value).splitlines()[0]  # the first line names it (bad rows are listed below)


def test_the_python_api_example_of_the_docs_runs(tmp_path, monkeypatch, capsys):
    """The Python API block of docs/bringing-results.md, run as written on the demo-like fixture's scores."""
    page = (REPO / "docs" / "bringing-results.md").read_text()
    block = page.split("## The Python API")[1].split("```python\n")[1].split("```")[0]
    build = report_build()
    results = build["write_experiment"](tmp_path / "work")
    (tmp_path / "results" / "demo").mkdir(parents=True)
    (results / "scores.parquet").rename(tmp_path / "results" / "demo" / "scores.parquet")
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    namespace = {"grpo_runs": rng.uniform(0.4, 0.6, (5, 2)), "rloo_runs": rng.uniform(0.4, 0.6, (5, 2))}
    exec(block, namespace)
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(":")[1].split(" on ")[0].strip() for line in printed] == [
        "dr_grpo vs grpo",
        "difffilter vs grpo",
    ]
    assert set(namespace["tidy"]["benchmark"]) == {"gsm8k", "math500"}
