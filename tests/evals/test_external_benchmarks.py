"""Benchmarks from outside armlab's task families: the verifiers, the catalogue's formats read from local files in
their published schemas (synthetic items the tests write, never the real data), sampled evaluation with a verdict
per answer, and bad input refused in one line before any job."""

import hashlib
import json
import re
import time
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from armlab import experiment
from armlab.configfile import ConfigError
from armlab.evals.catalogue import FORMATS, after_hashes, external_items, read_rows
from armlab.evals.verifiers import GRADED, TIMEOUT, UNPARSED, VERIFIERS, MathVerify, grade, vote_classes

TINY = Path("tests/fixtures/tiny.yaml")
math_verify = VERIFIERS["math_verify"]
choice = VERIFIERS["choice"]


# ---- verifiers ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reference", "response", "correct"),
    [
        # math-verify's README: "${1,3} \cup {2,4}$" against "${1,2,3,4}$" is True
        ("${1,3} \\cup {2,4}$", "${1,2,3,4}$", 1.0),
        # planted equivalent forms of one half, and a wrong one
        ("\\frac{1}{2}", "The answer is \\boxed{0.5}.", 1.0),
        ("\\frac{1}{2}", "so the probability is $1/2$", 1.0),
        ("0.5", "\\boxed{\\dfrac{1}{2}}", 1.0),
        ("\\frac{1}{2}", "\\boxed{\\frac{2}{3}}", 0.0),
        # symbolic and formatting equivalence
        ("3\\sqrt{13}", "\\boxed{\\sqrt{117}}", 1.0),
        ("1000", "Total: \\boxed{1{,}000}", 1.0),
        ("(3, \\frac{\\pi}{2})", "\\boxed{(3,\\frac{\\pi}{2})}", 1.0),
        ("72", "Natalia sold 48/2 = 24 clips in May.\nThe final answer is 72", 1.0),
        ("72", "The final answer is 27", 0.0),
        # math-verify's tests/test_all.py: thousands separators and a bare leading point
        ("7425000", "7,425,000", 1.0),
        ("0.4", ".4", 1.0),
    ],
)
def test_math_verify_grades_equivalent_forms(reference, response, correct):
    verdict = math_verify.grade({"answer": reference}, response)
    assert (verdict.correct, verdict.status) == (correct, GRADED)
    assert verdict.extracted


@pytest.mark.parametrize("response", ["I do not know.", "", "   "])
def test_an_answer_without_a_readable_answer_is_unparsed_and_wrong(response):
    assert math_verify.grade({"answer": "7"}, response) == type(math_verify.grade({"answer": "7"}, "7"))(
        0.0, "", UNPARSED
    )


def test_a_verifier_timeout_is_counted_wrong_not_dropped(monkeypatch):
    """A real SIGALRM timeout of math-verify's parser (patched to hang) is a TIMEOUT verdict within the limit."""
    import math_verify.parser

    monkeypatch.setattr(math_verify.parser, "extract_target_from_pred", lambda *a, **k: time.sleep(10))
    start = time.perf_counter()
    verdict = MathVerify(timeout_seconds=1).grade({"answer": "7"}, "\\boxed{7}")
    assert (verdict.correct, verdict.status) == (0.0, TIMEOUT)
    assert time.perf_counter() - start < 5


def _last_number(text: str) -> Fraction | None:
    numbers = re.findall(r"-?\d+(?:\.\d+)?(?:/\d+)?", text.replace(",", ""))
    return Fraction(numbers[-1]) if numbers else None


def test_math_verify_agrees_with_an_independent_grading_of_numeric_answers():
    """GSM8K-style answers: math-verify's verdicts equal the last number compared as an exact fraction."""
    cases = [("18", f"{a} {op}\n#### {b}") for a in ("so", "we get") for op in ("thus", "hence") for b in range(15, 22)]
    cases += [("1/4", "it is 0.25"), ("1/4", "it is 1/4"), ("0.25", "it is 1/3"), ("42", "no number here")]
    for reference, response in cases:
        independent = _last_number(response)
        expected = float(independent is not None and independent == Fraction(reference))
        assert math_verify.grade({"answer": reference}, response).correct == expected, (reference, response)


@pytest.mark.parametrize(
    ("response", "letter"),
    [
        ("Reasoning...\nAnswer: C", "C"),
        ("The answer is (B).", "B"),
        ("\\boxed{D}", "D"),
        ("I pick A) since ... Answer: $J$", "J"),
        ("answer: b", "B"),
    ],
)
def test_choice_reads_the_chosen_letter(response, letter):
    verdict = choice.grade({"answer": "C"}, response)
    assert verdict.extracted == letter
    assert verdict.correct == float(letter == "C")


def test_choice_without_a_letter_is_unparsed():
    assert choice.grade({"answer": "C"}, "none of them").status == UNPARSED


def test_votes_join_equivalent_answers_and_leave_out_unparsed_ones():
    verdicts = [
        math_verify.grade({"answer": "1/2"}, r) for r in ("\\boxed{1/2}", "0.5", "\\boxed{3}", "no", "$\\frac{1}{2}$")
    ]
    assert vote_classes(verdicts, math_verify.same) == [0, 0, 1, -1, 0]


