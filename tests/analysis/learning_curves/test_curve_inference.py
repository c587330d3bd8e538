"""Paired inference over learning curves (analysis/learning_curves/curves.py: `armlab curves --config`), with planted
truths: an arm that learns faster to the same asymptote, one with a lower asymptote, and an A/A twin of the reference,
each found or not found as it should be; the curve measures by hand; bad input refused in one line before anything is
written."""

import re
import shutil
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import yaml

from armlab import cli
from armlab.analysis.config import load_config, parse_config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.learning_curves.curves import (
    _compare_fit_parameters,
    compare_curves,
    curve_matrix,
    curve_measures,
    curve_verdicts,
    family_threshold,
)
from armlab.analysis.learning_curves.forecasts import FIT_COLUMNS
from armlab.cli.analysis import print_curve_verdicts
from armlab.contract import LEDGER
from armlab.files import write_manifest

STEPS = np.arange(0, 101, 10)
START = 0.2
# asymptote, time constant (steps), compute per step: "cheap" learns as grpo does per step at half the cost (as a
# policy that skips rollouts would), so it is ahead at equal compute and level at equal steps
ARMS = {
    "grpo": (0.6, 25.0, 1.0),
    "fast": (0.6, 8.0, 1.0),
    "low": (0.45, 25.0, 1.0),
    "twin": (0.6, 25.0, 1.0),
    "cheap": (0.6, 25.0, 0.5),
}
BENCHMARKS = {"arith": "math", "deduce": "logic"}
ITEMS = 300
SEEDS = range(1, 9)


def _accuracy(asymptote, scale):
    return START + (asymptote - START) * (1 - np.exp(-STEPS / scale))


def _ledger(step, cost):
    """A run's compute ledger at ``step`` (the columns evals/curves.py copies from its ledger.parquet)."""
    spent = step * cost
    return dict(zip(LEDGER, [8.0 * step, 1e3 * spent, 1e3 * spent, float(step), spent, 1e9 * spent]))


