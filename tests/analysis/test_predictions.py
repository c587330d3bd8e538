"""Preregistered predictions (analysis/predictions.py): parsing, the lock, the verdict rules against brute-force
sign-flip enumeration, their error rates by simulation at 8 seeds, and the replication table in the report."""

import csv
import dataclasses
import itertools
import json
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from armlab import files
from armlab.analysis import pipeline, predictions
from armlab.analysis.comparisons import paired
from armlab.analysis.config import Comparison, parse_config
from armlab.analysis.design.synthetic import mc_error, synthetic_scores
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.reporting import report
from armlab.analysis.stats import resampling
from armlab.experiment import locks

BENCHMARKS = {"b0": "math", "b1": "math", "b2": "logic"}
ALPHA = 0.05


def _raw(predicted, **analysis):
    return {
        "experiment": "predicted",
        "benchmarks": {b: {"domain": d} for b, d in BENCHMARKS.items()},
        "comparisons": [{"family": "f", "reference": "ref", "arms": ["big", "null"]}],
        "seeds": list(range(1, 9)),
        "analysis": {"resamples": 200, "per_benchmark": False, "equivalence_margin": 0.05, **analysis},
        "predictions": predicted,
    }


BIG_BETTER = {"family": "f", "arm": "big", "direction": "better", "source": "planted effect"}
NULL_EQUIVALENT = {"family": "f", "arm": "null", "direction": "equivalent", "source": "planted null"}


# ----------------------------------------------------------------------------- parsing


def test_defaults_are_filled_in():
    (p,) = parse_config(_raw([NULL_EQUIVALENT])).predictions
    assert (p.summary, p.margin, p.claim) == ("domain_balanced", 0.05, "null is within ±5 point(s) of ref")


@pytest.mark.parametrize(
    "entry, message",
    [
        ({**BIG_BETTER, "family": "g"}, "predictions[0].family: 'g' is not a comparison family"),
        ({**BIG_BETTER, "arm": "ref"}, "predictions[0].arm: 'ref' is not compared in family 'f'"),
        ({**BIG_BETTER, "direction": "higher"}, "predictions[0].direction: expected one of"),
        ({**BIG_BETTER, "margin": 0}, "predictions[0].margin: expected a positive number"),
        ({**BIG_BETTER, "margin": True}, "predictions[0].margin: expected a positive number"),
        ({**BIG_BETTER, "source": ""}, "predictions[0].source: expected a non-empty string"),
        ({**BIG_BETTER, "effect": 1}, "predictions[0]: unknown key(s) ['effect']"),
        ({**BIG_BETTER, "summary": "b0"}, "predictions[0].summary: 'b0' is not a compared measure"),
    ],
)
def test_a_bad_prediction_is_one_line_naming_it(entry, message):
    with pytest.raises(AnalysisInputError, match="^config\\.yaml: " + re.escape(message)):
        parse_config(_raw([entry]), "config.yaml")


def test_a_benchmark_is_a_measure_when_benchmarks_are_compared():
    (p,) = parse_config(_raw([{**BIG_BETTER, "summary": "b0"}], per_benchmark=True)).predictions
    assert p.summary == "b0"


def test_two_predictions_of_one_comparison_are_refused():
    with pytest.raises(AnalysisInputError, match=r"predictions\[1\]: a second prediction for \(f, big"):
        parse_config(_raw([BIG_BETTER, {**BIG_BETTER, "direction": "worse"}]))


# ----------------------------------------------------------------------------- verdicts against enumeration


def _one_arm_comparisons(diffs: np.ndarray, settings) -> pd.DataFrame:
    """The comparisons table of one family per row of ``diffs`` (trials x seeds), each arm against a zero ref."""
    trials, n = diffs.shape
    index = pd.MultiIndex.from_tuples(
        [("ref", s) for s in range(n)] + [(f"a{t}", s) for t in range(trials) for s in range(n)], names=["arm", "seed"]
    )
    values = pd.DataFrame({"domain_balanced": np.concatenate([np.zeros(n), diffs.ravel()])}, index=index)
    comparisons = [Comparison(f"t{t}", "ref", (f"a{t}",)) for t in range(trials)]
    table, _ = paired.compare(values, comparisons, settings, levels={"domain_balanced": "summary"})
    return table.drop_duplicates(["family", "arm"]).set_index("arm").loc[[f"a{t}" for t in range(trials)]]


def _one_sided(d: np.ndarray, shift: float) -> tuple[float, float]:
    """Exact sign-flip p-values of H0 mean = shift against mean < shift and against mean > shift, by enumeration."""
    centred = d - shift
    flips = np.array(list(itertools.product((1.0, -1.0), repeat=len(d))))
    null = flips @ centred
    observed = centred.sum()
    return float(np.mean(null <= observed + 1e-12)), float(np.mean(null >= observed - 1e-12))