def test_an_armlab_family_item_keeps_its_exact_verifier():
    item = {"task": "add", "answer": "7", "verifier": ""}
    assert grade(item, "7").correct == 1.0
    assert grade(item, " 7.0").correct == 0.0  # exact integers, not math equivalence
    assert grade(item, "").status == UNPARSED


# ---- the catalogue: published schemas, local files ----------------------------------------------------------------


def _write(path: Path, rows: list[dict]) -> Path:
    if path.suffix == ".parquet":
        pd.DataFrame(rows).to_parquet(path)
    elif path.suffix == ".csv":
        pd.DataFrame(rows).to_csv(path, index=False)
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


SYNTHETIC = {  # format -> (file name, rows in its published schema; synthetic items)
    "gsm8k": ("test.jsonl", [{"question": "Tom has 3+4 apples?", "answer": "3+4=7\n#### 7"}]),
    "math500": (
        "test.jsonl",
        [
            {
                "problem": "Half of 1?",
                "solution": "...",
                "answer": "\\frac{1}{2}",
                "subject": "A",
                "level": 1,
                "unique_id": "test/x/1.json",
            }
        ],
    ),  # fmt: skip
    "aime2024": ("train.parquet", [{"id": 60, "problem": "Find 2^3.", "solution": "...", "answer": "8", "url": "u"}]),
    "aime2025": ("test.jsonl", [{"id": "0", "problem": "Find 3^2.", "answer": "9"}]),
    "amc23": ("test.parquet", [{"id": 1, "question": "Find 1+1.", "answer": 2.0, "url": "u"}]),
    "gpqa_diamond": (
        "gpqa_diamond.csv",
        [
            {
                "Record ID": "rec1",
                "Question": "Which is a noble gas?",
                "Correct Answer": "Neon",
                "Incorrect Answer 1": "Iron",
                "Incorrect Answer 2": "Sodium",
                "Incorrect Answer 3": "Carbon",
            }
        ],
    ),  # fmt: skip
    "mmlu_pro": (
        "test.parquet",
        [
            {
                "question_id": 7,
                "question": "2+2?",
                "options": ["3", "4", "5"],
                "answer": "B",
                "answer_index": 1,
                "cot_content": "",
                "category": "math",
                "src": "s",
            },
            {
                "question_id": 8,
                "question": "F=ma: m?",
                "options": ["F/a", "Fa"],
                "answer": "A",
                "answer_index": 0,
                "cot_content": "",
                "category": "physics",
                "src": "s",
            },
        ],
    ),  # fmt: skip
}


def _external(spec: dict) -> dict:
    return {
        "experiment": "x",
        "benchmarks": {},
        "eval": {"external": {"ext": {"source": "file", "domain": "d", **spec}}},
    }


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_catalogue_format_reads_its_published_schema(tmp_path, fmt):
    name, rows = SYNTHETIC[fmt]
    path = _write(tmp_path / name, rows)
    items = external_items(_external({"format": fmt, "path": str(path)}))["ext"]
    assert len(items) == len(rows)
    item = items[0]
    assert item["verifier"] == FORMATS[fmt].verifier and item["benchmark"] == "ext" and item["domain"] == "d"
    question = rows[0][FORMATS[fmt].question]
    assert question.strip() in item["prompt"]
    if fmt == "gpqa_diamond":  # the correct option's letter is the key, its text listed under it
        assert f"{item['answer']}) Neon" in item["prompt"] and item["id"] == "rec1"
        assert all(f"{letter}) " in item["prompt"] for letter in "ABCD")
    elif fmt == "mmlu_pro":
        assert (item["answer"], item["id"]) == ("B", "7") and "B) 4" in item["prompt"]
    else:
        assert VERIFIERS["math_verify"].grade(item, f"\\boxed{{{item['answer']}}}").correct == 1.0
    assert "\\boxed{}" in item["prompt"] or "Answer: $LETTER" in item["prompt"]


def test_a_twin_is_read_beside_its_benchmark_as_fresh_items(tmp_path):
    """eval.external.<b>.twin (contamination screen): a file in the benchmark's format is benchmark <b>__twin, read like
    it; reasoning-gym's ``twin: true`` is another draw of the dataset and config without the benchmark's questions."""
    path = _write(tmp_path / "gsm.jsonl", [{"question": f"{i}+1=", "answer": f"#### {i + 1}"} for i in range(5)])
    twin = _write(tmp_path / "fresh.jsonl", [{"question": f"{i}+2=", "answer": f"#### {i + 2}"} for i in range(3)])
    items = external_items(_external({"format": "gsm8k", "path": str(path), "twin": str(twin)}))
    assert [len(items["ext"]), len(items["ext__twin"])] == [5, 3]
    assert {i["benchmark"] for i in items["ext__twin"]} == {"ext__twin"} and items["ext__twin"][0]["answer"] == "2"
    assert items["ext__twin"][0]["verifier"] == items["ext"][0]["verifier"]
    pytest.importorskip("reasoning_gym")
    spec = {"source": "reasoning_gym", "dataset": "basic_arithmetic", "n_items": 30, "domain": "d", "twin": True}
    drawn = external_items({"experiment": "x", "benchmarks": {}, "eval": {"external": {"arith": spec}}})
    published, fresh = drawn["arith"], drawn["arith__twin"]
    assert len(published) == 30 and 15 <= len(fresh) <= 30
    assert {i["prompt"] for i in fresh}.isdisjoint(i["prompt"] for i in published)
    assert {i["benchmark"] for i in fresh} == {"arith__twin"}


