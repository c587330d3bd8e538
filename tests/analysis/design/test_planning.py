"""The plan from the config alone (analysis/design/planning.py): the analysis later reports the same numbers."""

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from armlab.analysis import pipeline
from armlab.analysis.config import load_config, parse_config
from armlab.analysis.design import planning
from armlab.analysis.design.synthetic import synthetic_scores
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.learning_curves.forecasts import fit_runs
from armlab.analysis.stats import intervals
from armlab.configfile import load_mapping

BENCHMARKS = {"a": "math", "b": "math", "c": "logic"}


def _config(seeds=None, **analysis):
    raw = {
        "experiment": "demo",
        "comparisons": [
            {"family": "f", "reference": "ref", "arms": ["x", "y"]},
            {"family": "g", "reference": "ref", "arms": ["z"]},
        ],
        "benchmarks": {name: {"domain": domain} for name, domain in BENCHMARKS.items()},
        "analysis": {"resamples": 200, "power_replicates": 1000, **analysis},
    }
    if seeds is not None:
        raw["seeds"] = list(range(1, seeds + 1))
    return raw, parse_config(raw)


def _fewest_seeds_by_hand(k, alpha):
    n = 1
    while min(1.0, k * 2 / 2**n) > alpha:
        n += 1
    return n


@pytest.mark.parametrize("seeds", [6, 9])
def test_the_plan_is_what_the_analysis_reports(seeds):
    raw, config = _config(seeds)
    scores = synthetic_scores(
        arms=["ref", "x", "y", "z"],
        seeds=range(1, seeds + 1),
        benchmarks=BENCHMARKS,
        items=None,
        rng=np.random.default_rng(3),
        effects={"x": 0.4},
        experiment="demo",
    )
    table = pipeline.run_analysis(config, scores).comparisons
    first = table[table["ci_method"] == intervals.FIRST_METHOD]
    primary = first[first["stage"] == "primary"].set_index("arm")
    for plan in planning.plan_families(config, planning.configured_seeds(raw, config)):
        rows = first[first["family"] == plan.family]
        secondary = rows[rows["stage"] == "secondary"]
        assert plan.secondary == len(secondary) and plan.arms == (rows["stage"] == "primary").sum()
        np.testing.assert_allclose(rows.loc[rows["stage"] == "primary", "min_attainable_p"], plan.min_p)
        np.testing.assert_allclose(secondary["min_attainable_p"], plan.min_p_secondary)
        # equivalence at each stage's first Holm step: alpha / k for the arms, alpha / max(k, m) behind the gate
        assert (rows.loc[rows["stage"] == "primary", "equivalence_attainable"] == plan.equivalence_attainable).all()
        assert (secondary["equivalence_attainable"] == plan.equivalence_attainable_secondary).all()
    # at the sd the analysis measured, the plan's MDE and seeds needed are the analysis's own
    for arm, family in (("x", "f"), ("z", "g")):
        row = primary.loc[arm]
        (plan,) = [p for p in planning.plan_families(config, seeds, sd=row["sd_diff"]) if p.family == family]
        assert plan.seeds_needed == row["seeds_needed"] and plan.mde == pytest.approx(row["mde"], rel=1e-12)


def test_three_seeds_can_never_be_significant_and_the_plan_says_so_loudly():
    raw, config = _config(3)
    plans = planning.plan_families(config, 3)
    assert [p.min_p for p in plans] == [0.5, 0.25]  # Holm over 2 arms: 2 x 2/2^3; one arm: 2/2^3
    assert [p.significance_from for p in plans] == [_fewest_seeds_by_hand(2, 0.05), _fewest_seeds_by_hand(1, 0.05)]
    assert [p.significance_from for p in plans] == [7, 6] and not plans[0].equivalence_attainable
    text = planning.describe(config, plans)
    assert "can NOT reach alpha = 0.05" in text and "not attainable" in text
    warning = text.splitlines()[-1]
    assert warning.startswith("armlab plan: WARNING: with 3 seeds nothing in family f, g can be significant")
    assert "at least 7 seeds needed" in warning and "sequential design" in warning
    assert "WARNING" not in planning.describe(config, planning.plan_families(config, 7))


@pytest.mark.parametrize("k", [1, 2, 3, 5, 12])
@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.1])
def test_fewest_seeds_that_can_reach_alpha_by_enumeration(k, alpha):
    arms = [f"a{i}" for i in range(k)]
    config = parse_config(
        {
            "experiment": "e",
            "comparisons": [{"family": "f", "reference": "r", "arms": arms}],
            "analysis": {"alpha": alpha},
        }
    )
    (plan,) = planning.plan_families(config, 2)
    assert plan.significance_from == _fewest_seeds_by_hand(k, alpha)
    assert plan.secondary is None and plan.min_p_secondary is None  # no benchmarks named: unknown until read


