"""End to end: Snakemake runs the tiny experiment (2 arms × 2 seeds × a few steps) to scores.parquet.

The run itself is the session's ``tiny_run`` (tests/conftest.py), shared with the SLURM test."""

import json
import re
import shutil

import pandas as pd
import pytest
from conftest import TINY, job_counts, readme_run, snakemake_command, start_and_kill_when

from armlab.contract import COLUMNS

pytestmark = pytest.mark.workflow


def test_dry_run_lists_the_whole_dag(tiny_run):
    _, dry = tiny_run
    assert dry["returncode"] == 0
    counts = job_counts(dry["stdout"] + dry["stderr"])
    assert {rule: counts.get(rule) for rule in ("train", "evaluate", "base_policy", "merge_scores", "analyze")} == {
        "train": 4,
        "evaluate": 6,  # 4 runs and the sampled base at each of the 2 seeds
        "base_policy": 1,
        "merge_scores": 1,
        "analyze": 1,
    }


def test_the_start_says_what_two_seeds_can_decide_and_the_analysis_agrees(tiny_run):
    """The plan (analysis/design/planning.py) is printed before any job, also in a dry run, and is what the analysis
    finds."""
    workdir, dry = tiny_run
    lines = [line for line in dry["stdout"].splitlines() if line.startswith("armlab plan:")]
    assert lines[0].startswith("armlab plan: family data_policies: 1 arm(s) x 2 seeds: smallest Holm p 0.5 (can NOT")
    assert "WARNING: with 2 seeds nothing in family data_policies can be significant" in lines[1]
    assert "at least 6 seeds needed" in lines[1]  # 2/2^6 = 0.031 <= 0.05 < 2/2^5
    comparisons = pd.read_csv(workdir / "results" / "tiny" / "analysis" / "comparisons.csv")
    primary = comparisons[comparisons["stage"] == "primary"]
    assert set(primary["min_attainable_p"]) == {0.5} and not primary["reject"].any()  # 2/2^2
    secondary = comparisons[comparisons["stage"] == "secondary"].drop_duplicates(["measure", "arm"])
    assert f"its {len(secondary)} secondary cell(s) 1 (can NOT reach alpha);" in lines[0]


def test_the_run_holds_exactly_its_own_benchmarks(tiny_run):
    """On e2d0814 the job processes merged config/config.yaml in: 12 benchmarks instead of tiny's 4."""
    workdir, _ = tiny_run
    out = workdir / "results" / "tiny"
    own = {"add", "mod", "boolexpr", "units"}
    assert {p.stem for p in (out / "data" / "eval").glob("*.parquet")} == own
    assert {p.stem for p in (out / "lm_eval_tasks").glob("*.yaml")} == own
    assert set(pd.read_parquet(out / "scores.parquet").benchmark) == own
    assert json.loads((out / "config" / "train" / "grpo.json").read_text())["recipe"]["lr"] == 0.0003  # schema default


def test_scores_follow_the_tidy_contract(tiny_run):
    workdir, _ = tiny_run
    scores = pd.read_parquet(workdir / "results" / "tiny" / "scores.parquet")
    assert list(scores.columns) == COLUMNS
    # tiny.yaml samples two answers per item: an item's score is their mean
    assert (scores.n_samples == 2).all() and (scores.score == scores.n_correct / 2).all()
    assert set(scores.experiment) == {"tiny"}
    runs = set(map(tuple, scores[["arm", "seed"]].drop_duplicates().values.tolist()))
    # the sampled base is evaluated at each seed, like the arms, so that comparisons with it pair by seed
    assert runs == {("base", 1), ("base", 2), ("grpo", 1), ("grpo", 2), ("difffilter", 1), ("difffilter", 2)}
    per_run = scores.groupby(["arm", "seed"]).size()
    assert (per_run == 4 * 20).all()
    assert scores.score.between(0, 1).all()
    assert not scores.duplicated(["arm", "seed", "benchmark", "item"]).any()
    # the same item ids for every run: the pairing key across arms
    items = scores.groupby(["arm", "seed"]).item.apply(frozenset)
    assert items.nunique() == 1