def test_gsm8k_reference_is_the_number_after_the_hashes():
    assert after_hashes("She pays 1,200 + 34 = 1,234.\n#### 1,234") == "1234"
    with pytest.raises(ValueError, match="no '#### <answer>' line"):
        after_hashes("no final line")


def test_gpqa_options_are_shuffled_per_item_and_reproducibly(tmp_path):
    rows = [
        {"Record ID": f"r{i}", "Question": f"Q{i}?", "Correct Answer": "right", "Incorrect Answer 1": "w1",
         "Incorrect Answer 2": "w2", "Incorrect Answer 3": "w3"}
        for i in range(40)
    ]  # fmt: skip
    path = _write(tmp_path / "gpqa_diamond.csv", rows)
    spec = _external({"format": "gpqa_diamond", "path": str(path)})
    first, again = external_items(spec)["ext"], external_items(spec)["ext"]
    assert first == again
    letters = Counter(item["answer"] for item in first)
    assert set(letters) == set("ABCD")  # not always A, where the file lists the correct answer
    for item in first:
        assert f"{item['answer']}) right" in item["prompt"]


def test_a_subset_a_field_map_a_prompt_and_n_items(tmp_path):
    name, rows = SYNTHETIC["mmlu_pro"]
    path = _write(tmp_path / name, rows)
    items = external_items(_external({"format": "mmlu_pro", "path": str(path), "where": {"category": "physics"}}))
    assert [i["id"] for i in items["ext"]] == ["8"]
    renamed = _write(tmp_path / "mine.jsonl", [{"q": f"{i}+1=", "a": f"#### {i + 1}"} for i in range(5)])
    spec = {"format": "gsm8k", "path": str(renamed), "fields": {"question": "q", "answer": "a"}, "n_items": 3}
    items = external_items(_external({**spec, "prompt": "Q: {question}"}))["ext"]
    assert [(i["prompt"], i["answer"]) for i in items] == [("Q: 0+1=", "1"), ("Q: 1+1=", "2"), ("Q: 2+1=", "3")]


def test_read_rows_reads_each_file_kind(tmp_path):
    rows = [{"a": "1", "b": "x"}, {"a": "2", "b": "y"}]
    for suffix in (".jsonl", ".parquet", ".csv"):
        assert read_rows(_write(tmp_path / f"f{suffix}", rows)) == rows
    (tmp_path / "f.json").write_text(json.dumps(rows))
    assert read_rows(tmp_path / "f.json") == rows


# ---- bad input: one line, naming the file, field, row or key, before any job -------------------------------------


def _gsm(tmp_path: Path, rows=None) -> Path:
    return _write(tmp_path / "gsm.jsonl", rows or [{"question": "1+1=", "answer": "#### 2"}])


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"format": "gsm8k", "path": "missing.jsonl"},
         r"eval\.external\.ext\.path: missing\.jsonl: no such file; the gsm8k format reads a local copy of "
         r"huggingface\.co/datasets/openai/gsm8k"),
        ({"format": "gsm8kk", "path": "{gsm}"}, r"eval\.external\.ext\.format: unknown benchmark format 'gsm8kk'; "
         r"did you mean 'gsm8k'\?"),
        ({"format": "gsm8k", "path": "{gsm}", "verifier": "math"}, r"eval\.external\.ext\.verifier: unknown verifier"),
        ({"format": "gsm8k"}, r"eval\.external\.ext: source file needs 'path'"),
        ({"format": "gsm8k", "path": "{gsm}", "prompt": "{questoin}"},
         r"eval\.external\.ext\.prompt: '\{questoin\}' is not a template of \{question\}: it names \{questoin\}"),
        ({"format": "gsm8k", "path": "{gsm}", "prompt": "{question} {letters}"}, r"it names \{letters\}"),
        # an attribute is not a field, and a template without the question would give every item one prompt
        ({"format": "gsm8k", "path": "{gsm}", "prompt": "{question.upper}"}, r"it names \{question\.upper\}"),
        ({"format": "gsm8k", "path": "{gsm}", "prompt": "Solve it."}, r"'Solve it\.' .* it has no \{question\}"),
        ({"format": "gsm8k", "path": "{gsm}", "prompt": "{question"}, r"it is not a format string"),
        ({"format": "math500", "path": "{gsm}"},
         r"gsm\.jsonl: row 0: no field 'problem'; the row has \['question', 'answer'\] \(the math500 schema of "
         r"huggingface\.co/datasets/HuggingFaceH4/MATH-500 .* map yours with .*eval\.external\.ext\.fields\)"),
        ({"format": "gsm8k", "path": "{gsm}", "where": {"question": "nothing"}}, r"gsm\.jsonl: no rows with"),
    ],
)  # fmt: skip
def test_bad_external_benchmarks_are_one_line_errors(tmp_path, spec, message):
    spec = {k: v.format(gsm=_gsm(tmp_path)) if isinstance(v, str) and k == "path" else v for k, v in spec.items()}
    with pytest.raises(ConfigError, match=message) as error:
        external_items(_external(spec), "exp.yaml")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"question": "1+1=", "answer": "#### 2"}\n{"question": \n', r"gsm\.jsonl: line 2: not JSON"),
        ('{"question": "1+1=", "answer": "2"}\n', r"row 0 \(item ext-00000\): no '#### <answer>' line"),
        ('{"question": "", "answer": "#### 2"}\n', r"row 0: 'question' is empty"),
        ('[1, 2]\n', r"line 1: expected a JSON object"),
    ],
)  # fmt: skip
def test_malformed_files_name_the_line_or_row(tmp_path, content, message):
    (tmp_path / "gsm.jsonl").write_text(content)
    with pytest.raises(ConfigError, match=message):
        external_items(_external({"format": "gsm8k", "path": str(tmp_path / "gsm.jsonl")}))