def test_equivalence_is_attainable_from_five_seeds_with_the_sign_flip_tost_and_two_with_the_t_tost():
    _, config = _config()
    # family g (one arm): 1/2^5 <= 0.05; family f (two arms, Holm's first step 0.025) needs 1/2^6
    assert [planning.plan_families(config, n)[1].equivalence_attainable for n in (4, 5)] == [False, True]
    assert [planning.plan_families(config, n)[0].equivalence_attainable for n in (5, 6)] == [False, True]
    # f's 2 x 3 secondary cells behind the gate: Holm's first step 0.05/6 needs 1/2^8
    assert [planning.plan_families(config, n)[0].equivalence_attainable_secondary for n in (7, 8)] == [False, True]
    _, t_config = _config(equivalence_test="t")
    assert planning.plan_families(t_config, 2)[0].equivalence_attainable


def test_sd_from_an_earlier_experiments_scores_is_the_pooled_paired_sd(tmp_path):
    _, config = _config()
    scores = synthetic_scores(
        arms=["ref", "x", "z"],  # y was not run there: its comparison cannot contribute
        seeds=range(1, 6),
        benchmarks=BENCHMARKS,
        items=None,
        rng=np.random.default_rng(1),
        experiment="demo",
    )
    path = tmp_path / "scores.parquet"
    scores.to_parquet(path)
    sd, df = planning.sd_from_scores(config, path)
    # by hand: the domain-balanced mean (math's two benchmarks averaged, then the two domains averaged)
    per_run = scores.pivot_table(index=["arm", "seed"], columns="benchmark", values="score")
    balanced = ((per_run["a"] + per_run["b"]) / 2 + per_run["c"]) / 2
    diffs = [balanced["x"] - balanced["ref"], balanced["z"] - balanced["ref"]]
    assert df == 8 and sd == pytest.approx(math.sqrt((np.var(diffs[0], ddof=1) + np.var(diffs[1], ddof=1)) / 2))
    with pytest.raises(AnalysisInputError, match=r"one.parquet: no compared arm .* has two or more seeds"):
        planning.sd_from_scores(config, _write(tmp_path / "one.parquet", scores[scores["seed"] == 1]))


def _write(path, frame):
    frame.to_parquet(path)
    return path


def _manifest(folder, seconds, steps=None):
    folder.mkdir(parents=True)
    record = {"seconds": seconds} | ({"recipe": {"steps": steps}} if steps else {})
    (folder / "manifest.json").write_text(json.dumps(record))


def test_wall_time_is_the_measured_time_per_step_times_the_planned_steps(tmp_path):
    for seed, seconds in ((1, 100.0), (2, 140.0)):
        _manifest(tmp_path / "runs" / "grpo" / f"seed-{seed}", seconds, steps=10)
        _manifest(tmp_path / "evals" / "grpo" / f"seed-{seed}", 6.0)
    _manifest(tmp_path / "runs" / "rloo" / "seed-1", 50.0, steps=5)
    _manifest(tmp_path / "evals" / "rloo" / "seed-1", 9.0)
    raw = {"recipe": {"steps": 20}, "arms": {"grpo": {}, "rloo": {"steps": 40}}}
    wall = planning.wall_time(raw, 4, tmp_path, cores=2)
    # grpo: 12 s per step x 20 + 6; rloo: 10 s per step x 40 + 9; four seeds each
    assert wall.job_minutes == pytest.approx(4 * (12 * 20 + 6 + 10 * 40 + 9) / 60) and wall.measured_runs == 3
    assert wall.wall_minutes == pytest.approx(wall.job_minutes / 2)
    assert planning.wall_time({**raw, "arms": {**raw["arms"], "new": {}}}, 4, tmp_path, cores=2) is None
    # a run whose manifest does not say its steps gives no time per step: no estimate rather than a wrong one
    _manifest(tmp_path / "runs" / "other" / "seed-1", 5.0)
    _manifest(tmp_path / "evals" / "other" / "seed-1", 5.0)
    assert planning.wall_time({**raw, "arms": {**raw["arms"], "other": {}}}, 4, tmp_path, cores=2) is None
    (tmp_path / "evals" / "grpo" / "seed-1" / "manifest.json").write_text(json.dumps({"seconds": "soon"}))
    with pytest.raises(AnalysisInputError, match=r"evals/grpo/seed-1/manifest.json: seconds: expected"):
        planning.wall_time(raw, 4, tmp_path, cores=2)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"sd": -1}, r"plan.sd: expected a positive number"),
        ({"sd": True}, r"plan.sd: expected a positive number"),
        ({"spread": 0.01}, r"plan: unknown key\(s\) \['spread'\]"),
        ([0.01], r"plan: expected a mapping"),
    ],
)
def test_a_bad_plan_section_is_one_line_naming_the_key(section, message):
    with pytest.raises(AnalysisInputError, match=message):
        planning.plan_section({"plan": section}, "c.yaml")