def _enumerated_verdict(direction: str, margin: float, d: np.ndarray) -> str:
    """The module's rules restated as exact one-sided sign-flip tests at α (Hartigan's inversion not used)."""
    below_margin = _one_sided(d, margin)[0] <= ALPHA  # H0 mean >= +m rejected
    above_margin = _one_sided(d, margin)[1] <= ALPHA  # H0 mean <= +m rejected
    above_minus = _one_sided(d, -margin)[1] <= ALPHA  # H0 mean <= -m rejected
    below_minus = _one_sided(d, -margin)[0] <= ALPHA  # H0 mean >= -m rejected
    lower0, upper0 = _one_sided(d, 0.0)
    two_sided = min(1.0, 2 * min(lower0, upper0))
    equivalent = below_margin and above_minus
    if direction in ("better", "worse"):
        wanted = 1 if direction == "better" else -1
        if two_sided <= ALPHA and np.sign(d.mean()) == wanted:
            return "replicated"
        return "contradicted" if two_sided <= ALPHA or equivalent else "inconclusive"
    if direction == "equivalent":
        return "replicated" if equivalent else "contradicted" if above_margin or below_minus else "inconclusive"
    if direction == "not_better":
        return "replicated" if below_margin else "contradicted" if above_margin else "inconclusive"
    return "replicated" if above_minus else "contradicted" if below_minus else "inconclusive"


def test_every_verdict_equals_exact_enumeration_at_8_seeds():
    rng = np.random.default_rng(11)
    margin, n = 0.02, 8
    means = np.repeat([-0.06, -0.03, -0.02, -0.01, 0.0, 0.01, 0.02, 0.03, 0.06], 8)
    diffs = means[:, None] + rng.normal(0.0, 0.02, (len(means), n))
    settings = parse_config(_raw([], equivalence_margin=margin, power_replicates=100)).settings
    table = _one_arm_comparisons(diffs, settings)
    seen = set()
    for direction in predictions.DIRECTIONS:
        for d, row in zip(diffs, table.itertuples()):
            got = predictions.verdict(direction, margin, row)
            assert got == _enumerated_verdict(direction, margin, d), (direction, d)
            seen.add((direction, got))
    # the draws reach every verdict of every direction, so each rule was exercised both ways
    assert seen == {(d, v) for d in predictions.DIRECTIONS for v in ("replicated", "contradicted", "inconclusive")}


def test_lower_is_better_turns_the_directions():
    settings = parse_config(_raw([])).settings
    row = _one_arm_comparisons(np.full((1, 8), -0.1) + np.linspace(0, 0.01, 8), settings).iloc[0]
    assert predictions.verdict("worse", 0.05, row) == "replicated"
    lower_is_better = row.copy()
    lower_is_better["higher_is_better"] = False  # e.g. the optimality gap: a negative difference is better
    assert predictions.verdict("better", 0.05, lower_is_better) == "replicated"
    assert predictions.verdict("not_worse", 0.05, lower_is_better) == "replicated"


# ----------------------------------------------------------------------------- error rates by simulation


@pytest.mark.parametrize(
    "direction, truth, worst",
    [
        ("better", 0.0, "replicated"),  # a true null claimed better: one side of the two-sided Holm test
        ("worse", 0.0, "replicated"),
        ("equivalent", 0.02, "replicated"),  # at the margin: the TOST's size
        ("not_better", 0.02, "replicated"),
        ("not_worse", -0.02, "replicated"),
        ("better", 0.02, "contradicted"),  # a real effect of the margin's size: equivalence claimed at most α
        ("equivalent", 0.0, "contradicted"),
    ],
)
def test_false_verdicts_hold_alpha_at_8_seeds(direction, truth, worst):
    trials, margin = 4000, 0.02
    rng = np.random.default_rng([*predictions.DIRECTIONS, worst].index(direction) + int(1000 * truth) + 77)
    diffs = truth + rng.normal(0.0, 0.02, (trials, 8))
    # the comparisons rows a one-arm family gets (Holm p = p), from the analysis' own exact sign-flip test
    flip = resampling.sign_flip(diffs, confidence=0.95, alpha=ALPHA, margin=margin)
    rows = pd.DataFrame(
        {
            "mean_diff": diffs.mean(1),
            "reject": flip["p_value"] <= ALPHA,
            "eq_low": flip["eq"][:, 0],
            "eq_high": flip["eq"][:, 1],
            "higher_is_better": True,
        }
    )
    rate = np.mean([predictions.verdict(direction, margin, row) == worst for row in rows.itertuples()])
    bound = ALPHA / 2 if direction in ("better", "worse") and worst == "replicated" else ALPHA
    assert rate <= bound + 3 * mc_error(bound, trials), (direction, truth, rate)