def test_every_job_has_a_log_and_a_manifest(tiny_run):
    workdir, _ = tiny_run
    out = workdir / "results" / "tiny"
    for arm in ("grpo", "difffilter"):
        for seed in (1, 2):
            assert (out / "logs" / "train" / arm / f"seed-{seed}.log").read_text().strip()
            assert (out / "runs" / arm / f"seed-{seed}" / "manifest.json").exists()
            assert (out / "evals" / arm / f"seed-{seed}" / "results.json").exists()
    # every job that runs torch records what decided its bits, and the workflow's default pins them (portable)
    for manifest in [
        out / "base" / "manifest.json",
        *out.glob("runs/*/seed-*/manifest.json"),
        *out.glob("evals/*/seed-*/manifest.json"),
    ]:
        numerics = json.loads(manifest.read_text())["numerics"]
        assert numerics["mode"] == "portable" and numerics["aten_capability"] == "AVX2", manifest
        assert numerics["class"].startswith("portable: x86-64 with AVX2") and numerics["threads"] == 1
    assert "numerics portable: x86-64 with AVX2" in (out / "report" / "index.html").read_text()


def test_second_run_does_nothing(tiny_run):
    workdir, _ = tiny_run
    again = readme_run(workdir, "-n")
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr
    # with the runs' manifests there, the plan prices the runs at their measured time per step: the tiny
    # config's own steps, so two seeds of each arm cost what the two measured ones did
    out = workdir / "results" / "tiny"
    seconds = [
        json.loads((out / stage / arm / f"seed-{seed}" / "manifest.json").read_text())["seconds"]
        for stage in ("runs", "evals")
        for arm in ("grpo", "difffilter")
        for seed in (1, 2)
    ]
    line = next(line for line in again.stdout.splitlines() if "job-minutes" in line)
    job_minutes, wall = map(float, re.findall(r"([0-9.]+) (?:job-minutes|min on 2 core)", line))
    assert job_minutes == pytest.approx(sum(seconds) / 60, abs=0.051) and "of 4 earlier run(s)" in line
    assert wall == pytest.approx(sum(seconds) / 60 / 2, abs=0.051)


def test_analysis_outputs_are_written(tiny_run):
    workdir, _ = tiny_run
    comparisons = pd.read_csv(workdir / "results" / "tiny" / "analysis" / "comparisons.csv")
    assert set(comparisons.family) == {"data_policies"}
    assert set(comparisons.arm) == {"difffilter"} and set(comparisons.reference) == {"grpo"}
    assert (comparisons.n_seeds == 2).all()
    # sampled evaluation: pass@k compared, the variance split, and the advice priced with the manifests' job times
    assert "pass@2" in set(comparisons.measure)
    analysis = workdir / "results" / "tiny" / "analysis"
    components = pd.read_csv(analysis / "variance_components.csv")
    assert len(components) == 1 and components.samples.iloc[0] == 2 and components.var_sampling.iloc[0] > 0
    advice = pd.read_csv(analysis / "allocation.csv")
    assert list(advice.option) == ["seed", "samples"] and (advice.minutes > 0).all()
    assert "What to buy next" in (workdir / "results" / "tiny" / "report" / "index.html").read_text()


def test_editing_the_analysis_section_reruns_only_the_analysis(tiny_run, tmp_path):
    import yaml

    workdir, _ = tiny_run
    edited = yaml.safe_load(TINY.read_text())
    edited.setdefault("analysis", {})["alpha"] = 0.1
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(edited))
    dry = readme_run(workdir, "-n", configfile=path)
    assert dry.returncode == 0
    assert job_counts(dry.stdout + dry.stderr) == {"stage_config": 1, "analyze": 1, "report": 1, "all": 1}


# hidden files a finished run keeps on purpose: armlab's output marker and Snakemake's directory timestamps
KNOWN_HIDDEN = {".armlab-output.json", ".snakemake_timestamp"}


def _started(stage):
    return lambda workdir: any((workdir / "results" / "tiny" / "logs" / stage).rglob("*.log"))


def _outputs(workdir):
    """What a run computed: the scores, the analysis tables, and every trained policy's bytes."""
    out = workdir / "results" / "tiny"
    policies = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.glob("runs/*/seed-*/policy.pt"))}
    tables = {name: pd.read_csv(out / "analysis" / name) for name in ("comparisons.csv", "summaries.csv")}
    return pd.read_parquet(out / "scores.parquet"), tables, policies