def _armlab(*args):
    return subprocess.run([sys.executable, "-m", "armlab", "plan", *args], capture_output=True, text=True, timeout=120)


def test_armlab_plan_on_the_demo_config_says_it_can_decide_and_warns_at_three_seeds():
    done = _armlab("config/config.yaml")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # one arm per family, 6 seeds: 2/64; 12 benchmarks in domains of 4 (flat = domain_balanced) + pass@2, pass@4,
    # and each benchmark's pass@2 and pass@4: 38 secondary cells, whose Holm can never reach alpha (38 x 2/64 > 1)
    assert lines[0].startswith(
        "armlab plan: family estimators: 1 arm(s) x 6 seeds: smallest Holm p 0.0312 (can reach alpha = 0.05), "
        "its 38 secondary cell(s) 1 (can NOT reach alpha); equivalence within ±1 point(s) attainable (but NOT for "
        "the secondary cells)"
    )
    assert "WARNING" not in done.stdout
    fewer = _armlab("config/config.yaml", "--seeds", "3")  # the demo before issue 26: nothing could be significant
    assert any(line.startswith("armlab plan: WARNING: with 3 seeds") for line in fewer.stdout.splitlines())
    more = _armlab("config/config.yaml", "--seeds", "8", "--sd", "0.01")
    assert more.returncode == 0 and "WARNING" not in more.stdout
    config = load_config("config/config.yaml")
    (estimators, *_) = planning.plan_families(config, 8, sd=0.01)
    assert f"seeds for 2 points {estimators.seeds_needed:.0f}" in more.stdout
    raw = load_mapping("config/config.yaml")
    assert planning.configured_seeds(raw, config) == 6


def test_armlab_plan_refuses_a_bad_seed_count_in_one_line():
    done = _armlab("config/config.yaml", "--seeds", "0")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--seeds" in done.stderr


def _sequential_config(**seeds):
    return parse_config(
        {
            "experiment": "seq",
            "seeds": {"initial": 3, "wave": 1, "max": 8, **seeds},
            "comparisons": [{"family": "f", "reference": "ref", "arms": ["x", "y"]}],
            "analysis": {"equivalence_margin": 0.5},
        }
    )


@pytest.mark.parametrize("spending", ["obrien_fleming", "pocock"])
def test_no_data_decides_a_sequential_family_before_the_planned_earliest_look(spending):
    """The plan's earliest look for a difference (and for equivalence) is reached by the most decisive data, and
    no other data decides sooner: checked on 300 random families with large effects (and with none)."""
    from armlab.analysis.stats import sequential

    config = _sequential_config(spending=spending)
    (plan,) = planning.sequential_plans(config)
    assert plan.looks == (3, 4, 5, 6, 7, 8) and plan.first_difference is not None
    rng = np.random.default_rng(5)
    earliest = {sequential.DIFFERS: [], sequential.EQUIVALENT: []}
    for _ in range(300):
        effect = rng.choice([0.0, 3.0])
        diffs = {arm: effect + rng.normal(0, 0.3 if effect == 0 else 1.0, 8) for arm in ("x", "y")}
        for record in sequential.run_family(diffs, config.design):
            if record.decision in earliest:
                earliest[record.decision].append(record.look)
    assert min(earliest[sequential.DIFFERS]) >= plan.first_difference
    assert min(earliest[sequential.EQUIVALENT]) >= plan.first_equivalence
    assert min(earliest[sequential.DIFFERS]) == plan.first_difference  # large effects reach it
    # by hand: the first look whose spending at alpha/2 allows the single most extreme pair of paths, 2 / 2^n
    design = config.design
    by_hand = next(j for j, n in enumerate(design.looks, 1) if design.spent(n, 0.05 / 2) >= 2 / 2**n)
    assert plan.first_difference == by_hand
    line = planning.describe_sequential(config, [plan])[0]
    assert f"a difference can be declared from look {by_hand} ({design.looks[by_hand - 1]} seeds)" in line