@pytest.mark.parametrize(
    "predicted, expected",
    [
        ([BIG_BETTER, NULL_EQUIVALENT], ["replicated", "replicated"]),
        # wrong on purpose: the planted effect claimed equivalent, the planted null claimed better (it is
        # equivalent within the margin: no effect worth the name)
        ([{**BIG_BETTER, "direction": "equivalent"}, {**NULL_EQUIVALENT, "direction": "better"}], ["contradicted"] * 2),
        (
            [{**BIG_BETTER, "direction": "not_better"}, {**NULL_EQUIVALENT, "direction": "not_worse"}],
            ["contradicted", "replicated"],
        ),
    ],
)
def test_planted_effect_and_null_are_found_by_the_whole_analysis(predicted, expected):
    config = parse_config(_raw(predicted))
    result = pipeline.run_analysis(config, _scores(), lock={"predictions": config.predictions})
    assert result.replications["arm"].tolist() == ["big", "null"]
    assert result.replications["verdict"].tolist() == expected


def _scores():
    return synthetic_scores(
        arms=["ref", "big", "null"],
        seeds=range(1, 9),
        benchmarks=BENCHMARKS,
        items=None,
        rng=np.random.default_rng(5),
        effects={"big": 0.5},
        run_sd=0.01,
        experiment="predicted",
    )


# ----------------------------------------------------------------------------- the lock


def test_the_lock_is_written_before_runs_only_and_never_rewritten(tmp_path):
    config = parse_config(_raw([BIG_BETTER]))
    line = locks.write_predictions_lock(tmp_path, config)
    assert line.startswith("predictions: 1 locked") and files.file_sha256(tmp_path / predictions.LOCK) in line
    lock = json.loads((tmp_path / predictions.LOCK).read_text())
    assert lock["hash"] == predictions.predictions_hash(config.predictions, lock["meanings"]) and lock["locked_at"]
    assert lock["meanings"] == [predictions.meaning(p, config) for p in config.predictions]
    assert lock["git_commit"] == files.git_commit() and lock["git_dirty"] == files.git_dirty()
    before = (tmp_path / predictions.LOCK).read_bytes()
    assert locks.write_predictions_lock(tmp_path, parse_config(_raw([NULL_EQUIVALENT]))) is None
    assert (tmp_path / predictions.LOCK).read_bytes() == before


@pytest.mark.parametrize(
    "evidence",
    [
        "runs/grpo/.seed-1.tmp",  # a run begun, not finished
        "runs/grpo/seed-1",
        "evals/grpo/seed-1",  # the runs deleted, their evaluations kept
        "logs/eval/grpo/seed-1.log",  # only a log left: it holds the accuracies
        "scores.parquet",
        "analysis",
        "curves/grpo/seed-1",
        "sequential/look-1.json",
    ],
)
def test_no_lock_once_any_output_exists_whatever_was_deleted(tmp_path, evidence):
    config = parse_config(_raw([BIG_BETTER]))
    path = tmp_path / evidence
    path.parent.mkdir(parents=True, exist_ok=True)
    path.mkdir() if "." not in path.name or path.name.startswith(".") else path.write_text("x")
    line = locks.write_predictions_lock(tmp_path, config)
    assert line.startswith("predictions: not locked, because 1 training or evaluation output(s)"), line
    assert str(path) in line and not (tmp_path / predictions.LOCK).exists()


def test_an_edited_lock_is_refused(tmp_path):
    locks.write_predictions_lock(tmp_path, parse_config(_raw([BIG_BETTER])))
    path = tmp_path / predictions.LOCK
    lock = json.loads(path.read_text())
    lock["predictions"][0]["direction"] = "worse"
    path.write_text(json.dumps(lock))
    with pytest.raises(AnalysisInputError, match="do not match its hash: the lock was edited"):
        predictions.read_lock(path)


def test_registration_follows_the_lock_and_a_locked_prediction_cannot_be_withdrawn(tmp_path):
    locks.write_predictions_lock(tmp_path, parse_config(_raw([BIG_BETTER])))
    lock = predictions.read_lock(tmp_path / predictions.LOCK)
    # after the lock: the locked prediction dropped from the config, another added
    config = parse_config(_raw([NULL_EQUIVALENT]))
    result = pipeline.run_analysis(config, _scores(), lock=lock)
    table = result.replications.set_index("arm")
    assert table.loc["big", ["registration", "in_config", "verdict"]].tolist() == ["confirmatory", False, "replicated"]
    assert table.loc["null", ["registration", "in_config"]].tolist() == ["exploratory", True]
    marks = result.comparisons.drop_duplicates(["arm", "measure"]).set_index(["arm", "measure"])["registration"]
    assert marks.to_dict() == {
        ("big", "domain_balanced"): "confirmatory",
        ("null", "domain_balanced"): "exploratory",
        ("big", "flat"): "exploratory",
        ("null", "flat"): "exploratory",
    }
    unlocked = pipeline.run_analysis(config, _scores())
    assert set(unlocked.replications["registration"]) == {"exploratory"}
    assert any("were not locked before the runs began" in note for note in unlocked.notes)


