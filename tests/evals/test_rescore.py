"""Grader sensitivity (armlab rescore): the verifiers against their published rules and against independent gradings,
the stored answers re-graded without generating anything, the analysis rerun per verifier, a planted grader-dependent
effect flagged as a flip and a planted null not flagged, nothing the evaluations or the analysis wrote changed, and bad
input refused in one line."""

import hashlib
import importlib.util
import json
import re
import shutil
from pathlib import Path

import lm_eval
import numpy as np
import pandas as pd
import pytest
import yaml

from armlab import cli, experiment, files
from armlab.analysis import pipeline
from armlab.analysis.config import load_config
from armlab.analysis.reporting import read, sections
from armlab.analysis.screens import verifier_sensitivity
from armlab.configfile import ConfigError
from armlab.evals.lm_eval_tasks import process_results
from armlab.evals.merge import merge
from armlab.evals.rescore import Evaluation, regrade
from armlab.evals.run import ANSWERS, answer_verdicts, samples_to_scores
from armlab.evals.verifiers import GRADED, UNPARSED, VERIFIERS, rule_of

boxed, last_number, normalised_exact = (VERIFIERS[n] for n in ("boxed", "last_number", "normalised_exact"))


# ---- each verifier against its rule: planted forms it must accept and reject ---------------------------------------


@pytest.mark.parametrize(
    ("reference", "response", "correct", "extracted"),
    [
        ("\\frac{1}{2}", "First \\boxed{3}, then the answer is \\boxed{\\frac12}.", 1.0, "\\frac12"),  # the last one
        ("3", "First \\boxed{3}, then \\boxed{4}.", 0.0, "4"),  # only the last box counts
        ("\\frac{1}{2}", "\\boxed{\\dfrac{1}{2}}", 1.0, "\\dfrac{1}{2}"),
        ("\\frac{1}{2}", "\\boxed{1/2}", 1.0, "1/2"),
        ("(1,2)", "so \\boxed{\\left( 1, 2 \\right)}", 1.0, "\\left( 1, 2 \\right)"),  # nested braces, \left
        ("\\sqrt{3}", "\\fbox{\\sqrt3}", 1.0, "\\sqrt3"),  # \fbox, and MATH's sqrt fix
        ("5", "\\boxed{5 \\text{ cm}}", 1.0, "5 \\text{ cm}"),  # units
        ("0.5", "\\boxed{0.50}", 0.0, "0.50"),  # normalisation, not numeric equivalence
    ],
)
def test_boxed_reads_only_the_last_box_and_compares_normalised_strings(reference, response, correct, extracted):
    verdict = boxed.grade({"answer": reference}, response)
    assert (verdict.correct, verdict.extracted, verdict.status) == (correct, extracted, GRADED)


@pytest.mark.parametrize("response", ["The answer is 3.", "$3$", "\\boxed 3", "\\boxed{3", "3 \\box{3}", ""])
def test_boxed_without_a_closed_box_is_unparsed(response):
    assert boxed.grade({"answer": "3"}, response).status == UNPARSED


@pytest.mark.parametrize(
    ("reference", "response", "correct", "extracted"),
    [
        ("18", "3 + 15 = 18", 1.0, "18"),  # the last number, whatever surrounds it
        ("18", "18 is wrong, it is 17", 0.0, "17"),
        ("18", "Total: 18.00 dollars.", 1.0, "18.00"),  # exact decimals: 18.00 is 18
        ("1000", "It costs $1,000.", 1.0, "$1,000."),  # lm-eval drops "$", "," and a trailing "."
        ("-4", "so x = -4", 1.0, "-4"),
        ("0.25", "p = .25", 1.0, ".25"),
        ("3", "\\boxed{3}", 1.0, "3"),
        ("12", "I think 1.2", 0.0, "1.2"),
    ],
)
def test_last_number_reads_the_last_number_anywhere(reference, response, correct, extracted):
    verdict = last_number.grade({"answer": reference}, response)
    assert (verdict.correct, verdict.extracted, verdict.status) == (correct, extracted, GRADED)