def test_duplicate_ids_and_unreadable_parquet_are_refused(tmp_path):
    path = _write(tmp_path / "t.jsonl", [{"id": 1, "problem": "p", "answer": "1"}] * 2)
    with pytest.raises(ConfigError, match=r"row 1: item id '1' appears twice"):
        external_items(_external({"format": "aime2025", "path": str(path)}))
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(ConfigError, match=r"bad\.parquet: not a readable parquet file"):
        external_items(_external({"format": "aime2024", "path": str(tmp_path / "bad.parquet")}))


def test_a_verifier_whose_package_is_missing_says_how_to_install_it(tmp_path, monkeypatch):
    from importlib import util

    real = util.find_spec
    monkeypatch.setattr(util, "find_spec", lambda name, *a: None if name == "math_verify" else real(name, *a))
    with pytest.raises(ConfigError, match=r"verifier 'math_verify' needs the math-verify package: pip install"):
        external_items(_external({"format": "gsm8k", "path": str(_gsm(tmp_path))}))


def _experiment_file(tmp_path: Path, external: dict, **eval_keys) -> Path:
    config = {"eval": {"max_gen_toks": 5, "samples": 2, "temperature": 1.0, "external": external, **eval_keys}}
    path = tmp_path / "exp.yaml"
    path.write_text(json.dumps(config))
    return path


def test_the_workflow_refuses_bad_external_benchmarks_before_any_job(tmp_path):
    """experiment.load (the Snakefile's first step) reads the files: errors come before any job."""
    gsm = str(_gsm(tmp_path))
    missing = {"g": {"source": "file", "format": "gsm8k", "path": str(tmp_path / "nope.jsonl"), "domain": "math"}}
    with pytest.raises(ConfigError, match=r"exp\.yaml: eval\.external\.g\.path: .*nope\.jsonl: no such file"):
        experiment.load([TINY, _experiment_file(tmp_path, missing)])
    clash = {"add": {"source": "file", "format": "gsm8k", "path": gsm, "domain": "math"}}
    with pytest.raises(ConfigError, match=r"eval\.external\.add: also in benchmarks"):
        experiment.load([TINY, _experiment_file(tmp_path, clash)])
    # the builtin policy (character-level) answers the benchmark: its prompts must fit its context and characters
    long = {"g": {"source": "file", "format": "gsm8k", "path": gsm, "domain": "math"}}  # the format's long prompt
    with pytest.raises(
        ConfigError, match=r"eval\.external\.g: item g-00000: the character-level model cannot read its"
    ):
        experiment.load([TINY, _experiment_file(tmp_path, long)])
    fits = {"g": {**long["g"], "prompt": "{question}"}}
    config = experiment.load([TINY, _experiment_file(tmp_path, fits, maj_k=[2])])
    assert config["eval"]["external"]["g"]["path"] == gsm
    with pytest.raises(ConfigError, match=r"eval\.maj_k: \[4\] above eval\.samples \(2\)"):
        experiment.load([TINY, _experiment_file(tmp_path, fits, maj_k=[4])])
    padded = _write(tmp_path / "long.jsonl", [{"question": "1+1=" * 10, "answer": "#### 2"}])
    too_long = {"g": {**fits["g"], "path": str(padded)}}
    with pytest.raises(ConfigError, match=r"item g-00000: its prompt of 40 characters and eval\.max_gen_toks 5 exceed"):
        experiment.load([TINY, _experiment_file(tmp_path, too_long)])


# ---- sampled evaluation of an external benchmark, end to end through lm-eval ------------------------------------


