"""The report card (analysis/screens/report_card.py) on a planted-flaw suite: a clean experiment of tidy tables,
manifests, answers and compute ledgers passes every item that applies; each planted flaw is caught by its item, and only
by it; a missing input is "not available", never a pass."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from armlab.analysis import outputs
from armlab.analysis.config import parse_config
from armlab.analysis.pipeline import analyze, run_analysis
from armlab.analysis.screens import report_card
from armlab.files import write_manifest

BENCHMARKS = {"gsm8k": "math", "math500": "math"}
SEEDS = (1, 2, 3, 4, 5, 6)
ARMS = ("base", "grpo", "dapo")  # dapo vs grpo; the base policy evaluated at every seed
ITEMS, SAMPLES, STEPS = 40, 4, 40
UNPARSED = 0.05  # every arm's share of answers the verifier cannot read
CLEAN: dict = {
    "samples": SAMPLES,
    "temperature": 1.0,
    "top_p": 1.0,
    "max_gen_toks": 512,
    "prompt_template": "{question}\nPut the final answer in \\boxed{}.",
    "verifier": "math_verify",
    "checkpoint": "policy.pt",
    "unparsed": UNPARSED,
    "flops": 1e12,
}


def config(**analysis) -> object:
    return parse_config(
        {
            "experiment": "card",
            "seeds": list(SEEDS),
            "benchmarks": {b: {"domain": d} for b, d in BENCHMARKS.items()},
            "comparisons": [{"family": "estimators", "reference": "grpo", "arms": ["dapo"]}],
            "eval": {"samples": SAMPLES, "temperature": 1.0, "pass_k": [1, 2]},  # a flaw evaluates 2 answers
            "analysis": {"resamples": 200, "power_replicates": 200, "power_effect": 0.03, **analysis},
        }
    )


def experiment(root: Path, flaws: dict[str, dict] | None = None, seeds=SEEDS) -> Path:
    """An experiment's results folder: every run's answers, scores, evaluation and run manifests and compute ledger.

    Answers share their random draws across arms at a seed (common random numbers), as armlab's evaluations do:
    dapo solves 6 points more than grpo, the base 10 points less. ``flaws``: arm -> the settings it differs in.
    """
    flaws = flaws or {}
    rng = np.random.default_rng(54)
    p = {b: rng.uniform(0.2, 0.8, ITEMS) for b in BENCHMARKS}
    shift = {"base": -0.10, "grpo": 0.0, "dapo": 0.06}
    scores = []
    for seed in seeds:
        draws = {b: np.random.default_rng([54, seed, i]).random((2, ITEMS, 2 * SAMPLES)) for i, b in enumerate(p)}
        for arm in ARMS:
            spec = CLEAN | flaws.get(arm, {})
            k = spec["samples"]
            answers = []
            for benchmark, (solve, parse) in draws.items():
                unparsed = parse[:, :k] < spec["unparsed"]
                correct = (solve[:, :k] < np.clip(p[benchmark] + shift[arm], 0, 1)[:, None]) & ~unparsed
                for item in range(ITEMS):
                    answers += [
                        (benchmark, f"{benchmark}-{item}", j, float(correct[item, j]), "", status, -1)
                        for j, status in enumerate(np.where(unparsed[item], "unparsed", "graded"))
                    ]
                    scores.append(
                        (
                            "card",
                            arm,
                            seed,
                            benchmark,
                            BENCHMARKS[benchmark],
                            f"{benchmark}-{item}",
                            correct[item].mean(),
                            k,
                            float(correct[item].sum()),
                        )  # fmt: skip
                    )
            folder = root / "evals" / arm / f"seed-{seed}"
            folder.mkdir(parents=True)
            columns = ["benchmark", "item", "sample", "correct", "extracted", "status", "vote"]
            pd.DataFrame(answers, columns=columns).to_parquet(folder / "answers.parquet", index=False)
            checkpoint = "base/policy.pt" if arm == "base" else f"runs/{arm}/seed-{seed}/{spec['checkpoint']}"
            protocol = {
                b: {k_: spec[k_] for k_ in ("prompt_template", "verifier")}
                | {"samples": spec["samples"], "items": f"sha256:{b}"}
                for b in BENCHMARKS
            }
            sampling = {name: spec[name] for name in ("samples", "temperature", "top_p", "max_gen_toks")}
            record = {"arm": arm, "seed": seed, "checkpoint": str(root / checkpoint), "seconds": 30.0}
            write_manifest(folder, record | {"sampling": sampling, "protocol": protocol}, "answers.parquet")
            if arm == "base":
                continue
            run = root / "runs" / arm / f"seed-{seed}"
            run.mkdir(parents=True)
            steps = np.arange(1, STEPS + 1)
            pd.DataFrame({"step": steps, "cum_flops": spec["flops"] * steps / STEPS}).to_parquet(run / "ledger.parquet")
            write_manifest(run, {"arm": arm, "seed": seed, "recipe": {"steps": STEPS}, "seconds": 600.0})
    columns = ["experiment", "arm", "seed", "benchmark", "domain", "item", "score", "n_samples", "n_correct"]
    pd.DataFrame(scores, columns=columns).to_parquet(root / "scores.parquet", index=False)
    return root


def card(root: Path, cfg=None) -> pd.DataFrame:
    """The report card `armlab analyze --jobs` writes for the experiment at ``root``."""
    return analyze(cfg or config(), root / "scores.parquet", root).report_card.set_index("item")


def test_the_clean_experiment_passes_every_item_that_applies(tmp_path):
    graded = card(experiment(tmp_path))
    assert list(graded.index) == list(report_card.ITEMS)
    assert (graded.loc[["seeds", "protocol", "compute", "answer_format", "selection"], "status"] == "pass").all()
    # the screens armlab does not run yet say so: never a pass
    assert (graded.loc[["grader", "contamination"], "status"] == "not run").all()
    assert graded.loc["compute", "value"] == "1.000× at most"
    assert graded.loc["protocol", "value"] == f"14 fields identical over {len(ARMS) * len(SEEDS)} evaluations"


FLAWS: dict[str, tuple[dict, str, str]] = {
    # flaw: (what one arm's evaluation or run differs in, the item that must catch it, what its reason must say)
    "a baseline evaluated with fewer samples": (
        {"grpo": {"samples": 3}}, "protocol", "samples: base 4, dapo 4, grpo 3"
    ),
    "a baseline at another temperature": ({"grpo": {"temperature": 0.6}}, "protocol", "temperature: base 1.0"),
    "mismatched max new tokens": (
        {"dapo": {"max_gen_toks": 4096}}, "protocol", "max_gen_toks: base 512, dapo 4096, grpo 512"
    ),
    "a different verifier for one arm": (
        {"dapo": {"verifier": "exact"}}, "protocol", "gsm8k verifier: base math_verify, dapo exact, grpo math_verify"
    ),
    "a different prompt template": (
        {"base": {"prompt_template": "{question}"}},
        "protocol",
        "gsm8k prompt_template: base {question}, dapo {question}\\nPut the final answer",  # one line: \n shown
    ),
    "the best checkpoint picked on the test items": (
        {"dapo": {"checkpoint": "checkpoints/step-000020.pt"}},
        "selection",
        "dapo seed 1: evaluated checkpoint step 20 of 40, not its last",
    ),
    "an arm whose unparsed rate doubled": (
        {"dapo": {"unparsed": 2 * UNPARSED}},
        "answer_format",
        "dapo 10.57% vs grpo 6.04% unparsed, Δ +4.53 points [+3.12, +7.19], Holm p 0.0312",
    ),
    "unequal compute": (
        {"dapo": {"flops": 1.5e12}}, "compute", "dapo 1.500× grpo's cum_flops, and not compared at equal compute"
    ),
}  # fmt: skip


@pytest.mark.parametrize("flaw", list(FLAWS))
def test_each_planted_flaw_is_caught_by_its_item_alone(tmp_path, flaw):
    planted, item, reason = FLAWS[flaw]
    graded = card(experiment(tmp_path, planted))
    assert graded.loc[item, "status"] == "fail", graded.loc[item].to_dict()
    assert reason in graded.loc[item, "reason"]
    # fewer answers per item also make the reference noisier: more seeds are needed for the effect, truly
    also = ["seeds"] if flaw == "a baseline evaluated with fewer samples" else []
    others = graded.drop(index=[item, *also, "grader", "contamination"])
    assert (others["status"] == "pass").all(), others[others["status"] != "pass"].to_dict("index")


def test_one_seed_per_arm_is_caught_by_the_seeds_item(tmp_path):
    root = experiment(tmp_path, seeds=(1,))
    cfg = config()
    scores = pd.read_parquet(root / "scores.parquet")
    # the analysis refuses one seed (no paired comparison); graded from the tables, the card says why
    with pytest.raises(Exception, match="a paired comparison needs at least 2"):
        run_analysis(cfg, scores)
    inputs = report_card.Inputs(cfg, scores, jobs=report_card.read_jobs(root, "cum_flops"))
    graded = report_card.grade(inputs).set_index("item")
    assert graded.loc["seeds", "status"] == "fail"
    assert "dapo: 1 matched seed(s) can reach Holm p 1 at best" in graded.loc["seeds", "reason"]
    # five of the six configured seeds are missing: a seed left out is flagged as possible selection
    assert "seed(s) 2, 3, 4, 5, 6 of the config not analysed" in graded.loc["selection", "reason"]


def test_seeds_fewer_than_the_configured_effect_needs_fail(tmp_path):
    graded = card(experiment(tmp_path), config(power_effect=0.002))  # 0.2 points: far more seeds than 6
    assert graded.loc["seeds", "status"] == "fail"
    assert "dapo: 6 seeds <" in graded.loc["seeds", "reason"] and "0.2 point(s)" in graded.loc["seeds", "reason"]


def _without(pattern: str) -> Callable[[Path], None]:
    return lambda root: [path.unlink() for path in root.glob(pattern)]


@pytest.mark.parametrize(
    ("remove", "item", "reason"),
    [
        ("runs/*/*/ledger.parquet", "compute", "no compute ledger"),
        ("evals/*/*/answers.parquet", "answer_format", "no per-answer statuses"),
    ],
)
def test_a_missing_input_is_not_available_never_a_pass(tmp_path, remove, item, reason):
    root = experiment(tmp_path)
    _without(remove)(root)
    graded = card(root)
    assert graded.loc[item, "status"] == "not available" and reason in graded.loc[item, "reason"]


def test_results_from_elsewhere_have_no_manifests_and_their_protocol_is_not_available(tmp_path):
    root = experiment(tmp_path)
    graded = run_analysis(config(), pd.read_parquet(root / "scores.parquet")).report_card.set_index("item")
    for item in ("protocol", "compute", "answer_format", "selection"):
        assert graded.loc[item, "status"] == "not available", item
    assert graded.loc["seeds", "status"] == "pass"
    # fewer answers per item for the reference still shows in the scores themselves
    fewer = experiment(tmp_path / "fewer", {"grpo": {"samples": 3}})
    graded = run_analysis(config(), pd.read_parquet(fewer / "scores.parquet")).report_card.set_index("item")
    assert graded.loc["protocol", "status"] == "fail" and "grpo 3" in graded.loc["protocol", "reason"]


def test_a_planted_control_makes_no_claim_on_compute_or_answer_format(tmp_path):
    root = experiment(tmp_path, {"dapo": {"flops": 1e10, "unparsed": 3 * UNPARSED}})
    raw = {
        "experiment": "card",
        "seeds": list(SEEDS),
        "benchmarks": {b: {"domain": d} for b, d in BENCHMARKS.items()},
        "comparisons": [{"family": "control", "reference": "grpo", "arms": ["dapo"], "control": True}],
        "eval": {"samples": SAMPLES, "temperature": 1.0, "pass_k": [1, 2]},
        "analysis": {"resamples": 200, "power_replicates": 200, "power_effect": 0.03},
    }
    graded = card(root, parse_config(raw))
    assert (graded.loc[["compute", "answer_format"], "status"] == "not applicable").all()
    assert graded.loc["protocol", "status"] == "pass"


# armlab rescore's table: one verdict that flips under another verifier
FLIPS = pd.DataFrame(
    {
        "verifier": ["strict_boxed"],
        "family": ["estimators"],
        "arm": ["dapo"],
        "measure": ["domain_balanced"],
        "verdict": ["inconclusive"],
        "flip": [True],
    }  # fmt: skip
)


def test_the_grader_screen_is_read_when_its_table_is_there(tmp_path):
    root = experiment(tmp_path)
    (root / "analysis").mkdir()
    FLIPS.to_csv(root / "analysis" / report_card.SENSITIVITY, index=False)
    graded = card(root)
    assert graded.loc["grader", "status"] == "fail" and "dapo (estimators)" in graded.loc["grader", "reason"]
    # the contamination screen is the analysis's own table, from the twins' scores (test_contamination.py)
    assert (
        graded.loc["contamination", "status"] == "not run"
        and "procedural twin" in graded.loc["contamination", "reason"]
    )


def test_a_screen_item_is_graded_again_from_its_table_by_its_entrys_screen():
    before = pd.DataFrame([{"item": "grader", "check": "c", "status": "not run", "value": "", "reason": "r"}])
    after = report_card.with_screens(before, grader=FLIPS)
    assert after.loc[0, "status"] == "fail" and "dapo (estimators)" in after.loc[0, "reason"]
    assert report_card.ITEMS["grader"].screen is report_card.grader_screen
    with pytest.raises(KeyError, match="'seeds' has no screen"):
        report_card.with_screens(before.assign(item="seeds"), seeds=FLIPS)


def test_the_card_is_written_and_read_back_as_text(tmp_path):
    from armlab.analysis.pipeline import write_outputs
    from armlab.analysis.reporting.read import read_analysis

    root = experiment(tmp_path / "card")
    write_outputs(analyze(config(), root / "scores.parquet", root), tmp_path / "out")
    written = pd.read_csv(tmp_path / "out" / "report_card.csv")
    assert list(written.columns) == report_card.COLUMNS and len(written) == len(report_card.ITEMS)
    back = read_analysis(tmp_path / "out", "card")
    assert back.report_card["value"].map(type).eq(str).all()  # "" and numbers stay text
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["format"] == outputs.FORMAT


def test_the_report_grades_the_grader_item_from_a_rescore_made_after_the_analysis(tmp_path):
    """`armlab rescore` runs after `armlab analyze`, whose card says "not run": the report reads the table the rescore
    put beside the analysis and grades the item from it (a flip fails it, a table without one passes it)."""
    from armlab import files
    from armlab.analysis.pipeline import write_outputs
    from armlab.analysis.reporting.read import read_analysis
    from armlab.analysis.screens import verifier_sensitivity

    root = experiment(tmp_path / "card")
    write_outputs(analyze(config(), root / "scores.parquet", root), tmp_path / "out")
    assert read_analysis(tmp_path / "out", "card").report_card.set_index("item").loc["grader", "status"] == "not run"
    for flip, status in ((True, "fail"), (False, "pass")):
        row = dict.fromkeys(verifier_sensitivity.COLUMNS, "") | {
            "verifier": "boxed", "family": "estimators", "arm": "dapo", "measure": "domain_balanced", "flip": flip,
        }  # fmt: skip
        with files.beside_output(tmp_path / "out", "analyze", verifier_sensitivity.TABLE) as path:
            pd.DataFrame([row]).to_csv(path, index=False)
        graded = read_analysis(tmp_path / "out", "card").report_card.set_index("item").loc["grader"]
        assert graded.status == status and ("dapo (estimators)" in graded.reason) == flip