def test_last_number_leaves_items_it_cannot_read_and_answers_without_a_number():
    assert not last_number.applies({"answer": "\\frac{1}{2}"}) and not last_number.applies({"answer": "T"})
    assert last_number.applies({"answer": "-3.5"})
    assert last_number.grade({"answer": "3"}, "three").status == UNPARSED
    assert last_number.grade({"answer": "3"}, "it is 3..4").status == UNPARSED  # a match that is no number


@pytest.mark.parametrize(
    ("reference", "response", "correct"),
    [
        ("12", " 12\n", 1.0),
        ("\\frac{1}{2}", "1/2", 1.0),
        ("\\frac{1}{2}", "\\dfrac12", 1.0),
        ("0.4", ".4", 1.0),
        ("5", "5\\text{ cm}", 1.0),
        ("12", "The answer is 12", 0.0),  # the whole response, not an answer in it
        ("12", "\\boxed{12}", 0.0),  # boxes kept
        ("12", "12.0", 0.0),  # strings, not numbers
    ],
)
def test_normalised_exact_compares_the_whole_normalised_response(reference, response, correct):
    assert normalised_exact.grade({"answer": reference}, response).correct == correct


def test_votes_follow_each_rules_normal_form():
    from armlab.evals.verifiers import vote_classes

    verdicts = [last_number.grade({"answer": "2"}, r) for r in ("2", "2.0", "$2.", "3", "none")]
    assert vote_classes(verdicts, last_number.same) == [0, 0, 0, 1, -1]
    verdicts = [boxed.grade({"answer": "1/2"}, r) for r in ("\\boxed{\\frac12}", "\\boxed{1/2}", "\\boxed{2}")]
    assert vote_classes(verdicts, boxed.same) == [0, 0, 1]


# ---- each verifier against an independent grading: lm-eval's own implementations of the published rules ----------


