"""`armlab analyze` end to end: DataFlex-RL's released table, our tidy scores, errors."""

import csv
import json
from importlib import metadata

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, require_dataflex_table
from scipy import stats
from statsmodels.stats.multitest import multipletests

from armlab import cli
from armlab.analysis import tables
from armlab.analysis.design.synthetic import synthetic_scores

DATAFLEX_CONFIG = REPO / "config/experiments/dataflex_rl_released.yaml"
MATH = ["math500", "aime24", "olympiadbench", "minerva_math", "gsm8k"]
LOGIC = ["kk_hard", "bbh_logical_deduction", "bbh_tracking", "zebra_logic_mc"]
SCIENCE = ["gpqa_diamond", "mmlu_pro_chemistry", "mmlu_pro_physics"]


@pytest.fixture(scope="module")
def dataflex(tmp_path_factory):
    table = require_dataflex_table()
    out = tmp_path_factory.mktemp("dataflex") / "analysis"
    rc = cli.main(["analyze", str(DATAFLEX_CONFIG), "--out", str(out), "--set", f"input.path={table}"])
    assert rc == 0
    return out


def _by_hand():
    """Per (method, seed) six-benchmark and domain-balanced summaries of the 7B main round, from the CSV."""
    out = {}
    with open(require_dataflex_table()) as f:
        for r in csv.DictReader(f):
            if r["campaign"] == "main" and r["model"] == "Qwen2.5-7B-Instruct":
                mean = lambda cols, r=r: sum(float(r[c]) for c in cols) / len(cols) / 100  # noqa: E731
                out[r["method"], int(r["seed"])] = (
                    mean(MATH + ["gpqa_diamond"]),
                    (mean(MATH) + mean(LOGIC) + mean(SCIENCE)) / 3,
                )
    return out


def test_dataflex_rank_correlation_is_the_papers_minus_one_third(dataflex):
    sens = pd.read_csv(dataflex / "sensitivity.csv")
    row = sens[
        (sens["ranking"] == "selection_reweighting")
        & (sens["summary_a"] == "domain_balanced")
        & (sens["summary_b"] == "six_benchmark")
    ]
    assert row["n_arms"].item() == 9
    assert row["spearman"].item() == pytest.approx(-1 / 3, abs=1e-12)


def test_dataflex_summaries_match_a_hand_computation(dataflex):
    summaries = pd.read_csv(dataflex / "summaries.csv").set_index(["arm", "seed", "summary"])["value"]
    assert list(pd.read_csv(dataflex / "summaries.csv").columns) == ["arm", "seed", "summary", "value"]
    assert len(summaries) == 13 * 3 * 3
    for (method, seed), (six, balanced) in _by_hand().items():
        assert summaries[method, seed, "six_benchmark"] == pytest.approx(six, abs=1e-12)
        assert summaries[method, seed, "domain_balanced"] == pytest.approx(balanced, abs=1e-12)


def test_dataflex_comparisons_are_two_holm_families_that_three_seeds_cannot_make_significant(dataflex):
    comp = pd.read_csv(dataflex / "comparisons.csv")
    required = [
        "family",
        "measure",
        "arm",
        "reference",
        "n_seeds",
        "mean_diff",
        "ci_low",
        "ci_high",
        "ci_method",
        "p_value",
        "p_holm",
        "reject",
        "min_attainable_p",
        "equivalent",
        "mde",
    ]
    assert list(comp.columns[: len(required)]) == required
    families = comp.groupby("family")["arm"].unique().map(set).to_dict()
    assert families == {
        "selection_reweighting": {"ar", "per", "softmax", "diffband", "difffilter", "maxvar", "gfpo", "topk"},
        "mixers": {"reward_gap", "dump_ucb", "tscl"},
    }
    assert (comp["n_seeds"] == 3).all() and (comp["p_value"] >= 0.25).all() and not comp["reject"].any()
    # Holm over the primary summary's arms; the gatekept secondary cells cannot go below 1 either
    primary = comp[comp["stage"] == "primary"]
    assert set(primary.groupby("family")["min_attainable_p"].unique().map(tuple)) == {(1.0,), (0.75,)}
    assert (comp.loc[comp["stage"] == "secondary", "min_attainable_p"] == 1.0).all()
    assert np.isinf(comp["mde"]).all()
    report = (dataflex / "report.md").read_text()
    assert (
        "with 3 seeds an exact sign-flip test has 8 sign patterns, so even a single comparison cannot give "
        "p below 0.25" in report
    )
    assert "Family mixers: arms vs static, per summary" in (dataflex / "comparisons.md").read_text()
    assert r"\begin{tabular}" in (dataflex / "comparisons.tex").read_text()