def test_an_external_benchmark_is_sampled_and_every_answer_graded(tiny_config, tiny_experiment, tmp_path):
    """The builtin policy answers GSM8K-format items (a template that fits its context) 4 times each: the scores hold
    n_correct / n_samples per item, answers.parquet a verdict, an extracted answer and a vote per answer, and every
    verdict equals an independent grading of the raw answer lm-eval logged (its last number as an exact fraction)."""
    from armlab.analysis.samples.sampled import majority_at_k
    from armlab.evals.lm_eval_tasks import write_task_configs
    from armlab.evals.run import evaluate

    rows = [{"question": f"{a}+{b}=", "answer": f"{a} plus {b}\n#### {a + b}"} for a in range(5) for b in range(4)]
    path = _write(tmp_path / "gsm.jsonl", rows)
    external = {
        "gsm": {"source": "file", "format": "gsm8k", "path": str(path), "domain": "math", "prompt": "{question}"}
    }
    config = {**tiny_config, "eval": {**tiny_config["eval"], "samples": 4, "external": external}}
    tasks = tmp_path / "tasks"
    write_task_configs(config, tiny_experiment / "data", tasks)
    scores = evaluate(config, tasks, tiny_experiment / "base" / "policy.pt", "base", 0, tmp_path / "out")

    mine = scores[scores.benchmark == "gsm"].set_index("item")
    assert len(mine) == len(rows) and (mine.n_samples == 4).all() and (mine.domain == "math").all()
    answers = pd.read_parquet(tmp_path / "out" / "answers.parquet")
    gsm = answers[answers.benchmark == "gsm"]
    assert len(gsm) == 4 * len(rows)
    pd.testing.assert_series_equal(
        gsm.groupby("item").correct.sum(), mine.n_correct, check_names=False, check_index_type=False
    )
    logged = [json.loads(line) for line in (tmp_path / "out" / "samples_armlab_gsm.jsonl").read_text().splitlines()]
    graded = 0
    for sample in logged:
        reference = Fraction(sample["doc"]["answer"])
        verdicts = gsm[gsm["item"] == sample["doc"]["id"]].sort_values("sample")
        for response, correct in zip(sample["resps"][0], verdicts.correct):
            number = _last_number(response)
            assert correct == float(number is not None and number == reference), (response, reference)
            graded += 1
    assert graded == 4 * len(rows)
    assert 0 < gsm.correct.mean() < 1, "the planted items must be neither all right nor all wrong for this check"
    # maj@4 from the votes equals a count by hand of the extracted answers (numbers here: equal strings, one vote)
    references = {sample["doc"]["id"]: Fraction(sample["doc"]["answer"]) for sample in logged}
    by_hand = {}
    for item, group in gsm.groupby("item"):
        counted = Counter(e for e, s in zip(group.extracted, group.status) if s == GRADED)
        top = max(counted.values(), default=0)
        tied = [e for e, n in counted.items() if n == top]
        by_hand[item] = sum(Fraction(e) == references[item] for e in tied) / len(tied) if tied else 0.0
    maj = majority_at_k(answers.assign(arm="base", seed=0), 4).xs("gsm", level="benchmark").droplevel(["arm", "seed"])
    assert maj.to_dict() == pytest.approx(by_hand)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["outcomes"]["gsm"] == {s: int((gsm.status == s).sum()) for s in (GRADED, UNPARSED, TIMEOUT)}
    # what the report card compares between arms: per benchmark the answers, template, verifier and items file
    items_file = tasks / "external" / "gsm.parquet"
    assert manifest["protocol"]["gsm"] == {
        "samples": 4,
        "prompt_template": "{question}",
        "verifier": "math_verify",
        "items": f"sha256:{hashlib.sha256(items_file.read_bytes()).hexdigest()}",
    }
    testbed = next(iter(tiny_config["benchmarks"]))
    assert manifest["protocol"][testbed]["verifier"] == "exact" and manifest["protocol"][testbed]["samples"] == 4


def test_the_catalogue_snippet_is_a_valid_eval_section(tmp_path, capsys):
    """`armlab benchmarks FORMAT --path P` prints an eval section that validates and reads P."""
    import yaml

    from armlab.cli import main
    from armlab.evals.catalogue import check_external
    from armlab.experiment.validate import load_config

    name, rows = SYNTHETIC["math500"]
    path = _write(tmp_path / name, rows)
    assert main(["benchmarks", "math500", "--path", str(path)]) == 0
    snippet = yaml.safe_load(capsys.readouterr().out)
    assert snippet["eval"]["external"]["math500"]["path"] == str(path)
    assert (snippet["eval"]["temperature"], snippet["eval"]["top_p"], snippet["eval"]["samples"]) == (0.6, 0.95, 4)
    assert snippet["eval"]["external"]["math500"]["samples"] == 4  # kept when AIME's snippet (k = 32) joins it
    (tmp_path / "snippet.yaml").write_text(yaml.safe_dump(snippet))
    config = load_config([TINY, tmp_path / "snippet.yaml"])
    check_external(config)  # a Hugging Face model answers it: no prompt limits
    assert main(["benchmarks"]) == 0
    listing = capsys.readouterr().out
    assert all(f"{fmt}: huggingface.co/datasets/" in listing for fmt in FORMATS)
    assert main(["benchmarks", "gsm"]) == 2
    assert "did you mean 'gsm8k'?" in capsys.readouterr().err


