"""End to end with the README's command: benchmarks read from local files in GSM8K's and MATH-500's published schemas
(synthetic items this test writes) are evaluated 4 times per item beside the experiment's own, graded by
math-verify, and analysed with pass@k and maj@k; editing a file reruns its evaluation."""

import json

import pandas as pd
import pytest
import yaml
from conftest import TINY, copy_of_the_repository, job_counts, readme_run

pytestmark = pytest.mark.workflow


def _write_local_files(workdir):
    """Short arithmetic items in the published schemas: the tiny builtin policy reads them (its 32 characters)."""
    data = workdir / "local_data"
    data.mkdir()
    gsm = [{"question": f"{a}+{b}=", "answer": f"{a} and {b}\n#### {a + b}"} for a in range(6) for b in range(3)]
    (data / "gsm8k_test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in gsm))
    math = [
        {"problem": f"{a}+{b}=", "solution": "...", "answer": str(a + b), "subject": "Algebra", "level": 1,
         "unique_id": f"test/algebra/{a}{b}.json"}
        for a in range(4) for b in range(4)
    ]  # fmt: skip
    (data / "math500_test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in math))
    return data


def test_external_benchmarks_run_end_to_end_with_maj_at_k(tmp_path):
    workdir = copy_of_the_repository(tmp_path / "checkout")
    _write_local_files(workdir)
    config = yaml.safe_load(TINY.read_text())
    config["experiment"] = "tiny_external"
    config["eval"] = {
        **config["eval"],
        "samples": 4,
        "pass_k": [1, 4],
        "maj_k": [1, 4],
        "external": {
            "gsm": {"source": "file", "format": "gsm8k", "path": "local_data/gsm8k_test.jsonl", "domain": "math",
                    "prompt": "{question}"},
            "math500": {"source": "file", "format": "math500", "path": "local_data/math500_test.jsonl",
                        "domain": "math", "prompt": "{question}"},
        },
    }  # fmt: skip
    configfile = workdir / "external.yaml"
    configfile.write_text(yaml.safe_dump(config))
    run = readme_run(workdir, configfile=configfile)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    out = workdir / "results" / "tiny_external"
    scores = pd.read_parquet(out / "scores.parquet")
    external = scores[scores.benchmark.isin(["gsm", "math500"])]
    assert set(external.benchmark) == {"gsm", "math500"} and (external.n_samples == 4).all()
    assert len(external) == (18 + 16) * 6  # every item of 2 arms x 2 seeds and of the base policy at both seeds
    answers = pd.read_parquet(out / "evals" / "grpo" / "seed-1" / "answers.parquet")
    assert {"extracted", "status", "vote"} <= set(answers.columns)
    assert set(answers[answers.benchmark == "gsm"].groupby("item").size()) == {4}
    manifest = json.loads((out / "evals" / "grpo" / "seed-1" / "manifest.json").read_text())
    assert sum(manifest["outcomes"]["math500"].values()) == 16 * 4
    summaries = pd.read_csv(out / "analysis" / "summaries.csv")
    assert {"maj@1", "maj@4", "pass@4"} <= set(summaries["summary"])
    comparisons = pd.read_csv(out / "analysis" / "comparisons.csv")
    assert {"maj@1", "maj@4", "gsm", "math500"} <= set(comparisons["measure"])
    # the round trip: the evaluation folders read back through the lm-eval import give the same table
    from armlab.analysis import inputs

    runs = inputs.runs.runs_from_pattern(str(out / "evals/{arm}/seed-{seed}"), "tiny_external")
    domains = {b: "math" for b in ("gsm", "math500", "add", "mod")} | {"boolexpr": "logic", "units": "science"}
    read_back = inputs.lmeval.lmeval_to_tidy(runs, experiment="tiny_external", benchmarks=domains, metric="acc,samples")
    key = ["arm", "seed", "benchmark", "item"]
    pd.testing.assert_frame_equal(
        read_back.sort_values(key, ignore_index=True), scores.sort_values(key, ignore_index=True), check_like=True
    )

    # an edited local file reruns the task configs and every evaluation, not the training
    with open(workdir / "local_data" / "gsm8k_test.jsonl", "a") as f:
        f.write(json.dumps({"question": "9+9=", "answer": "#### 18"}) + "\n")
    dry = readme_run(workdir, "-n", configfile=configfile)
    counts = job_counts(dry.stdout + dry.stderr)
    # the 4 runs' evaluations and the sampled base's at both seeds
    assert counts.get("lm_eval_tasks") == 1 and counts.get("evaluate") == 6 and not counts.get("train")


def test_the_real_architecture_config_runs_end_to_end(real_architecture_run):
    """The committed config, with the README's command (the session's run): GPT-2's weights (the exported builtin
    base) trained by TRL in two arms x 2 seeds, sampled 4 times per item on local GSM8K- and MATH-500-format files,
    graded by math-verify, analysed (avg@4, pass@4, maj@4) and reported."""
    workdir, _ = real_architecture_run
    out = workdir / "results" / "real_architecture"
    exported = json.loads((out / "base_hf" / "model" / "config.json").read_text())
    assert exported["architectures"] == ["ArmlabCharForCausalLM"] and exported["n_head"] == 2  # GPT-2's weights
    scores = pd.read_parquet(out / "scores.parquet")
    assert {"gsm8k_synthetic", "math500_synthetic"} <= set(scores.benchmark) and (scores.n_samples == 4).all()
    assert set(scores.arm) == {"base", "grpo", "dr_grpo"}
    manifest = json.loads((out / "evals" / "grpo" / "seed-1" / "manifest.json").read_text())
    assert manifest["lm_eval_model"] == "hf" and manifest["outcomes"]["gsm8k_synthetic"]["graded"] > 0
    comparisons = pd.read_csv(out / "analysis" / "comparisons.csv")
    assert {"maj@4", "pass@4", "gsm8k_synthetic"} <= set(comparisons["measure"])
    assert "maj@4" in (out / "report" / "index.html").read_text()


REASONING_GYM = "config/experiments/reasoning_gym.yaml"


def test_the_reasoning_gym_config_trains_and_evaluates_on_its_generators(tmp_path):
    """The committed config, with the README's command: TRL trains two arms x 2 seeds on armlab's pools plus
    reasoning-gym's chain_sum prompts (rewarded by its score_answer); every checkpoint is sampled on 50 other
    chain_sum items, none of them a training prompt, graded by the same rule; analysed and reported."""
    pytest.importorskip("reasoning_gym", reason="reasoning-gym is not installed (pip install 'armlab[reasoning_gym]')")
    workdir = copy_of_the_repository(tmp_path / "checkout")
    run = readme_run(workdir, configfile=REASONING_GYM)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = workdir / "results" / "reasoning_gym"
    scores = pd.read_parquet(out / "scores.parquet")
    arith = scores[scores.benchmark == "arith"]
    # 2 arms x 2 seeds, and the sampled base at both seeds
    assert len(arith) == 6 * 50 and (arith.n_samples == 4).all() and set(arith.arm) == {"base", "grpo", "dr_grpo"}
    assert set(arith.n_correct) <= {0, 1, 2, 3, 4}  # whole verdicts: pass@k and maj@k apply
    evaluated = set(pd.read_parquet(out / "lm_eval_tasks" / "external" / "arith.parquet").prompt)
    for run_dir in sorted((out / "runs").glob("*/seed-*")):
        prompts = pd.read_parquet(run_dir / "reasoning_gym_prompts.parquet")
        assert len(prompts) == 120 and prompts.prompt.is_unique and not evaluated & set(prompts.prompt)
        mixture = pd.read_parquet(run_dir / "mixture.parquet")
        assert mixture.share_gym.mean() > 0.3  # 120 of the pools' prompts are chain_sum's
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert "reasoning_gym_prompts.parquet" in manifest["files"]
    answers = pd.read_parquet(out / "evals" / "grpo" / "seed-1" / "answers.parquet")
    assert (answers[answers.benchmark == "arith"].status == "graded").mean() > 0.5
    assert {"maj@4", "pass@4", "arith"} <= set(pd.read_csv(out / "analysis" / "comparisons.csv")["measure"])