def test_dataflex_gfpo_row_against_hand_differences_scipy_and_holm(dataflex):
    comp = pd.read_csv(dataflex / "comparisons.csv")
    hand = _by_hand()
    arm = np.array([hand["gfpo", s][1] for s in (1, 2, 3)])
    ref = np.array([hand["baseline", s][1] for s in (1, 2, 3)])
    rows = comp[(comp["family"] == "selection_reweighting") & (comp["measure"] == "domain_balanced")]
    gfpo = rows[rows["arm"] == "gfpo"].set_index("ci_method")
    assert gfpo["mean_diff"].iloc[0] == pytest.approx((arm - ref).mean(), abs=1e-12)
    assert (arm > ref).all() and gfpo["p_value"].iloc[0] == 0.25  # all three positive: 2 of 8 patterns
    for method, name in (("percentile", "percentile"), ("bca", "BCa")):
        # the pipeline draws seed resamples from default_rng([bootstrap_seed, n_seeds, 0])
        ref_ci = stats.bootstrap(
            (arm, ref),
            lambda x, y, axis: np.mean(x - y, axis=axis),
            paired=True,
            vectorized=True,
            n_resamples=10_000,
            method=name,
            rng=np.random.default_rng([0, 3, 0]),
        ).confidence_interval
        assert gfpo.loc[method, ["ci_low", "ci_high"]].tolist() == pytest.approx([ref_ci.low, ref_ci.high], abs=1e-12)
    first = rows.drop_duplicates("arm")  # Holm over the family's 8 arms, for this summary
    assert len(first) == 8
    assert first["p_holm"].tolist() == pytest.approx(multipletests(first["p_value"], method="holm")[1])


def test_dataflex_default_path_is_the_shared_copy(tmp_path, monkeypatch):
    require_dataflex_table()
    monkeypatch.chdir(REPO)
    assert (
        cli.main(
            [
                "analyze",
                str(DATAFLEX_CONFIG),
                "--out",
                str(tmp_path / "a"),
                "--set",
                "analysis.resamples=200",
                "--set",
                "analysis.per_benchmark=false",
            ]
        )
        == 0
    )
    assert yaml.safe_load(DATAFLEX_CONFIG.read_text())["input"]["path"] == "../shared/data/dataflex-rl/all_runs_171.csv"