def test_the_snippet_checks_the_file_as_the_workflow_start_and_shows_the_prompt_the_model_reads(tmp_path, capsys):
    """`armlab benchmarks FORMAT --path P` printed any P (a missing file, another schema) unread, and the template
    with the doubled braces of a format string (`\\boxed{{}}`); now P is read and checked as the workflow's start
    reads it (one line, nothing on stdout, status 2) and the comment shows the prompt as the model reads it."""
    from armlab.cli import main

    name, rows = SYNTHETIC["math500"]
    path = _write(tmp_path / name, rows)
    assert main(["benchmarks", "math500", "--path", str(path)]) == 0
    comment = [line for line in capsys.readouterr().out.splitlines() if line.startswith("#")]
    first = external_items(_external({"format": "math500", "path": str(path)}))["ext"][0]["prompt"]
    assert f"{len(rows)} items read and checked" in comment[1]
    assert [line[4:] for line in comment[2:]] == first.splitlines() and "\\boxed{}." in first
    assert main(["benchmarks", "gsm8k"]) == 0  # no file: the template, its field marked, its braces single
    assert "#   Please reason step by step, and put your final answer within \\boxed{}." in capsys.readouterr().out
    gsm8k_name, gsm8k_rows = SYNTHETIC["gsm8k"]
    refused = {
        "no such file": tmp_path / "missing.jsonl",
        "row 0: no field 'question'": path,  # MATH-500's schema is not GSM8K's
        "line 1: not JSON": tmp_path / "broken.jsonl",
        "no '#### <answer>' line": tmp_path / "gsm8k" / gsm8k_name,  # GSM8K's reference is the number after it
    }
    (tmp_path / "broken.jsonl").write_text("{not json\n")
    (tmp_path / "gsm8k").mkdir()
    _write(tmp_path / "gsm8k" / gsm8k_name, [{**gsm8k_rows[0], "answer": "3+4=7, no final line"}])
    for problem, bad in refused.items():
        assert main(["benchmarks", "gsm8k", "--path", str(bad)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.splitlines()) == 1 and problem in err and str(bad) in err, (problem, err)


# ---- reasoning-gym ----------------------------------------------------------------------------------------------


def test_reasoning_gym_items_are_seeded_from_the_experiment_and_graded_by_score_answer():
    pytest.importorskip("reasoning_gym", reason="reasoning-gym is not installed (pip install 'armlab[reasoning_gym]')")
    import reasoning_gym

    spec = {"source": "reasoning_gym", "domain": "math", "dataset": "basic_arithmetic", "n_items": 6,
            "config": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}}  # fmt: skip
    config = {"experiment": "x", "benchmarks": {}, "eval": {"external": {"arith": spec}}}
    items = external_items(config)["arith"]
    assert items == external_items(config)["arith"] and len(items) == 6
    other = external_items({**config, "experiment": "y"})["arith"]
    assert [i["prompt"] for i in other] != [i["prompt"] for i in items]  # another experiment, another draw
    # the items are reasoning-gym's own dataset at the recorded seed, graded by its score_answer
    dataset = reasoning_gym.create_dataset("basic_arithmetic", seed=items[0]["rg_seed"], size=6, **spec["config"])
    for item, entry in zip(items, dataset):
        assert (item["prompt"], item["answer"]) == (entry["question"], entry["answer"])
        assert grade(item, entry["answer"]).correct == dataset.score_answer(entry["answer"], entry) == 1.0
        wrong = str(int(entry["answer"]) + 1)
        assert grade(item, wrong).correct == dataset.score_answer(wrong, entry) == 0.0
    assert grade(items[0], "  ").status == UNPARSED


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"dataset": "basic_arithmetc"}, r"eval\.external\.rg\.dataset: unknown reasoning-gym dataset "
         r"'basic_arithmetc'; did you mean 'basic_arithmetic'"),
        ({"dataset": "basic_arithmetic", "config": {"min_terms": 0}}, r"eval\.external\.rg\.config: reasoning-gym's "
         r"basic_arithmetic refused it"),
        ({}, r"eval\.external\.rg: source reasoning_gym needs 'dataset'"),
    ],
)  # fmt: skip
def test_bad_reasoning_gym_benchmarks_are_one_line_errors(spec, message):
    pytest.importorskip("reasoning_gym", reason="reasoning-gym is not installed (pip install 'armlab[reasoning_gym]')")
    config = {
        "experiment": "x",
        "benchmarks": {},
        "eval": {"external": {"rg": {"source": "reasoning_gym", "domain": "m", **spec}}},
    }
    with pytest.raises(ConfigError, match=message):
        external_items(config)


@pytest.mark.simulation
def test_the_cross_process_check_compares_every_item_the_jobs_use(monkeypatch):
    """A generator whose item 20 of 30 differs between processes (planted here: this process's item 20 is another
    question, as a hash-seed-dependent generator gives in 3% of its items) is refused naming the item; on 5a28ea2 the
    check compared the first 5 items and passed it, so the evaluation jobs would have graded other questions."""
    pytest.importorskip("reasoning_gym", reason="reasoning-gym is not installed (pip install 'armlab[reasoning_gym]')")
    from armlab.training import reasoning_gym_tasks as rg

    spec = {"source": "reasoning_gym", "domain": "m", "dataset": "basic_arithmetic", "n_items": 30}
    config = {"experiment": "x", "benchmarks": {}, "eval": {"external": {"rg": spec}}}
    draws = rg.draws_of(config, "exp.yaml")
    rg.check_reproducible(draws)  # the real generator: every item the same in three processes
    real = rg.dataset

    class Planted(list):
        score_answer = None

    def planted(name, config, seed, size):
        items = [dict(item) for item in real(name, config, seed, size)]
        items[20]["question"] += " (another question)"
        return Planted(items)

    monkeypatch.setattr(rg, "dataset", planted)
    rg.entry.cache_clear()
    try:
        with pytest.raises(
            ConfigError,
            match=r"exp\.yaml: eval\.external\.rg\.dataset: reasoning-gym's basic_"
            r"arithmetic draws its item 20 \(of the 30 the jobs use\) otherwise in another process",
        ):
            rg.check_reproducible(draws)
    finally:
        rg.entry.cache_clear()