def _hendrycks_math():
    """lm-eval's copy of Hendrycks et al.'s MATH grading code (loaded from its file: the package's task index would
    take seconds)."""
    path = Path(lm_eval.__file__).parent / "tasks" / "hendrycks_math" / "utils.py"
    spec = importlib.util.spec_from_file_location("hendrycks_math_utils", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _math_answers() -> list[tuple[str, str]]:
    """(reference, response) pairs of MATH-style answers on which MATH's normalisation and math-verify's agree."""
    values = ["3", "-7", "\\frac{1}{2}", "\\frac{3}{4}", "\\sqrt{2}", "12", "0.25", "(1,2)", "x^2"]
    forms = {
        "3": ["3", "4", " 3 "],
        "-7": ["-7", "7"],
        "\\frac{1}{2}": ["\\frac12", "\\dfrac{1}{2}", "1/2", "\\tfrac{1}{2}", "\\frac{1}{3}"],
        "\\frac{3}{4}": ["3/4", "\\frac34", "4/3"],
        "\\sqrt{2}": ["\\sqrt2", "\\sqrt{2}", "\\sqrt{3}"],
        "12": ["12", "12 ", "21"],
        "0.25": ["0.25", ".25", "0.52"],
        "(1,2)": ["(1, 2)", "\\left(1,2\\right)", "(2,1)"],
        "x^2": ["x^2", "x^{2}", "x^3"],
    }
    return [(value, form) for value in values for form in forms[value]]


def test_boxed_and_normalised_exact_agree_with_hendrycks_math_grading():
    """MATH's own rule (lm-eval's hendrycks_math: last_boxed_only_string, remove_boxed, is_equiv) on answers boxed
    in several ways and given bare, beside planted wrong ones."""
    math = _hendrycks_math()
    graded = 0
    for reference, form in _math_answers():
        for response in (f"so \\boxed{{{form}}}.", f"first \\boxed{{0}} then \\boxed{{{form}}}", f"no box: {form}"):
            box = math.last_boxed_only_string(response)
            expected = float(box is not None and math.is_equiv(math.remove_boxed(box), reference))
            assert boxed.grade({"answer": reference}, response).correct == expected, (reference, response)
            graded += 1
        assert normalised_exact.grade({"answer": reference}, form).correct == float(math.is_equiv(form, reference))
    assert graded == 3 * len(_math_answers())


def test_last_number_agrees_with_lm_evals_gsm8k_flexible_extract_and_exact_match():
    """lm-eval's GSM8K task: the flexible-extract filter (its regex, the last match) and exact_match with the task's
    regexes_to_ignore, on GSM8K-style answers whose numbers are written one way (lm-eval compares strings, so
    "18.0" is not 18 there; the rule here compares exact decimals, tested above)."""
    from lm_eval.api.metrics import exact_match_hf_evaluate
    from lm_eval.filters.extraction import RegexFilter

    flexible = RegexFilter(regex_pattern=r"(-?[$0-9.,]{2,})|(-?[0-9]+)", group_select=-1)
    ignore = [",", "\\$", "(?s).*#### ", "\\.$"]
    rng = np.random.default_rng(0)
    cases = []
    for _ in range(200):
        a, b = (int(x) for x in rng.integers(-50, 5000, size=2))
        words = rng.choice(["so", "we get", "Total:", "thus $", "answer"])
        cases.append((str(a), f"{words} {b:,}." if rng.random() < 0.5 else f"{words} {a}"))
    cases += [("42", "no number here"), ("7", "#### 7"), ("1000", "It is $1,000")]
    extracted = flexible.apply([[response] for _, response in cases], [{} for _ in cases])
    for (reference, response), (found,) in zip(cases, extracted):
        kwargs = {"regexes_to_ignore": ignore, "ignore_case": True}
        expected = exact_match_hf_evaluate([found], [reference], **kwargs)["exact_match"]
        assert last_number.grade({"answer": reference}, response).correct == expected, (reference, response, found)
    assert 0 < np.mean([last_number.grade({"answer": r}, s).correct for r, s in cases]) < 1


# ---- a results folder of stored answers: a planted grader-dependent effect and a planted null ---------------------

SEEDS, ITEMS, K = list(range(1, 9)), 30, 2
# each arm's chance of a right answer, and how it writes it: "terse" and "twin" write the bare number, which every
# grader reads; "verbose" writes a sentence, which exact matching (the configured grader) never accepts but the
# lenient last-number reads: worse under the configured grader, better under last_number
ARMS = {"terse": (0.5, "{}"), "verbose": (0.8, "so it is {}."), "twin": (0.5, "{}")}
CONFIG = {
    "experiment": "graders",
    "seeds": SEEDS,
    "benchmarks": {"arith": {"domain": "math"}},
    "comparisons": [{"family": "format", "reference": "terse", "arms": ["verbose", "twin"]}],
    "analysis": {"resamples": 200, "power_replicates": 100, "verifiers": ["last_number", "lm_eval"]},
}


def _write_evaluation(results: Path, arm: str, seed: int) -> None:
    """One evaluation as armlab writes it: lm-eval's logged samples (graded by the task configs' process_results
    with the item's verifier, exact here), the tidy scores, the answers' verdicts and a manifest."""
    chance, form = ARMS[arm]
    rng = np.random.default_rng([seed, list(ARMS).index(arm)])
    samples = []
    for i in range(ITEMS):
        answer = 10 + i
        doc = {"id": f"arith-{i:03d}", "benchmark": "arith", "domain": "math", "task": "", "verifier": "exact"}
        doc |= {"prompt": f"{i}+10=", "answer": str(answer)}
        responses = [form.format(answer if rng.random() < chance else answer + 1) for _ in range(K)]
        samples.append(
            {"doc_id": i, "doc": doc, "target": doc["answer"], "resps": [responses], "filtered_resps": [responses]}
            | {"filter": "samples", **process_results(doc, [responses])}
        )
    folder = results / "evals" / arm / f"seed-{seed}"
    folder.mkdir(parents=True)
    with open(folder / "samples_armlab_arith.jsonl", "w") as f:
        f.writelines(json.dumps(sample) + "\n" for sample in samples)
    samples_to_scores({"armlab_arith": samples}, "graders", arm, seed).to_parquet(folder / "scores.parquet")
    answer_verdicts({"armlab_arith": samples}).to_parquet(folder / ANSWERS, index=False)
    names = sorted(p.name for p in folder.iterdir())
    files.write_manifest(folder, {"arm": arm, "seed": seed, "seconds": 60.0}, *names)


def _write_results(results: Path) -> Path:
    """results/graders after its evaluations, merge and analysis, as the workflow leaves it."""
    for arm in ARMS:
        for seed in SEEDS:
            _write_evaluation(results, arm, seed)
    merge(sorted(results.glob("evals/*/seed-*/scores.parquet"))).to_parquet(results / "scores.parquet", index=False)
    (results / "config").mkdir()
    (results / "config" / "analysis.json").write_text(json.dumps(CONFIG))
    config = load_config(results / "config" / "analysis.json")
    pipeline.write_outputs(pipeline.analyze(config, results / "scores.parquet", results), results / "analysis")
    return results


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


@pytest.fixture(scope="module")
def rescored(tmp_path_factory):
    """The results folder, its files' hashes before, and ``armlab rescore`` of it (the config's verifiers)."""
    results = _write_results(tmp_path_factory.mktemp("rescore") / "graders")
    before = _hashes(results)
    assert cli.main(["rescore", str(results)]) == 0
    return results, before, verifier_sensitivity.read_table(results / "analysis" / verifier_sensitivity.TABLE, "x")


def _cell(table: pd.DataFrame, verifier: str, arm: str, measure: str = "domain_balanced") -> pd.Series:
    rows = table[(table["verifier"] == verifier) & (table["arm"] == arm) & (table["measure"] == measure)]
    assert len(rows) == 1
    return rows.iloc[0]


def test_a_format_only_the_lenient_grader_reads_is_flagged_as_a_flip(rescored):
    results, _, table = rescored
    configured = verifier_sensitivity.verdict_cells(pd.read_csv(results / "analysis" / "comparisons.csv"))
    assert configured.set_index("arm").loc["verbose", "verdict"] == "worse"
    flipped = _cell(table, "last_number", "verbose")
    assert (flipped.configured_verdict, flipped.verdict, bool(flipped.flip)) == ("worse", "better", True)
    assert flipped.mean_diff > 0.2 and flipped.configured_mean_diff < -0.4
    assert flipped.regraded == "arith" and flipped.unparsed_arm == 0 and flipped.changed_arm > 0.7
    flips = table[table["flip"]]
    assert set(flips["arm"]) == {"verbose"} and set(flips["verifier"]) == {"last_number"}
    analysis = read.read_analysis(results / "analysis", "graders")
    page = sections.Page(load_config(results / "config" / "analysis.json"), analysis)
    html = sections.SECTIONS["grader"].render(page)
    assert html.startswith('<section id="grader"><h2>Robust to the grader?</h2>')
    assert "last_number: format: verbose vs terse on domain_balanced: worse -&gt; better" in html


def test_a_planted_null_is_not_flagged(rescored):
    """twin answers like the reference, with the same chance: every grader reads it alike, no verdict of it moves."""
    _, _, table = rescored
    twin = table[table["arm"] == "twin"]
    assert len(twin) and not twin["flip"].any()
    assert (twin["mean_diff"] == twin["configured_mean_diff"]).all()


def test_the_configured_grading_rerun_reproduces_the_configured_analysis(rescored):
    """lm_eval re-applies the task configs' own grading to the stored answers: every verdict and vote is the
    evaluation's, so its scores are the evaluation's and the analysis of them is the configured one to the bit (which
    is why the rescore does not run it again)."""
    results, _, table = rescored
    mine = table[table["verifier"] == "lm_eval"]
    configured = pd.read_csv(results / "analysis" / "comparisons.csv")
    assert len(mine) == len(verifier_sensitivity.verdict_cells(configured))
    assert (mine["mean_diff"] == mine["configured_mean_diff"]).all() and not mine["flip"].any()
    scores = pd.read_parquet(results / "verifiers" / "lm_eval" / "scores.parquet")
    pd.testing.assert_frame_equal(scores, pd.read_parquet(results / "scores.parquet"))
    answers = pd.read_parquet(results / "verifiers" / "lm_eval" / "answers.parquet")
    config = load_config(results / "config" / "analysis.json")
    again = pipeline.run_analysis(config, scores, "again", answers=answers).comparisons
    for column in ("mean_diff", "decision_low", "decision_high", "p_holm", "reject", "equivalent"):
        assert again[column].tolist() == configured[column].tolist(), column
    assert not (results / "verifiers" / "lm_eval" / "comparisons.csv").exists()


def test_nothing_the_evaluations_or_the_analysis_wrote_changes(rescored):
    """Every file there before the rescore is byte-identical after; the analysis's marker only lists the new table."""
    results, before, _ = rescored
    after = _hashes(results)
    marker = f"analysis/{files.OUTPUT_MARKER}"
    assert {name: after[name] for name in before if name != marker} == {n: h for n, h in before.items() if n != marker}
    assert verifier_sensitivity.TABLE in json.loads((results / marker).read_text())["entries"]
    new = sorted(set(after) - set(before))
    assert f"analysis/{verifier_sensitivity.TABLE}" in new and all(
        n.startswith("verifiers/") for n in new if n != f"analysis/{verifier_sensitivity.TABLE}"
    )
    # the analysis's next run replaces the table with the rest of its folder instead of refusing the folder
    files.check_output_directory(results / "analysis", "analyze")


def test_the_regraded_answers_equal_an_independent_count(rescored):
    """The re-graded scores of a run are the last numbers of its logged answers counted by hand."""
    results, _, _ = rescored
    folder = results / "evals" / "verbose" / "seed-3"
    found = regrade(Evaluation.read(folder), last_number)
    for line in (folder / "samples_armlab_arith.jsonl").read_text().splitlines():
        sample = json.loads(line)
        right = sum(re.findall(r"\d+", a)[-1] == sample["doc"]["answer"] for a in sample["resps"][0])
        row = found.scores[found.scores["item"] == sample["doc"]["id"]].iloc[0]
        assert (row.n_correct, row.score) == (right, right / K)
    changed = found.scores["n_correct"].sum()  # exact matching, the configured grader, read none of its sentences
    expected = {"benchmark": "arith", "answers": ITEMS * K, "regraded": ITEMS * K, "unparsed": 0, "changed": changed}
    assert found.grading.to_dict("records") == [expected]


# ---- bad input: one line, before any work ----------------------------------------------------------------------


def test_an_unknown_verifier_is_one_line_with_near_misses(rescored, capsys):
    results, _, _ = rescored
    assert cli.main(["rescore", str(results), "--verifier", "lastnumber"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "--verifier: unknown verifier 'lastnumber'; did you mean 'last_number'?" in error
    assert all(name in error for name in VERIFIERS)


def test_a_folder_without_stored_answers_is_one_line_naming_it(rescored, tmp_path, capsys):
    results, _, _ = rescored
    copy = shutil.copytree(results, tmp_path / "graders")
    for path in (copy / "evals" / "twin" / "seed-2").glob("samples_*.jsonl"):
        path.unlink()
    before = _hashes(copy)
    assert cli.main(["rescore", str(copy)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"{copy / 'evals' / 'twin' / 'seed-2'}: no stored answers to re-grade" in error
    assert _hashes(copy) == before
    assert cli.main(["rescore", str(tmp_path / "nothing")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_a_rescore_needs_the_configured_analysis_of_its_own_config(rescored, tmp_path, capsys):
    """Before the analysis, or beside an analysis under other settings, there is no configured verdict to compare."""
    results, _, _ = rescored
    copy = shutil.copytree(results, tmp_path / "graders")
    config = json.loads((copy / "config" / "analysis.json").read_text())
    (copy / "config" / "analysis.json").write_text(
        json.dumps(config | {"analysis": {**config["analysis"], "alpha": 0.1}})
    )
    assert cli.main(["rescore", str(copy)]) == 2
    assert "the analysis ran under other settings than" in capsys.readouterr().err
    shutil.rmtree(copy / "analysis")
    assert cli.main(["rescore", str(copy)]) == 2
    error = capsys.readouterr().err
    assert (
        error.count("\n") == 1
        and "not an output of `armlab analyze`" in error
        and "run `armlab analyze` first" in error
    )


def test_the_workflow_refuses_an_unknown_verifier_before_any_job(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(json.dumps({"analysis": {"verifiers": ["math_verify", "boxd"]}}))
    tiny = Path(__file__).parents[1] / "fixtures" / "tiny.yaml"
    with pytest.raises(ConfigError, match=r"analysis\.verifiers: unknown verifier 'boxd'; did you mean 'boxed'\?"):
        experiment.load([tiny, path])


def test_the_verifier_table_of_the_methods_is_the_registrys():
    """docs/methods.md, "Verifiers": one row per verifier, its rule the first line of its docstring."""
    docs = (Path(__file__).parents[2] / "docs" / "methods.md").read_text().split("## Verifiers")[1]
    rows = [line for line in docs.splitlines() if line.startswith("| `")]
    expected = [f"| `{name}` | {rule_of(verifier).replace('``', '`')} |" for name, verifier in VERIFIERS.items()]
    assert rows == expected, "docs/methods.md, Verifiers: rewrite the table from the registry:\n" + "\n".join(expected)


def test_the_workflow_rescores_after_the_analysis_when_the_config_names_verifiers(tmp_path):
    """A dry run of the tiny experiment with analysis.verifiers: one rescore job, between analyze and report."""
    from conftest import TINY, job_counts, snakemake_dry_run

    config = yaml.safe_load(TINY.read_text())
    config["analysis"] = {**config.get("analysis", {}), "verifiers": ["last_number", "lm_eval"]}
    path = tmp_path / "tiny_rescored.yaml"
    path.write_text(yaml.safe_dump(config))
    dry = snakemake_dry_run(tmp_path, path)
    output = dry.stdout + dry.stderr
    assert job_counts(output)["rescore"] == 1 and "python -m armlab rescore results/tiny > results/tiny/logs" in output


def test_a_measure_weighs_its_summarys_benchmarks_and_pass_at_k_the_primarys(tmp_path):
    """The primary summary is the first of weights.csv, not the first by name."""
    rows = {"summary": ["primary", "primary", "aaa", "aaa"], "benchmark": ["x", "y", "x", "y"], "weight": [1, 1, 1, 0]}
    pd.DataFrame(rows).to_csv(tmp_path / "weights.csv", index=False)
    weights = verifier_sensitivity.read_weights(tmp_path / "weights.csv")
    measures = ("aaa", "pass@4", "maj@4", "y", "y:pass@4", "x:maj@4")
    found = {m: verifier_sensitivity.measure_benchmarks(weights, m) for m in measures}
    assert found == {
        **{"aaa": ["x"], "pass@4": ["x", "y"], "maj@4": ["x", "y"]},
        **{"y": ["y"], "y:pass@4": ["y"], "x:maj@4": ["x"]},  # a benchmark's own accuracy, pass@k and maj@k
    }


def test_choice_on_a_benchmark_without_option_letters_is_refused_at_the_start(tmp_path):
    """Before, every answer of such a benchmark was graded wrong; choice now says it cannot read the reference."""
    from armlab.evals.catalogue import external_items

    path = tmp_path / "gsm.jsonl"
    path.write_text(json.dumps({"question": "1+1=", "answer": "so\n#### 2"}) + "\n")
    spec = {"source": "file", "format": "gsm8k", "path": str(path), "domain": "math", "verifier": "choice"}
    with pytest.raises(
        ConfigError, match=r"eval\.external\.g: item g-00000: reference answer '2': not an option letter"
    ):
        external_items({"experiment": "x", "eval": {"external": {"g": spec}}})