def test_errors_exit_2_without_traceback_or_output(tmp_path, capsys):
    out = tmp_path / "out"
    rc = cli.main(["analyze", str(DATAFLEX_CONFIG), "--out", str(out), "--set", "input.path=/nonexistent/runs.csv"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("armlab analyze: error: /nonexistent/runs.csv: wide CSV not found")
    assert "Traceback" not in err and not out.exists() and list(tmp_path.iterdir()) == []
    out.mkdir()
    (out / "previous.csv").write_text("kept")
    assert cli.main(["analyze", str(DATAFLEX_CONFIG), "--out", str(out), "--set", "analysis.alpha=2"]) == 2
    assert f"{out}: not empty and not an earlier output of `armlab analyze`" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["previous.csv"]


# ------------------------------------------------------------------------ our own experiment

BENCHMARKS = {"add": "math", "sub": "math", "boolexpr": "logic", "parity": "logic", "units": "science"}


def _experiment(tmp_path, analysis=None):
    """A pipeline-style JSON config and scores.parquet with a base arm at seed 0, in results/<exp>/."""
    config = {
        "experiment": "demo",
        "seeds": [1, 2, 3, 4, 5, 6],
        "benchmarks": {b: {"domain": d, "n_items": 40} for b, d in BENCHMARKS.items()},
        "recipe": {"steps": 10},
        "arms": {"grpo": {}, "dr_grpo": {"estimator": "dr_grpo"}, "rloo": {}},
        "comparisons": [{"family": "estimators", "reference": "grpo", "arms": ["dr_grpo", "rloo"]}],
        "analysis": {"resamples": 2000, "subsets": {"math_only": ["add", "sub"]}, **(analysis or {})},
    }
    rng = np.random.default_rng(1)
    trained = synthetic_scores(
        arms=["grpo", "dr_grpo", "rloo"],
        seeds=range(1, 7),
        benchmarks=BENCHMARKS,
        items=40,
        experiment="demo",
        rng=rng,
        effects={"rloo": 0.4},
    )
    base = synthetic_scores(arms=["base"], seeds=[0], benchmarks=BENCHMARKS, items=40, experiment="demo", rng=rng)
    scores = tmp_path / "results/demo/scores.parquet"
    scores.parent.mkdir(parents=True)
    pd.concat([trained, base], ignore_index=True).to_parquet(scores)
    path = tmp_path / "resolved.json"
    path.write_text(json.dumps(config))
    return path, scores


def test_tidy_scores_with_a_base_arm_and_a_json_config(tmp_path, capsys):
    config, scores = _experiment(tmp_path, {"item_bootstrap": True, "ci_methods": ["percentile", "bca"]})
    out = tmp_path / "results/demo/analysis"
    assert cli.main(["analyze", str(config), "--scores", str(scores), "--out", str(out)]) == 0
    assert "arm(s) base are in no comparison and only summarized" in capsys.readouterr().out
    summaries = pd.read_csv(out / "summaries.csv")
    assert set(summaries["arm"]) == {"grpo", "dr_grpo", "rloo", "base"}
    assert set(summaries["summary"]) == {"domain_balanced", "flat", "math_only"}
    comp = pd.read_csv(out / "comparisons.csv")
    assert set(comp["arm"]) == {"dr_grpo", "rloo"} and set(comp["reference"]) == {"grpo"}
    assert set(comp["ci_method"]) == {"sign_flip", "percentile", "bca", "crossed_components"}
    assert (comp["n_seeds"] == 6).all()
    rloo = comp[(comp["arm"] == "rloo") & (comp["measure"] == "domain_balanced")].set_index("ci_method")
    assert (rloo["ci_low"] > 0).all()  # a clear effect on every seed: 2/64 is the smallest p
    assert rloo["p_value"].iloc[0] == pytest.approx(2 / 64)
    # the crossed interval adds item variance, so it is wider than the seeds-only one
    width = rloo["ci_high"] - rloo["ci_low"]
    assert width["crossed_components"] > width["percentile"]
    first = comp[comp["ci_method"] == "sign_flip"]
    primary = first[first["stage"] == "primary"]  # Holm across the arms on the primary summary
    assert primary["p_holm"].tolist() == pytest.approx(multipletests(primary["p_value"], method="holm")[1])
    secondary = first[first["stage"] == "secondary"]  # then Holm over all other cells, gated by the primary
    gated = np.maximum(multipletests(secondary["p_value"], method="holm")[1], primary["p_holm"].max())
    assert secondary["p_holm"].tolist() == pytest.approx(gated)
    weights = pd.read_csv(out / "weights.csv").set_index(["summary", "benchmark"])["weight"]
    assert weights["domain_balanced", "add"] == pytest.approx(1 / 6)
    assert weights["domain_balanced", "units"] == pytest.approx(1 / 3)
    assert weights["math_only", "add"] == 0.5 and weights["math_only", "units"] == 0.0


def test_default_input_is_results_experiment_scores_and_runs_are_deterministic(tmp_path, monkeypatch):
    config, _ = _experiment(tmp_path)
    monkeypatch.chdir(tmp_path)
    bootstrap = ["--set", "analysis.ci_methods=[percentile]"]  # the seed matters only to resampled intervals
    assert cli.main(["analyze", str(config), "--out", "a1", *bootstrap]) == 0
    assert cli.main(["analyze", str(config), "--out", "a2", *bootstrap]) == 0
    assert (tmp_path / "a1/comparisons.csv").read_text() == (tmp_path / "a2/comparisons.csv").read_text()
    assert cli.main(["analyze", str(config), "--out", "a3", *bootstrap, "--set", "analysis.bootstrap_seed=1"]) == 0
    assert (tmp_path / "a1/comparisons.csv").read_text() != (tmp_path / "a3/comparisons.csv").read_text()


def test_dropped_runs_are_listed_and_shrink_only_their_comparison(tmp_path):
    config, scores = _experiment(tmp_path, {"drop_incomplete": True})
    frame = pd.read_parquet(scores)
    gone = (frame["arm"] == "rloo") & (frame["seed"] == 4) & (frame["benchmark"] == "units")
    frame[~gone].to_parquet(scores)
    out = tmp_path / "out"
    assert cli.main(["analyze", str(config), "--scores", str(scores), "--out", str(out)]) == 0
    dropped = pd.read_csv(out / "dropped.csv")
    assert dropped[["arm", "seed"]].values.tolist() == [["rloo", 4]]
    assert "missing benchmark(s) ['units']" in dropped["reason"].item()
    comp = pd.read_csv(out / "comparisons.csv")
    assert comp.groupby("arm")["n_seeds"].unique().map(tuple).to_dict() == {"dr_grpo": (6,), "rloo": (5,)}
    assert "Dropped run arm=rloo seed=4" in (out / "report.md").read_text()


def test_a_subcommand_is_one_registered_function(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_SUBCOMMANDS", list(cli._SUBCOMMANDS))

    @cli.subcommand
    def hello(subparsers):
        subparsers.add_parser("hello").set_defaults(run=lambda args: print("hi") or 0)

    assert cli.main(["hello"]) == 0 and capsys.readouterr().out == "hi\n"


def test_the_console_ends_with_a_verdict_per_arm_and_summary_reprints_it(tmp_path, capsys):
    config, scores = _experiment(tmp_path)
    out = tmp_path / "results/demo/analysis"
    assert cli.main(["analyze", str(config), "--scores", str(scores), "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    comp = pd.read_csv(out / "comparisons.csv")
    primary = comp[comp["stage"] == "primary"].set_index("arm")
    assert printed[-3] == f"Verdicts ({out / 'comparisons.csv'}):"
    for line, arm in zip(printed[-2:], ["dr_grpo", "rloo"]):
        row = primary.loc[arm]
        verdict = tables.verdicts(primary.loc[[arm]])[0]
        assert line.startswith(
            f"  estimators: {arm} vs grpo on domain_balanced: {verdict}, Δ {tables.points(row.mean_diff)}"
        )
    # by hand: rloo's clear effect on all 6 seeds gives p = 2/64, Holm over 2 arms 0.0625, so neither is
    # rejected; the level is then 1 - 0.05/2, where no 6 seeds can reach it (2/64 > 0.025): the line says so
    # (it said "unbounded (97.5%)"), and shows the TOST's interval at its Holm level, 1 - 2 x 0.05/2, outside ±1
    assert printed[-1].endswith(
        ": inconclusive, Δ +5.56 points, cannot be significant with 6 seeds at Holm's level (97.5%); "
        "TOST interval at Holm's level [+2.50, +10.83] (95%) not inside ±1 point, TOST Holm p 1"
    )
    assert cli.main(["summary", str(tmp_path / "results/demo")]) == 0  # the experiment folder finds analysis/
    assert capsys.readouterr().out.splitlines() == printed[-3:]
    assert cli.main(["summary", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere/comparisons.csv: not found" in err


def test_version_and_distinct_exit_statuses_for_bad_input_and_internal_failure(monkeypatch, capsys, tmp_path):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"armlab {metadata.version('armlab')}\n"
    assert cli.main(["summary", str(tmp_path)]) == cli.BAD_INPUT == 2  # refused input: one line, no traceback
    assert "Traceback" not in capsys.readouterr().err
    monkeypatch.setattr(cli, "_SUBCOMMANDS", list(cli._SUBCOMMANDS))

    @cli.subcommand
    def broken(subparsers):
        subparsers.add_parser("broken").set_defaults(run=lambda args: 1 / 0)

    assert cli.main(["broken"]) == cli.INTERNAL_FAILURE == 3  # armlab's own failure: the traceback, then why
    err = capsys.readouterr().err
    assert "ZeroDivisionError" in err and err.endswith(
        "armlab broken: internal failure (a bug in armlab; the traceback is above)\n"
    )
    with pytest.raises(SystemExit) as usage:
        cli.main(["analyze"])  # argparse's usage error is bad input too
    assert usage.value.code == cli.BAD_INPUT