def test_reasoning_gym_missing_says_how_to_install_it(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_reasoning_gym(name, *args, **kwargs):
        if name.startswith("reasoning_gym"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_reasoning_gym)
    config = {
        "experiment": "x",
        "benchmarks": {},
        "eval": {"external": {"rg": {"source": "reasoning_gym", "domain": "m", "dataset": "leg_counting"}}},
    }
    with pytest.raises(ConfigError, match=r"source reasoning_gym needs the reasoning-gym package: pip install"):
        external_items(config)


@pytest.mark.parametrize(
    ("trl_model", "refused"), [("builtin_base", True), (None, True), ("a Hugging Face checkpoint", False)]
)
def test_prompts_are_checked_against_the_characters_of_every_character_level_model(tmp_path, trl_model, refused):
    """TRL's runs from the exported builtin base or its tiny Qwen2 read armlab's characters, as the builtin policy
    does; a checkpoint of the user's, with its own tokenizer, reads any prompt."""
    gsm = str(_gsm(tmp_path))
    trl = {} if trl_model is None else {"model": trl_model}
    if trl_model == "a Hugging Face checkpoint":
        (tmp_path / "hf").mkdir()
        (tmp_path / "hf" / "config.json").write_text("{}")
        trl = {"model": str(tmp_path / "hf")}
    config = {
        "backend": "trl",
        "trl": trl,
        "arms": {"difffilter": {"data_policy": "uniform", "lr": 0.001}},  # TRL has no difffilter
        "eval": {"max_gen_toks": 5, "samples": 2, "temperature": 1.0,
                 "external": {"g": {"source": "file", "format": "gsm8k", "path": gsm, "domain": "math"}}},
    }  # fmt: skip
    path = tmp_path / "trl.yaml"
    path.write_text(json.dumps(config))
    if refused:
        with pytest.raises(ConfigError, match=r"item g-00000: the character-level model cannot read its prompt"):
            experiment.load([TINY, path])
    else:
        assert experiment.load([TINY, path])["eval"]["external"]["g"]["path"] == gsm


# ---- an existing lm-eval task, sampled: its own answer extraction and metric on each answer ----------------------


LOCAL_GSM8K_TASK = """\
task: gsm8k_local
dataset_path: json
dataset_kwargs: {{data_files: {{test: {data}}}}}
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}}"
doc_to_target: "{{{{answer.split('####')[-1].strip()}}}}"
generation_kwargs: {{until: ["\\n"], max_gen_toks: 5, do_sample: false}}
filter_list:
  - name: flexible-extract
    filter:
      - {{function: regex, group_select: -1, regex_pattern: "(-?[0-9]+)"}}
      - {{function: take_first}}
metric_list:
  - {{metric: exact_match, aggregation: mean, higher_is_better: true}}
metadata: {{version: 1.0}}
"""


def test_an_existing_lm_eval_task_is_sampled_and_graded_by_its_own_filter_and_metric(
    tiny_config, tiny_experiment, tmp_path
):
    """A task of eval.lm_eval_tasks (here lm-eval's GSM8K config on a local file, as a user's cached task) gets k
    answers per item; each is extracted by the task's regex and scored by its exact_match, and the counts equal an
    independent grading of the raw answers lm-eval logged."""
    from armlab.evals.lm_eval_tasks import write_task_configs
    from armlab.evals.run import evaluate

    rows = [{"question": f"{a}+{b}=", "answer": f"{a} plus {b}\n#### {a + b}"} for a in range(5) for b in range(3)]
    data = _write(tmp_path / "gsm.jsonl", rows)
    spec = {"gsm8k_local": {"domain": "math", "metric": "exact_match", "filter": "flexible-extract"}}
    config = {**tiny_config, "eval": {**tiny_config["eval"], "samples": 4, "pass_k": [1, 4], "lm_eval_tasks": spec}}
    tasks = tmp_path / "tasks"
    write_task_configs(config, tiny_experiment / "data", tasks)
    (tasks / "gsm8k_local.yaml").write_text(LOCAL_GSM8K_TASK.format(data=data))
    scores = evaluate(config, tasks, tiny_experiment / "base" / "policy.pt", "base", 0, tmp_path / "out")

    mine = scores[scores.benchmark == "gsm8k_local"].set_index("item")
    assert len(mine) == len(rows) and (mine.n_samples == 4).all()
    logged = [json.loads(line) for line in (tmp_path / "out" / "samples_gsm8k_local.jsonl").read_text().splitlines()]
    logged = [s for s in logged if s["filter"] == "flexible-extract"]
    assert len(logged) == len(rows)
    for sample in logged:
        raw_answers = sample["resps"][0]
        assert len(raw_answers) == 4 and len(sample["filtered_resps"][0]) == 4
        target = sample["doc"]["answer"].split("####")[-1].strip()
        by_hand = sum((re.findall(r"(-?[0-9]+)", a) or ["[invalid]"])[-1] == target for a in raw_answers)
        assert mine.loc[str(sample["doc_id"]), "n_correct"] == by_hand
    assert 0 < mine.n_correct.sum() < 4 * len(rows)
    # the answers are sampled (temperature 1): some item's 4 answers differ
    assert any(len(set(s["resps"][0])) > 1 for s in logged)


@pytest.mark.simulation
def test_an_unknown_lm_eval_task_is_refused_before_any_job(tmp_path):
    """A task of eval.lm_eval_tasks lm-eval does not know is one line at the workflow's start, with near misses; a
    known task passes from the quick read of lm-eval's YAMLs, and one only lm-eval's own index finds passes too."""

    def load(tasks: dict):
        path = tmp_path / "exp.yaml"
        path.write_text(json.dumps({"eval": {"lm_eval_tasks": {t: {"domain": "math"} for t in tasks}}}))
        return experiment.load([TINY, path])

    from importlib import util

    import datasets
    import lm_eval.tasks

    from armlab.evals.lm_eval_tasks import _indexed_names

    scanned = _indexed_names(Path(util.find_spec("lm_eval").submodule_search_locations[0], "tasks"))
    # AraDiCE's per-dialect MMLU tasks are named by their group's template, not by a `task:` line; scrolls is the
    # old `group:` key of its tasks' configs, which lm-eval does not index
    indexed_only = "AraDiCE_ArabicMMLU_high_humanities_history_egy"
    assert {"gsm8k", "mmlu", "arc_easy"} <= scanned and not {indexed_only, "scrolls"} & scanned
    with pytest.MonkeyPatch.context() as patch:  # a name the quick read finds never builds lm-eval's index
        patch.setattr(lm_eval.tasks, "TaskManager", None)
        patch.setattr(datasets, "load_dataset_builder", lambda path, name: None)  # as if its data were cached
        assert list(load(["gsm8k"])["eval"]["lm_eval_tasks"]) == ["gsm8k"]
    with pytest.raises(
        ConfigError,
        match=r"exp\.yaml: eval\.lm_eval_tasks\.gsm8kk: lm-eval has no task, group or tag 'gsm8kk'; did "
        r"you mean 'gsm8k'",
    ):
        load([indexed_only, "gsm8kk"])


def test_a_reference_math_verify_cannot_read_is_refused_before_any_job(tmp_path):
    rows = [{"problem": "p", "answer": "1/2", "unique_id": "a"}, {"problem": "q", "answer": "\\\\", "unique_id": "b"}]
    path = _write(tmp_path / "test.jsonl", rows)
    with pytest.raises(
        ConfigError, match=r"eval\.external\.ext: item b: reference answer '\\\\\\\\': math-verify reads"
    ):
        external_items(_external({"format": "math500", "path": str(path)}))


def test_a_benchmark_can_have_its_own_number_of_answers(tiny_config, tiny_experiment, tmp_path):
    """AIME is reported as avg@32 beside MATH-500's avg@4: eval.external.<name>.samples is k for that benchmark."""
    from armlab.evals.lm_eval_tasks import write_task_configs
    from armlab.evals.run import evaluate

    path = _write(tmp_path / "gsm.jsonl", [{"question": f"{a}+1=", "answer": f"#### {a + 1}"} for a in range(6)])
    external = {"gsm": {"source": "file", "format": "gsm8k", "path": str(path), "domain": "math",
                        "prompt": "{question}", "samples": 6}}  # fmt: skip
    config = {**tiny_config, "eval": {**tiny_config["eval"], "samples": 2, "external": external}}
    write_task_configs(config, tiny_experiment / "data", tmp_path / "tasks")
    scores = evaluate(config, tmp_path / "tasks", tiny_experiment / "base" / "policy.pt", "base", 0, tmp_path / "out")
    assert scores.groupby("benchmark").n_samples.unique().map(list).to_dict() == {
        "add": [2], "boolexpr": [2], "gsm": [6], "mod": [2], "units": [2]
    }  # fmt: skip
    answers = pd.read_parquet(tmp_path / "out" / "answers.parquet")
    assert set(answers[answers.benchmark == "gsm"].groupby("item").size()) == {6}


@pytest.mark.parametrize(
    ("eval_keys", "samples", "message"),
    [
        ({"samples": 4, "pass_k": [1, 4]}, 2, r"eval\.external\.g\.samples: 2 answers per item, but eval\.pass_k asks "
         r"for \[4\]"),
        ({"samples": 1, "temperature": 0.0}, 3, r"eval\.external\.g\.samples: 3 answers at eval\.temperature 0"),
        ({"samples": 2}, 5000, r"eval\.external\.g\.samples: 5000 is above the limit of .*; set limits\.samples"),
    ],
)  # fmt: skip
def test_a_benchmarks_own_answers_are_checked_like_eval_samples(tmp_path, eval_keys, samples, message):
    external = {"g": {"source": "file", "format": "gsm8k", "path": str(_gsm(tmp_path)), "domain": "math",
                      "prompt": "{question}", "samples": samples}}  # fmt: skip
    config = {"eval": {"max_gen_toks": 5, "temperature": 1.0, "pass_k": [1], **eval_keys, "external": external}}
    path = tmp_path / "exp.yaml"
    path.write_text(json.dumps(config))
    with pytest.raises(ConfigError, match=message):
        experiment.load([TINY, path])