def test_the_report_shows_the_replication_table(tmp_path):
    raw = _raw([BIG_BETTER, NULL_EQUIVALENT])
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw))
    config = parse_config(raw, str(tmp_path / "config.yaml"))
    locks.write_predictions_lock(tmp_path, dataclasses.replace(config, predictions=config.predictions[:1]))
    result = pipeline.run_analysis(config, _scores(), lock=predictions.read_lock(tmp_path / predictions.LOCK))
    pipeline.write_outputs(result, tmp_path / "analysis")
    html = report.write_report(tmp_path / "config.yaml", tmp_path / "analysis", tmp_path / "report").read_text()
    section = html[html.index('<section id="replication">') :].split("</section>")[0]
    assert "confirmatory: 1 replicated; exploratory: 1 replicated." in section
    assert "<td>big is better than ref</td><td>planted effect</td><td>big vs ref (domain_balanced)</td>" in section
    assert '<a href="#replication">' in html
    markdown = (tmp_path / "analysis" / "report.md").read_text()
    assert "## Replication of the predictions" in markdown and "| null is within ±5 point(s) of ref |" in markdown

    without = tmp_path / "without"
    raw_without = _raw([])
    without.mkdir()
    (without / "config.yaml").write_text(yaml.safe_dump(raw_without))
    pipeline.write_outputs(pipeline.run_analysis(parse_config(raw_without), _scores()), without / "analysis")
    html = report.write_report(without / "config.yaml", without / "analysis", without / "report").read_text()
    assert 'id="replication"' not in html and "#replication" not in html


FORMULAS = {  # a config's free text that a spreadsheet would run: each kind of formula start
    "claim": '=HYPERLINK("http://attacker.example","click")',
    "source": "@SUM(1+1)*cmd|' /C calc'!A0",
}


def test_every_csv_the_analysis_writes_is_spreadsheet_safe(tmp_path):
    raw = _raw([{**BIG_BETTER, **FORMULAS}, {**NULL_EQUIVALENT, "claim": "+1+cmd", "source": "-2+3+cmd"}])
    config = parse_config(raw, str(tmp_path / "config.yaml"))
    pipeline.write_outputs(pipeline.run_analysis(config, _scores()), tmp_path / "analysis")
    replications = pd.read_csv(tmp_path / "analysis" / "replications.csv", keep_default_na=False)
    assert list(replications["claim"]) == ["'" + FORMULAS["claim"], "'+1+cmd"]
    assert list(replications["source"]) == ["'" + FORMULAS["source"], "'-2+3+cmd"]
    for path in (tmp_path / "analysis").glob("*.csv"):
        for row in csv.reader(path.open(newline="")):
            for cell in row:
                assert not cell.startswith(files.FORMULA_PREFIXES) or _is_number(cell), (path.name, cell)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_a_bare_carriage_return_stays_inside_its_cell(tmp_path):
    """On 14ef595 a CR in a config's text (allowed there) was written unquoted: readers took it as the end of the row
    and the rest of the cell, a formula, as the first cell of the next, not neutralised."""
    files.write_csv(pd.DataFrame({"source": ["\r=cmd|' /C calc'!A0", "ok"], "n": [1, 2]}), tmp_path / "t.csv")
    with open(tmp_path / "t.csv", newline="") as f:
        assert list(csv.reader(f)) == [["source", "n"], ["\n=cmd|' /C calc'!A0", "1"], ["ok", "2"]]


@pytest.mark.parametrize(
    "cell, written",
    [
        ("=1+1", "'=1+1"),
        ("+a", "'+a"),
        ("-x", "'-x"),
        ("@x", "'@x"),
        ("\tq", "'\tq"),
        ("\rq", "\nq"),  # a bare CR becomes a line feed, which the CSV writer quotes
        ("-0.25", "-0.25"),  # numbers stay numbers
        ("+inf", "+inf"),
        ("grpo vs ref", "grpo vs ref"),
        ("a=b", "a=b"),  # only the first character counts
        (1.5, 1.5),
        (None, None),
    ],
)
def test_spreadsheet_safe_follows_the_owasp_rule(cell, written):
    assert files.spreadsheet_safe(cell) == written