def test_without_earlier_runs_the_wall_time_comes_from_armlab_probes_times(tmp_path):
    raw = {"recipe": {"steps": 20}, "arms": {"grpo": {}, "rloo": {"steps": 40}}}
    assert planning.wall_time(raw, 4, tmp_path, cores=2) is None  # nothing measured
    times = {"probe_steps": 5, "eval_seconds": 6.0, "setup_seconds": 30.0, "arms": {}}
    times["arms"] = {"grpo": {"seconds_per_step": 12.0, "steps": 20}, "rloo": {"seconds_per_step": 10.0, "steps": 40}}
    (tmp_path / "probe.json").write_text(json.dumps(times))
    wall = planning.wall_time(raw, 4, tmp_path, cores=2)
    assert wall.job_minutes == pytest.approx(4 * (12 * 20 + 6 + 10 * 40 + 6) / 60)
    assert (wall.measured_runs, wall.probe_steps) == (0, 5)
    # runs measured for every arm take precedence over the probe
    for arm, seconds, steps in (("grpo", 100.0, 10), ("rloo", 50.0, 5)):
        _manifest(tmp_path / "runs" / arm / "seed-1", seconds, steps=steps)
        _manifest(tmp_path / "evals" / arm / "seed-1", 9.0)
    assert planning.wall_time(raw, 4, tmp_path, cores=2).measured_runs == 2
    # a probe that lacks an arm gives no estimate; a malformed one is a one-line error naming the file
    assert planning.wall_time({**raw, "arms": {**raw["arms"], "new": {}}}, 4, tmp_path, cores=2) is None
    (tmp_path / "probe.json").write_text(json.dumps({**times, "eval_seconds": -1}))
    with pytest.raises(AnalysisInputError, match=r"probe.json: expected armlab probe's times"):
        planning.wall_time({**raw, "arms": {**raw["arms"], "new": {}}}, 4, tmp_path, cores=2)


@pytest.mark.workflow  # trains every arm and evaluates once, as the workflow's jobs do
def test_armlab_probe_times_every_arm_and_plan_reads_the_times(tmp_path):
    """As a user runs it, before any run exists: ``armlab probe`` then ``armlab plan`` on the tiny config."""
    done = subprocess.run(
        [sys.executable, "-m", "armlab", "probe", "tests/fixtures/tiny.yaml", "--steps", "1", "--out",
         str(tmp_path / "probe.json")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    times = json.loads((tmp_path / "probe.json").read_text())
    assert set(times["arms"]) == {"grpo", "difffilter"} and times["probe_steps"] == 1
    assert all(t["seconds_per_step"] > 0 and t["steps"] == 4 for t in times["arms"].values())
    plan = _armlab("tests/fixtures/tiny.yaml", "--jobs", str(tmp_path))
    assert "at the times of armlab probe (1 step(s) per arm)" in plan.stdout, plan.stdout
    assert (
        _armlab("tests/fixtures/tiny.yaml", "--jobs", str(tmp_path / "none"))
        .stdout.rstrip()
        .endswith("(armlab probe tests/fixtures/tiny.yaml measures them)")
    )


def test_the_plan_says_which_curve_forecasts_the_checkpoints_allow():
    """Checkpoints every 5 of 70 steps: 3, 5 and 8 trained checkpoints by f = 0.25, 0.4, 0.6 (steps 5-15, 5-25,
    5-40), enough for every fit. Only the final model (every 70): none; the advice it gives is enough."""
    config = parse_config({"experiment": "e", "comparisons": [{"family": "f", "reference": "a", "arms": ["b"]}]})
    dense = planning.curve_plan({"recipe": {"steps": 70, "checkpoint_every": 5}}, config)
    assert dense.endswith("fit 3, 5, 8 trained checkpoint(s)")
    sparse = planning.curve_plan({"recipe": {"steps": 70, "checkpoint_every": 70}}, config)
    assert "fit 0, 0, 0 trained checkpoint(s); a fit needs 3, so f = 0.25, 0.4, 0.6 will have no forecast" in sparse
    advised = int(sparse.split("recipe.checkpoint_every: ")[1].split()[0])
    assert "no forecast" not in planning.curve_plan({"recipe": {"steps": 70, "checkpoint_every": advised}}, config)
    assert planning.curve_plan({"arms": {}}, config) is None  # results from elsewhere: no recipe


@pytest.mark.parametrize("steps, every", [(100, 1), (70, 5), (200, 3)])
def test_the_plan_counts_the_checkpoints_the_fits_will_see(steps, every):
    """The plan's count per fraction is what the forecasts' fits see (0.29 x 100 is 28.999999999999996: step 29 is
    seen; the plan said 28 before)."""
    fractions = [0.25, 0.29, 0.4, 0.57, 0.58, 0.6]
    config = parse_config(
        {
            "experiment": "e",
            "comparisons": [{"family": "f", "reference": "a", "arms": ["b"]}],
            "analysis": {"curve_fractions": fractions},
        }
    )
    said = planning.curve_plan({"recipe": {"steps": steps, "checkpoint_every": every}}, config)
    counts = [int(n) for n in said.split(" fit ")[1].split(" trained")[0].split(", ")]
    kept = [*range(every, steps, every), steps]  # training.recipe.checkpoint_steps and the final model
    matrix = pd.DataFrame([np.linspace(0.2, 0.6, len(kept))], columns=kept, index=pd.MultiIndex.from_tuples([("a", 1)]))
    fit_table, _ = fit_runs(matrix, fractions)
    assert counts == fit_table["n_checkpoints"].tolist()