def _checkout_before(stage, reference, workdir):
    """Where a killed ``stage`` starts: the finished run (the session's, copied) without that stage's outputs and
    what follows them; the data and the base policy before them are the same bytes a fresh run would make."""
    shutil.copytree(reference, workdir, symlinks=True)
    out = workdir / "results" / "tiny"
    stages = {"train": ("runs", "logs/train"), "eval": ()}[stage]
    for later in (*stages, "evals", "logs/eval", "analysis", "report", "figures"):
        shutil.rmtree(out / later, ignore_errors=True)
    (out / "scores.parquet").unlink()
    return workdir


@pytest.mark.parametrize("stage", ["train", "eval"])
def test_a_run_killed_during_a_stage_resumes_to_identical_outputs(tiny_run, tmp_path, stage):
    reference, _ = tiny_run
    workdir = _checkout_before(stage, reference, tmp_path / "checkout")
    start_and_kill_when(snakemake_command(), workdir, TINY, _started(stage))
    assert readme_run(workdir, "--unlock").returncode == 0  # what Snakemake tells one to do after a kill
    # resumed in fresh interpreters (each with its own hash seed), like the killed run, while the session's run
    # they must equal was forked (tests/fork_server.py): a result that depended on either would differ
    proc = readme_run(workdir, warm=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    scores, tables, policies = _outputs(workdir)
    ref_scores, ref_tables, ref_policies = _outputs(reference)
    pd.testing.assert_frame_equal(scores, ref_scores)
    for name, table in tables.items():
        pd.testing.assert_frame_equal(table, ref_tables[name])
    assert policies == ref_policies and len(policies) == 4
    leftovers = [p for p in (workdir / "results").rglob(".*") if p.name not in KNOWN_HIDDEN]
    assert leftovers == [], f"temporary files of the killed jobs are still there: {leftovers}"


def test_a_truncated_policy_is_named_removed_and_rebuilt_identically(tiny_run, tmp_path):
    """On e2d0814 a truncated policy.pt gave OSError 22, then "Nothing to be done" with the corrupt file kept."""
    reference, _ = tiny_run
    workdir = tmp_path / "checkout"
    shutil.copytree(reference, workdir, symlinks=True)
    policy = workdir / "results" / "tiny" / "runs" / "grpo" / "seed-1" / "policy.pt"
    policy.write_bytes(policy.read_bytes()[:1000])
    proc = readme_run(workdir, "results/tiny/scores.parquet")  # the run and what is made from it, to the scores
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "results/tiny/runs/grpo/seed-1/policy.pt" in proc.stdout + proc.stderr  # the removal names the file
    scores, tables, policies = _outputs(workdir)
    ref_scores, ref_tables, ref_policies = _outputs(reference)
    assert policies == ref_policies
    pd.testing.assert_frame_equal(scores, ref_scores)


def test_predictions_added_after_the_results_were_seen_are_not_locked(tiny_run, tmp_path):
    """Run, read, delete runs/ (keeping the evaluations), add a prediction, rerun: on 5f41e59 the workflow printed
    "locked … before the first training job" and the analysis called the prediction confirmatory."""
    import yaml

    reference, _ = tiny_run
    workdir = tmp_path / "checkout"
    shutil.copytree(reference, workdir, symlinks=True)
    shutil.rmtree(workdir / "results" / "tiny" / "runs")
    predicted = yaml.safe_load(TINY.read_text())
    predicted["predictions"] = [{"family": "data_policies", "arm": "difffilter", "direction": "better", "source": "x"}]
    path = tmp_path / "predicted.yaml"
    path.write_text(yaml.safe_dump(predicted))
    # a cheap target: the lock is written (or not) when the workflow starts, before any job; only the analysis
    # view, which the added prediction changes, is rebuilt (not the deleted runs)
    proc = readme_run(workdir, "results/tiny/config/analysis.json", configfile=path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "predictions: not locked, because" in proc.stdout + proc.stderr, proc.stdout[-3000:]
    assert "locked in" not in proc.stdout + proc.stderr
    assert not (workdir / "results" / "tiny" / "predictions" / "lock.json").exists()
    assert not (workdir / "results" / "tiny" / "runs").exists(), "the cheap target retrained the deleted runs"