def _write_experiment(root):
    """Checkpoint evaluations as evals/curves.py writes them (item scores, Bernoulli at each run's accuracy, with a
    seed effect every arm of the seed shares), and the base policy's scores."""
    rng = np.random.default_rng(0)
    for seed in SEEDS:
        seed_effect = rng.normal(0, 0.02, len(STEPS))
        for arm, (asymptote, scale, cost) in ARMS.items():
            p = np.clip(_accuracy(asymptote, scale) + seed_effect * (STEPS > 0), 0, 1)
            frames = [
                pd.DataFrame(
                    dict(
                        experiment="planted",
                        arm=arm,
                        seed=seed,
                        step=step,
                        benchmark=b,
                        domain=d,
                        item=np.arange(ITEMS),
                    )
                ).assign(score=(rng.random(ITEMS) < p_step).astype(float), **_ledger(step, cost))
                for step, p_step in zip(STEPS[1:], p[1:])
                for b, d in BENCHMARKS.items()
            ]
            run = root / "curves" / arm / f"seed-{seed}"
            run.mkdir(parents=True)
            pd.concat(frames, ignore_index=True).to_parquet(run / "scores.parquet", index=False)
            write_manifest(run, {"arm": arm, "seed": seed}, "scores.parquet")
    base = [
        pd.DataFrame(dict(arm="base", seed=0, benchmark=b, domain=d, item=np.arange(ITEMS), score=0.0))
        for b, d in BENCHMARKS.items()
    ]
    scores = pd.concat(base, ignore_index=True)
    scores.loc[scores.item < START * ITEMS, "score"] = 1.0
    scores.to_parquet(root / "scores.parquet", index=False)
    config = {
        "experiment": "planted",
        "comparisons": [{"family": "curves", "reference": "grpo", "arms": ["fast", "low", "twin", "cheap"]}],
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    return root


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = _write_experiment(tmp_path_factory.mktemp("planted"))
    out = root / "out"
    argv = ["curves", "--curves", str(root / "curves"), "--scores", str(root / "scores.parquet")]
    assert cli.main([*argv, "--config", str(root / "config.yaml"), "--out", str(out)]) == 0
    return root, out


def test_the_faster_arm_is_ahead_early_and_not_at_the_end(planted):
    _, out = planted
    band = pd.read_csv(out / "curve_band.csv")
    fast = band[band.arm == "fast"].set_index("step")
    assert (fast.loc[10:30, "ahead"] == "fast").all()  # ~0.15 ahead early
    assert (fast.loc[70:, "ahead"] == "neither").all() and (fast.band_low.loc[70:] < 0).all()  # same asymptote
    cells = pd.read_csv(out / "curve_comparisons.csv").drop_duplicates(["measure", "arm"]).set_index(["arm", "measure"])
    assert not cells.loc[("fast", "final"), "reject"]
    # the speed shows in the secondary measures, each at the smallest p 8 seeds allow, though the gate keeps them
    # untested while fast's final value (the primary) is not decided
    assert cells.loc[("fast", "area_under_curve"), "mean_diff"] > 0.03
    assert cells.loc[("fast", "steps_to_threshold"), "mean_diff"] < -5
    assert cells.loc[("fast", "area_under_curve"), "p_value"] == cells.loc[("fast", "steps_to_threshold"), "p_value"]
    assert cells.loc[("fast", "area_under_curve"), "p_value"] == pytest.approx(2 / 2**8)
    verdict = pd.read_csv(out / "curve_verdicts.csv").set_index("arm").loc["fast", "verdict"]
    assert verdict.startswith("fast vs grpo: gets there faster (ahead at equal cum_flops ")
    assert verdict.endswith("no decided difference at the end")


def test_the_lower_asymptote_is_found_late_and_at_the_final_checkpoint(planted):
    _, out = planted
    band = pd.read_csv(out / "curve_band.csv")
    low = band[band.arm == "low"].set_index("step")
    assert (low.loc[60:, "ahead"] == "grpo").all() and (low.band_high.loc[60:] < 0).all()
    cells = pd.read_csv(out / "curve_comparisons.csv").drop_duplicates(["measure", "arm"]).set_index(["arm", "measure"])
    final = cells.loc[("low", "final")]
    assert final.reject and final.mean_diff < -0.1 and final.stage == "primary"
    verdict = pd.read_csv(out / "curve_verdicts.csv").set_index("arm").loc["low"]
    assert verdict.final == "lower" and "gets there faster" not in verdict.verdict
    assert verdict.verdict.startswith("low vs grpo: falls behind (at equal cum_flops ")


def test_the_twin_of_the_reference_is_found_nowhere(planted):
    _, out = planted
    band = pd.read_csv(out / "curve_band.csv")
    twin = band[band.arm == "twin"]
    assert (twin.ahead == "neither").all() and ((twin.band_low < 0) & (twin.band_high > 0)).all()
    cells = pd.read_csv(out / "curve_comparisons.csv")
    assert not cells[cells.arm == "twin"].reject.any()
    compute = pd.read_csv(out / "curve_compute_band.csv")
    assert (compute[compute.arm == "twin"].ahead == "neither").all()
    verdict = pd.read_csv(out / "curve_verdicts.csv").set_index("arm").loc["twin", "verdict"]
    assert verdict == "twin vs grpo: no decided difference at the end"


def test_the_cheaper_arm_is_level_at_equal_steps_and_ahead_at_equal_compute(planted):
    """Half the compute per step, the same learning per step: comparing at equal steps hides that it costs half."""
    _, out = planted
    band = pd.read_csv(out / "curve_band.csv")
    assert (band[band.arm == "cheap"].ahead == "neither").all()
    compute = pd.read_csv(out / "curve_compute_band.csv")
    cheap = compute[compute.arm == "cheap"].set_index("budget")
    assert (compute.compute == "cum_flops").all() and len(cheap) == 10
    # every run covers 0 .. 5e10 FLOPs (cheap's whole run, grpo's first 50 steps): 10 budgets, 5e9 apart
    assert np.allclose(cheap.index, np.arange(1, 11) * 5e9)
    assert (cheap.ahead.loc[5e9:3.5e10] == "cheap").all() and (cheap.mean_diff > 0).all()
    verdict = pd.read_csv(out / "curve_verdicts.csv").set_index("arm").loc["cheap"]
    assert verdict.verdict.startswith("cheap vs grpo: gets there faster (ahead at equal cum_flops 5e+09, 1e+10, ")
    assert (out / "equal_compute.png").stat().st_size > 10_000


def test_the_outputs_are_complete_and_the_same_on_a_second_run(planted):
    root, out = planted
    band = pd.read_csv(out / "curve_band.csv")
    assert set(band.step) == set(STEPS[1:]) and (band.n_seeds == 8).all()
    assert (out / "curve_differences.png").stat().st_size > 10_000 and (out / "curve_differences.svg").is_file()
    measures = pd.read_csv(out / "curve_measures.csv")
    assert len(measures) == 5 * 8 * 4  # arms x seeds x measures
    # the same inputs give the same tables (the workflow's outputs are deterministic): computed again in-process
    summaries = pd.read_csv(out / "curves.csv")
    again = compare_curves(summaries, load_config(root / "config.yaml"))
    pd.testing.assert_frame_equal(again.band.reset_index(drop=True), band, check_dtype=False)
    for frame, name in [(again.compute_band, "curve_compute_band.csv"), (again.forecasts, "curve_forecasts.csv")]:
        pd.testing.assert_frame_equal(frame.reset_index(drop=True), pd.read_csv(out / name), check_dtype=False)


def test_the_curve_measures_by_hand():
    """Two runs at steps 0, 10, 20, 40."""
    rows = [
        dict(arm=arm, seed=1, step=step, summary="domain_balanced", value=value)
        for arm, values in {"a": (0.2, 0.4, 0.5, 0.5), "b": (0.2, 0.25, 0.3, 0.45)}.items()
        for step, value in zip((0, 10, 20, 40), values)
    ]
    matrix = curve_matrix(pd.DataFrame(rows), "domain_balanced")
    threshold = family_threshold(matrix, None)
    assert threshold == pytest.approx((0.2 + (0.5 + 0.45) / 2) / 2)  # halfway from the first step's mean to the last's
    measures = curve_measures(matrix, threshold).loc["a"].iloc[0]
    # trapezoid: (0.2+0.4)/2*10 + (0.4+0.5)/2*10 + 0.5*20 = 3 + 4.5 + 10 = 17.5 over 40 steps
    assert measures.area_under_curve == pytest.approx(17.5 / 40)
    assert measures.steps_to_threshold == pytest.approx(10 * (threshold - 0.2) / (0.4 - 0.2))
    assert measures.final == 0.5 and measures.best_checkpoint == 0.5
    never = curve_measures(matrix, 0.49).loc["b"].iloc[0]
    assert never.steps_to_threshold == 40  # never reached: censored at the last step
    assert curve_measures(matrix, 0.3).loc["b"].iloc[0].steps_to_threshold == pytest.approx(20)


def test_a_configured_threshold_is_used_and_an_unreached_one_is_reported(planted, capsys):
    root, out = planted
    argv = ["curves", "--curves", str(root / "curves"), "--config", str(root / "high.yaml")]
    assert cli.main([*argv, "--out", str(root / "high")]) == 2  # no such file
    raw = yaml.safe_load((root / "config.yaml").read_text()) | {"analysis": {"curve_threshold": 0.58}}
    (root / "high.yaml").write_text(yaml.safe_dump(raw))
    capsys.readouterr()
    inference = compare_curves(pd.read_csv(out / "curves.csv"), load_config(root / "high.yaml"))
    assert (inference.measures.threshold == 0.58).all()
    print_curve_verdicts(inference)  # what `armlab curves` prints
    printed = capsys.readouterr().out
    assert "never reach 0.58" in printed and "shrinks differences in speed toward 0" in printed
    assert "curves: low vs grpo: falls behind (at equal cum_flops " in printed
    assert "\n  steps where one is ahead (simultaneous): 20 (grpo), 30 (grpo)" in printed


@pytest.mark.parametrize(
    "change, message",
    [
        ({"analysis": {"curve_threshold": 2}}, r"analysis\.curve_threshold: expected a number in \(0, 1\), got 2"),
        (
            {"comparisons": [{"family": "f", "reference": "grpo", "arms": ["absent"]}]},
            r"compared arm\(s\) \['absent'\] have no checkpoint evaluations",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_key_and_nothing_is_written(planted, tmp_path, capsys, change, message):
    root, _ = planted
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump(yaml.safe_load((root / "config.yaml").read_text()) | change))
    out = tmp_path / "out"
    assert cli.main(["curves", "--curves", str(root / "curves"), "--config", str(config), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and re.search(message, err)
    assert not out.exists()


def test_without_a_config_only_the_table_and_figure_are_written(planted, tmp_path):
    root, _ = planted
    out = tmp_path / "plain"
    assert cli.main(["curves", "--curves", str(root / "curves"), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir() if p.suffix != ".json") == [
        "accuracy_curves.png",
        "accuracy_curves.svg",
        "curves.csv",
    ]


def test_the_family_is_tested_jointly_so_arms_share_the_sign_patterns():
    """The max-statistic test over the family's arms side by side: one arm's p at a step can only grow when another
    arm joins the family (more steps to be the maximum over)."""
    rng = np.random.default_rng(1)
    rows = [
        dict(arm=arm, seed=seed, step=step, summary="domain_balanced", value=rng.normal(0.3 + shift * step / 10, 0.01))
        for arm, shift in {"ref": 0.0, "x": 0.01, "y": 0.0}.items()
        for seed in range(1, 7)
        for step in (10, 20, 30)
    ]
    summaries = pd.DataFrame(rows)
    alone = compare_curves(
        summaries,
        parse_config({"experiment": "e", "comparisons": [{"family": "f", "reference": "ref", "arms": ["x"]}]}),
    )
    joint = compare_curves(
        summaries,
        parse_config({"experiment": "e", "comparisons": [{"family": "f", "reference": "ref", "arms": ["x", "y"]}]}),
    )
    p_alone = alone.band.set_index("step").p_simultaneous
    p_joint = joint.band[joint.band.arm == "x"].set_index("step").p_simultaneous
    assert (p_joint >= p_alone - 1e-12).all() and (p_joint > p_alone).any()
    # the band too covers every step of both arms at once: Bonferroni over 6 steps, not 3, so it is wider
    width = {
        name: (r.band[r.band.arm == "x"].band_high - r.band[r.band.arm == "x"].band_low).to_numpy()
        for name, r in [("alone", alone), ("joint", joint)]
    }
    assert (width["joint"] > width["alone"]).all()


def _summaries(curves):
    """Long curve summaries from {(arm, seed): {step: value}}."""
    return pd.DataFrame(
        [
            dict(arm=arm, seed=seed, step=step, summary="domain_balanced", value=value)
            for (arm, seed), points in curves.items()
            for step, value in points.items()
        ]
    )


def _config(**analysis):
    family = {"family": "f", "reference": "ref", "arms": ["x", "y"]}
    return parse_config({"experiment": "e", "comparisons": [family], "analysis": {"curve_compute": None, **analysis}})


@pytest.mark.parametrize(
    "change, message",
    [
        ({("y", 1): {10: 0.3}}, r"family f: run \('y', 1\) lacks step\(s\) \[20\] that other runs"),
        (  # an arm evaluated at other steps than its reference shares none of them
            {(arm, s): {30: 0.3, 40: 0.4} for arm in ["y"] for s in (1, 2, 3)},
            r"family f: run \('ref', 1\) lacks step\(s\) \[30, 40\]",
        ),
        ({("x", 2): {10: np.inf, 20: 0.4}}, r"family f: non-finite accuracy at \(run, step\) \[\(\('x', 2\), 10\)\]"),
        ({("x", 4): {10: 0.3, 20: 0.4}}, r"family f: the arms ran different seeds \(ref \[1, 2, 3\], x \[1, 2, 3, 4\]"),
    ],
)
def test_curves_that_cannot_be_compared_are_refused_naming_the_run(change, message):
    curves = {(arm, s): {10: 0.3 + 0.01 * s, 20: 0.4 + 0.01 * s} for arm in ("ref", "x", "y") for s in (1, 2, 3)}
    curves.update(change)
    with pytest.raises(AnalysisInputError, match=message):
        compare_curves(_summaries(curves), _config())


def test_common_seeds_only_keeps_the_seeds_every_arm_ran_and_says_which_were_dropped():
    curves = {(arm, s): {10: 0.3 + 0.01 * s, 20: 0.4 + 0.02 * s} for arm in ("ref", "x", "y") for s in (1, 2, 3)}
    curves[("x", 4)] = {10: 0.5, 20: 0.6}
    result = compare_curves(_summaries(curves), _config(common_seeds_only=True))
    assert (result.band.n_seeds == 3).all()
    assert "Family f: runs [('x', 4)] dropped: their seed was not run by every arm" in " ".join(result.notes)


def test_unpaired_runs_are_refused_before_anything_is_computed(planted, tmp_path, capsys):
    root, _ = planted
    raw = yaml.safe_load((root / "config.yaml").read_text()) | {"analysis": {"pairing": "unpaired"}}
    config = tmp_path / "unpaired.yaml"
    config.write_text(yaml.safe_dump(raw))
    assert (
        cli.main(["curves", "--curves", str(root / "curves"), "--config", str(config), "--out", str(tmp_path / "o")])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "analysis.pairing: unpaired: the curve comparisons pair runs by seed" in err


def test_the_report_shows_the_learning_curves_when_given_them(planted, tmp_path, capsys):
    """The runs' evaluations are their last checkpoints: analyze those, then the report with --curves has a
    learning-curves section (every verdict, the forecasts, the backtest, three figures); without it, none."""
    root, out = planted
    checkpoints = pd.concat(pd.read_parquet(p) for p in sorted((root / "curves").glob("*/seed-*/scores.parquet")))
    last = checkpoints[checkpoints.step == STEPS[-1]].drop(columns=["step", *LEDGER])
    scores = pd.concat([pd.read_parquet(root / "scores.parquet"), last]).assign(experiment="planted")
    scores.to_parquet(tmp_path / "scores.parquet", index=False)
    config = str(root / "config.yaml")
    argv = ["analyze", config, "--scores", str(tmp_path / "scores.parquet"), "--out", str(tmp_path / "analysis")]
    assert cli.main(argv) == 0
    report = ["report", config, "--analysis", str(tmp_path / "analysis")]
    assert cli.main([*report, "--curves", str(out), "--out", str(tmp_path / "with")]) == 0
    html = (tmp_path / "with" / "index.html").read_text()
    section = html[html.index('<section id="curves">') :]
    section = section[: section.index("</section>")]
    verdicts = pd.read_csv(out / "curve_verdicts.csv")
    assert all(f"curves: {v}".replace('"', "&quot;") in section for v in verdicts.verdict)
    assert "Backtest: forecasts against the final verdicts" in section
    assert section.count('<figure><img src="data:image/svg+xml;base64,') == 3
    assert "at every evaluated step and at equal compute," in section
    # curves without a compute ledger: the section does not claim a comparison at equal compute
    shutil.copytree(out, tmp_path / "no_ledger")
    (tmp_path / "no_ledger" / "curve_compute_band.csv").unlink()
    assert cli.main([*report, "--curves", str(tmp_path / "no_ledger"), "--out", str(tmp_path / "steps_only")]) == 0
    steps_only = (tmp_path / "steps_only" / "index.html").read_text()
    assert "(no compute ledger: not at equal compute)" in steps_only and "and at equal compute" not in steps_only
    assert cli.main([*report, "--out", str(tmp_path / "without")]) == 0
    assert 'id="curves"' not in (tmp_path / "without" / "index.html").read_text()
    capsys.readouterr()
    assert cli.main([*report, "--curves", str(tmp_path), "--out", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no curve_band.csv" in err and "armlab curves --config" in err


def test_checkpoint_evaluations_from_elsewhere_as_one_tidy_table_give_the_same_curves(planted, tmp_path):
    """The planted checkpoint evaluations written as one CSV (tidy columns, step, the ledger) read back as the
    evaluation folders do: the same curves.csv, byte for byte, so the same inference."""
    root, out = planted
    checkpoints = pd.concat(pd.read_parquet(p) for p in sorted((root / "curves").glob("*/seed-*/scores.parquet")))
    checkpoints.to_csv(tmp_path / "checkpoints.csv", index=False)
    argv = ["curves", "--table", str(tmp_path / "checkpoints.csv"), "--scores", str(root / "scores.parquet")]
    assert cli.main([*argv, "--out", str(tmp_path / "from_table")]) == 0
    assert (tmp_path / "from_table" / "curves.csv").read_bytes() == (out / "curves.csv").read_bytes()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda t: t.drop(columns="step"), r"no step column; a table of checkpoint evaluations has"),
        (
            lambda t: t.assign(step=t.step.astype(object).where(t.index != 3, "ten")),
            r"step: expected whole numbers >= 0",
        ),
        (lambda t: t.assign(step=t.step.where(t.index != 3, -10)), r"step: expected whole numbers >= 0"),
        (lambda t: t.assign(cum_flops=t.cum_flops.where(t.index != 3, -1.0)), r"cum_flops: expected numbers >= 0"),
        (lambda t: pd.concat([t, t.iloc[[5]]]), r"\('arm', 'seed', 'step', 'benchmark', 'item'\) more than once"),
        (lambda t: t.assign(score=t.score.where(t.index != 3, 2.0)), r"score: expected numbers in \[0, 1\]"),
        (  # one item of a checkpoint carries another total than the rest of it
            lambda t: t.assign(cum_flops=t.cum_flops.where(t.index != 3, t.cum_flops + 1.0)),
            r"cum_flops: expected one value per \(arm, seed, step\)",
        ),
        (  # the last checkpoint's total below the one before: not a running total (it was re-sorted silently)
            lambda t: t.assign(cum_flops=t.cum_flops.where(t.step != t.step.max(), 1.0)),
            r"cum_flops: expected a running total, never lower at a later step",
        ),
    ],
)
def test_a_bad_table_of_checkpoint_evaluations_is_one_line_naming_the_column(
    planted, tmp_path, capsys, change, message
):
    root, _ = planted
    table = pd.read_parquet(next((root / "curves").glob("*/seed-1/scores.parquet"))).reset_index(drop=True)
    change(table).to_csv(tmp_path / "bad.csv", index=False)
    capsys.readouterr()
    assert cli.main(["curves", "--table", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and str(tmp_path / "bad.csv") in err and not (tmp_path / "out").exists()


def _ledgered(curves, cost):
    """Long curve summaries with a cum_flops ledger: ``cost`` (arm, seed) -> FLOPs per step (None: no ledger)."""
    summaries = _summaries(curves)
    return summaries.assign(
        cum_flops=[
            np.nan if cost[run] is None else cost[run] * step
            for run, step in zip(zip(summaries.arm, summaries.seed), summaries.step)
        ]
    )


def _two_families():
    """Family f (ref vs x, y) and family g (ref vs z): x ahead from step 10 on, the others level with ref."""
    rng = np.random.default_rng(3)
    curves = {
        (arm, s): {step: 0.3 + (0.1 if arm == "x" else 0.0) * step / 10 + rng.normal(0, 0.002) for step in (10, 20, 30)}
        for arm in ("ref", "x", "y", "z")
        for s in range(1, 7)
    }
    families = [
        {"family": "f", "reference": "ref", "arms": ["x", "y"]},
        {"family": "g", "reference": "ref", "arms": ["z"]},
    ]
    config = parse_config({"experiment": "e", "comparisons": families, "analysis": {"curve_compute": "cum_flops"}})
    return curves, config


@pytest.mark.parametrize(
    "cost, reason",
    [  # y's run of seed 2 has no ledger (a multi-process TRL run writes none)
        (lambda run: None if run == ("y", 2) else 1.0, r"run\(s\) \[\('y', 2\)\] have no compute ledger"),
        # y's runs spend their compute far beyond everyone else's: no range every run of f covers
        (lambda run: 1000.0 if run[0] == "y" else 1.0, r"no range of cum_flops that every run covers"),
    ],
)
def test_a_family_without_common_compute_is_compared_at_equal_steps_and_the_others_at_equal_compute(cost, reason):
    """Before, one run without a ledger (or runs whose compute ranges do not overlap) killed the whole command."""
    curves, config = _two_families()
    result = compare_curves(_ledgered(curves, {run: cost(run) for run in curves}), config)
    assert re.search(r"Family f: no comparison at equal compute: " + reason, " ".join(result.notes))
    assert set(result.compute_band.family) == {"g"} and set(result.band.family) == {"f", "g"}
    verdicts = result.verdicts.set_index("arm")
    assert verdicts.loc["x", "verdict"].startswith("x vs ref: gets there faster (ahead at equal step 10, 20, 30)")
    assert pd.isna(verdicts.loc["x", "compute"]) and verdicts.loc["z", "compute"] == "cum_flops"


def test_budgets_outside_the_range_every_run_covers_are_refused_naming_them():
    curves, config = _two_families()
    settings = replace(config.settings, curve_budgets=(15.0, 40.0))
    with pytest.raises(AnalysisInputError, match=r"analysis.curve_budgets: \[40.0\] outside \[10, 30\], the cum_flops"):
        compare_curves(_ledgered(curves, dict.fromkeys(curves, 1.0)), replace(config, settings=settings))


def test_a_lead_at_the_last_step_alone_is_not_getting_there_faster():
    band = pd.DataFrame(
        {"family": "f", "arm": "x", "reference": "ref", "step": [10, 20, 30], "ahead": ["neither", "neither", "x"]}
    )
    comparisons = pd.DataFrame([{"family": "f", "arm": "x", "stage": "primary", "reject": True, "mean_diff": 0.02}])
    said = curve_verdicts(band, None, comparisons).verdict.iloc[0]
    assert said == "x vs ref: ahead at the last equal step only (30); ends higher"
    early = curve_verdicts(band.assign(ahead=["neither", "x", "x"]), None, comparisons).verdict.iloc[0]
    assert early.startswith("x vs ref: gets there faster (ahead at equal step 20, 30)")


def test_an_arm_whose_fits_all_failed_leaves_the_others_parameters_compared():
    """Before, one arm without a successful whole-curve fit dropped its whole family's parameter comparison (a
    KeyError swallowed as 'too few fits')."""
    rng = np.random.default_rng(4)
    rows = [
        [arm, seed, 1.0, 100.0, 10, "ok" if arm != "y" else "asymptote at a bound", 0.2]
        + (
            [0.6 + (0.05 if arm == "x" else 0.0) + rng.normal(0, 0.005), 30.0 * np.exp(rng.normal(0, 0.05)), 1.5]
            if arm != "y"
            else [np.nan] * 3
        )
        for arm in ("ref", "x", "y")
        for seed in range(1, 7)
    ]
    fit_table = pd.DataFrame(rows, columns=FIT_COLUMNS)
    comparison = _config().comparisons[0]
    table, notes = _compare_fit_parameters(fit_table, [comparison], _config().settings)
    assert set(table.arm) == {"x"} and set(table.measure) == {"asymptote", "log10_t_mid", "b"}
    asymptote = table[(table.measure == "asymptote")].drop_duplicates("measure").iloc[0]
    assert asymptote.mean_diff == pytest.approx(0.05, abs=0.01) and asymptote.reject
    assert any("the saturating-fit parameters of ['y'] are not compared" in note for note in notes)
