"""End to end: Snakemake runs the tiny experiment (2 arms × 2 seeds × a few steps) to scores.parquet."""

import subprocess

import pandas as pd
import pytest

from conftest import REPO, TINY


def _snakemake(snakemake_bin, workdir, *extra, configfile=TINY):
    return subprocess.run([snakemake_bin, "-s", str(REPO / "Snakefile"), "--configfile", str(configfile),
                           "--replace-workflow-config", "--cores", "2", *extra],
                          cwd=workdir, capture_output=True, text=True, timeout=900)


def _job_counts(output: str) -> dict[str, int]:
    """The "Job stats" table of a Snakemake dry run, as {rule: count}."""
    table = output.split("Job stats:")[1].splitlines()[3:]
    counts = {}
    for line in table:
        fields = line.split()
        if len(fields) != 2 or not fields[1].isdigit():
            break
        counts[fields[0]] = int(fields[1])
    counts.pop("total", None)
    return counts


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    import shutil
    import sys
    from pathlib import Path

    snakemake_bin = shutil.which("snakemake") or str(Path(sys.executable).parent / "snakemake")
    workdir = tmp_path_factory.mktemp("e2e")
    dry = _snakemake(snakemake_bin, workdir, "-n")
    proc = _snakemake(snakemake_bin, workdir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return workdir, dry, snakemake_bin


def test_dry_run_lists_the_whole_dag(tiny_run):
    _, dry, _ = tiny_run
    assert dry.returncode == 0
    counts = _job_counts(dry.stdout + dry.stderr)
    assert {rule: counts.get(rule) for rule in ("train", "evaluate", "base_policy", "merge_scores", "analyze")} == \
        {"train": 4, "evaluate": 5, "base_policy": 1, "merge_scores": 1, "analyze": 1}


def test_scores_follow_the_tidy_contract(tiny_run):
    workdir, _, _ = tiny_run
    scores = pd.read_parquet(workdir / "results" / "tiny" / "scores.parquet")
    assert list(scores.columns) == ["experiment", "arm", "seed", "benchmark", "domain", "item", "score"]
    assert set(scores.experiment) == {"tiny"}
    runs = set(map(tuple, scores[["arm", "seed"]].drop_duplicates().values.tolist()))
    assert runs == {("base", 0), ("grpo", 1), ("grpo", 2), ("difffilter", 1), ("difffilter", 2)}
    per_run = scores.groupby(["arm", "seed"]).size()
    assert (per_run == 4 * 20).all()
    assert scores.score.between(0, 1).all()
    assert not scores.duplicated(["arm", "seed", "benchmark", "item"]).any()
    # the same item ids for every run: the pairing key across arms
    items = scores.groupby(["arm", "seed"]).item.apply(frozenset)
    assert items.nunique() == 1


def test_every_job_has_a_log_and_a_manifest(tiny_run):
    workdir, _, _ = tiny_run
    out = workdir / "results" / "tiny"
    for arm in ("grpo", "difffilter"):
        for seed in (1, 2):
            assert (out / "logs" / "train" / arm / f"seed-{seed}.log").read_text().strip()
            assert (out / "runs" / arm / f"seed-{seed}" / "manifest.json").exists()
            assert (out / "evals" / arm / f"seed-{seed}" / "results.json").exists()


def test_second_run_does_nothing(tiny_run):
    workdir, _, snakemake_bin = tiny_run
    again = _snakemake(snakemake_bin, workdir, "-n")
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr


def test_analysis_outputs_are_written(tiny_run):
    workdir, _, _ = tiny_run
    comparisons = pd.read_csv(workdir / "results" / "tiny" / "analysis" / "comparisons.csv")
    assert set(comparisons.family) == {"data_policies"}
    assert set(comparisons.arm) == {"difffilter"} and set(comparisons.reference) == {"grpo"}
    assert (comparisons.n_seeds == 2).all()


def test_editing_the_analysis_section_reruns_only_the_analysis(tiny_run, tmp_path):
    import yaml

    workdir, _, snakemake_bin = tiny_run
    edited = yaml.safe_load(TINY.read_text())
    edited.setdefault("analysis", {})["alpha"] = 0.1
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(edited))
    dry = _snakemake(snakemake_bin, workdir, "-n", configfile=path)
    assert dry.returncode == 0
    assert _job_counts(dry.stdout + dry.stderr) == {"stage_config": 1, "analyze": 1, "report": 1, "all": 1}
