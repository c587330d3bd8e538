"""Independent runs (issue 26, item 4): the exact permutation test of run-level scores, and common seeds.

Results whose runs are not matched by seed (independent runs, rliable-style arrays) had no honest path:
armlab paired by seed or refused. ``analysis.pairing: unpaired`` compares each arm's runs with its
reference's by the exact two-sample permutation test, with the same Holm, equivalence, decision-interval
and power machinery; ``analysis.common_seeds_only`` keeps the seeds every compared arm ran. The test is
checked against scipy's permutation test, its power against simulation and statsmodels, its size and
coverage by simulation with known truth.
"""

import html
import math
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.power import TTestIndPower

from armlab.analysis import pipeline, tables
from armlab.analysis.comparisons import paired
from armlab.analysis.config import parse_config
from armlab.analysis.design import planning
from armlab.analysis.design.synthetic import synthetic_scores
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.stats import intervals, power, resampling

BENCHMARKS = {"m1": "math", "m2": "math", "c1": "code"}


def _scipy_p(x, y, alternative, shift=0.0):
    """scipy's exact two-sample permutation test of the difference of means, at a shift of x."""
    return stats.permutation_test(
        (x - shift, y),
        lambda a, b, axis: a.mean(axis=axis) - b.mean(axis=axis),
        permutation_type="independent",
        alternative=alternative,
        n_resamples=np.inf,
        vectorized=True,
    ).pvalue


@pytest.mark.parametrize("n1, n2", [(3, 3), (4, 6), (5, 2), (7, 7)])
def test_p_values_are_scipys_exact_permutation_test(n1, n2):
    rng = np.random.default_rng(n1 * 10 + n2)
    x, y = rng.normal(0.4, 1, (6, n1)), rng.normal(0, 1, (6, n2))
    found = resampling.permutation(x, y)["p_value"]
    for i in range(6):
        two_sided = min(1.0, 2 * min(_scipy_p(x[i], y[i], "greater"), _scipy_p(x[i], y[i], "less")))
        assert found[i] == pytest.approx(two_sided, abs=1e-12)
        assert found[i] == pytest.approx(_scipy_p(x[i], y[i], "two-sided"), abs=1e-12)  # the same for means


@pytest.mark.parametrize("n1, n2, confidence", [(4, 5, 0.9), (6, 6, 0.95), (3, 7, 0.8)])
def test_the_interval_is_the_set_of_shifts_scipys_test_does_not_reject(n1, n2, confidence):
    rng = np.random.default_rng(n1 + n2)
    x, y = rng.normal(1, 1, (3, n1)), rng.normal(0, 1, (3, n2))
    ci = resampling.permutation(x, y, confidence=confidence)["ci"]
    for i in range(3):
        for end, inward in ((ci[i, 0], 1), (ci[i, 1], -1)):
            kept = [_scipy_p(x[i], y[i], side, end + inward * 1e-7) for side in ("greater", "less")]
            dropped = [_scipy_p(x[i], y[i], side, end - inward * 1e-7) for side in ("greater", "less")]
            assert 2 * min(kept) > 1 - confidence  # just inside: not rejected
            assert 2 * min(dropped) <= 1 - confidence  # just outside: rejected


def test_the_tost_is_two_one_sided_scipy_tests_at_the_margins():
    rng = np.random.default_rng(3)
    x, y = rng.normal(0.1, 0.3, (4, 6)), rng.normal(0, 0.3, (4, 5))
    out = resampling.permutation(x, y, alpha=0.05, margin=0.5)
    for i in range(4):
        expected = max(_scipy_p(x[i], y[i], "greater", -0.5), _scipy_p(x[i], y[i], "less", 0.5))
        assert out["p_equivalence"][i] == pytest.approx(expected, abs=1e-12)
        assert (out["p_equivalence"][i] <= 0.05) == (-0.5 < out["eq"][i, 0] and out["eq"][i, 1] < 0.5)


def test_the_smallest_p_is_two_over_the_splits_and_separated_runs_reach_it():
    for n1, n2 in [(3, 3), (4, 5), (6, 6)]:
        x, y = np.arange(n1)[None] + 100.0, np.arange(n2)[None] * 1.0
        smallest = 2 / math.comb(n1 + n2, n1)
        assert resampling.min_permutation_pvalue(n1, n2) == pytest.approx(smallest)
        assert resampling.permutation(x, y)["p_value"][0] == pytest.approx(smallest)
    assert resampling.min_permutation_pvalue(12, 12, max_exact=16, resamples=999) == pytest.approx(2 / 1000)


def test_random_splits_beyond_max_exact_agree_with_the_enumeration():
    rng = np.random.default_rng(5)
    x, y = rng.normal(0.5, 1, (3, 9)), rng.normal(0, 1, (3, 9))
    exact = resampling.permutation(x, y, confidence=0.9)
    drawn = resampling.permutation(x, y, confidence=0.9, max_exact=10, resamples=40_000, rng=rng)
    p = exact["p_value"]
    assert np.abs(drawn["p_value"] - p).max() < 4 * np.sqrt(p * (1 - p) / 40_000).max() + 1e-3
    assert np.abs(drawn["ci"] - exact["ci"]).max() < 0.05


@pytest.mark.parametrize("n", [4, 6])
def test_size_and_coverage_hold_by_simulation_with_known_truth(n):
    """Under H0 the test rejects at most alpha; the interval covers a known shift (skewed runs, unequal sizes)."""
    reps, alpha = 3000, 0.05
    rng = np.random.default_rng(n)
    x, y = rng.exponential(1.0, (reps, n)), rng.exponential(1.0, (reps, n + 1))  # same law: H0 holds
    out = resampling.permutation(x + 0.7, y, confidence=1 - alpha)  # true shift 0.7
    se = np.sqrt(alpha * (1 - alpha) / reps)
    size = (resampling.permutation(x, y)["p_value"] <= alpha).mean()
    covered = ((out["ci"][:, 0] <= 0.7) & (0.7 <= out["ci"][:, 1])).mean()
    assert size <= alpha + 3 * se
    assert covered >= 1 - alpha - 3 * se
    assert size > alpha - 0.02  # not trivially conservative at these sizes


def test_the_two_sample_t_power_is_statsmodels():
    for e, n1, n2 in [(0.8, 6, 6), (1.2, 5, 9), (0.3, 40, 30)]:
        expected = TTestIndPower().power(effect_size=e, nobs1=n1, ratio=n2 / n1, alpha=0.05)
        assert power.t_power(e, n1, 0.05, n2) == pytest.approx(expected, abs=1e-6)


def test_the_permutation_tests_power_matches_direct_simulation():
    n, level, effect, reps = 5, 0.05, 1.5, 4000
    rng = np.random.default_rng(11)
    x, y = rng.normal(effect, 1, (reps, n)), rng.normal(0, 1, (reps, n))
    simulated = (resampling.permutation(x, y)["p_value"] <= level).mean()
    predicted = float(power.sign_flip_power(effect, n, level, n_reference=n))
    assert abs(simulated - predicted) < 4 * np.sqrt(predicted * (1 - predicted) / reps) * np.sqrt(2)


def _unpaired_scores(effects, seeds, runs_sd=0.02, rng=0):
    """Independent runs per arm (different seed numbers); ``effects``: arm -> shift in score units."""
    generator = np.random.default_rng(rng)
    base = dict(zip(BENCHMARKS, generator.uniform(0.3, 0.7, len(BENCHMARKS))))
    rows = []
    for offset, (arm, shift) in enumerate(effects.items()):
        for seed in range(100 * offset, 100 * offset + seeds):
            run = shift + generator.normal(0, runs_sd)
            for benchmark, domain in BENCHMARKS.items():
                score = base[benchmark] + run + generator.normal(0, 0.005)
                rows.append(("ind", arm, seed, benchmark, domain, "*", score))
    return pd.DataFrame(rows, columns=["experiment", "arm", "seed", "benchmark", "domain", "item", "score"])


def _config(**analysis):
    return parse_config(
        {
            "experiment": "ind",
            "comparisons": [{"family": "f", "reference": "ref", "arms": ["better", "same"]}],
            "analysis": {"pairing": "unpaired", **analysis},
        }
    )


def test_unpaired_analysis_finds_a_planted_effect_and_not_a_planted_null():
    scores = _unpaired_scores({"ref": 0.0, "better": 0.05, "same": 0.0}, seeds=8)
    result = pipeline.run_analysis(_config(), scores)
    rows = result.comparisons[(result.comparisons["measure"] == "domain_balanced")].set_index("arm")
    assert rows.loc["better", "reject"] and not rows.loc["same", "reject"]
    assert (result.comparisons["pairing"] == "unpaired").all()
    assert (result.comparisons["ci_method"] == "permutation").all()
    assert (result.comparisons["n_reference_seeds"] == 8).all()
    # the decision interval excludes 0 exactly when Holm rejects
    tested = result.comparisons.dropna(subset=["decision_level"])
    excludes = (tested["decision_low"] > 0) | (tested["decision_high"] < 0)
    assert (excludes == tested["reject"]).all()
    # Δ is the difference of the arms' mean scores
    means = result.summaries["domain_balanced"].groupby("arm").mean()
    assert rows.loc["better", "mean_diff"] == pytest.approx(means["better"] - means["ref"])
    report = tables.report_markdown(result)
    assert "## Unpaired comparisons (independent runs)" in report and "8 vs 8" in report
    assert "exact permutation test of independent runs" in report
    lines = tables.verdict_lines(result.comparisons)
    assert all("8 vs 8 unpaired runs" in line for line in lines) and "better" in lines[0]


def test_the_same_runs_analysed_paired_are_refused_and_the_pairing_decides_the_test():
    scores = _unpaired_scores({"ref": 0.0, "better": 0.05, "same": 0.0}, seeds=6)
    paired_config = _config(pairing="paired")
    with pytest.raises(AnalysisInputError, match="do not match those of its reference"):
        pipeline.run_analysis(paired_config, scores)


def test_unpaired_rankings_separate_by_the_permutation_test():
    scores = _unpaired_scores({"ref": 0.0, "better": 0.05, "same": 0.001}, seeds=6)
    result = pipeline.run_analysis(_config(), scores)
    runs = result.summaries["domain_balanced"]
    ranked = result.rankings[result.rankings["summary"] == "domain_balanced"].reset_index(drop=True)
    assert list(ranked["arm"])[0] == "better"
    for i in range(2):
        a, b = ranked["arm"][i], ranked["arm"][i + 1]
        p = _scipy_p(runs.loc[a].to_numpy(), runs.loc[b].to_numpy(), "two-sided")
        assert ranked["separated"][i] == (p <= 0.05)
    assert ranked["separated"][0]  # 5 points apart at a 2-point run sd: separated


def test_the_unpaired_probability_of_improvement_is_rliables_mann_whitney_share():
    scores = _unpaired_scores({"ref": 0.0, "better": 0.01, "same": 0.0}, seeds=5)
    result = pipeline.run_analysis(_config(), scores)
    acc = result.accuracy
    row = result.improvement.set_index("arm").loc["better"]
    expected = np.mean(
        [stats.mannwhitneyu(acc.loc["better"][b], acc.loc["ref"][b]).statistic / 25 for b in acc.columns]
    )
    assert row["probability"] == pytest.approx(expected)
    assert np.isnan(row["ci_low"]) and "unpaired" in row["note"]


def test_planning_numbers_agree_with_what_the_unpaired_analysis_reports():
    raw = {
        "experiment": "ind",
        "seeds": list(range(5)),
        "comparisons": [{"family": "f", "reference": "ref", "arms": ["better", "same"]}],
        "analysis": {"pairing": "unpaired"},
    }
    plan = planning.plan_families(parse_config(raw), 5)[0]
    result = pipeline.run_analysis(parse_config(raw), _unpaired_scores({"ref": 0, "better": 0.05, "same": 0}, 5))
    primary = result.comparisons[result.comparisons["stage"] == "primary"]
    assert plan.min_p == pytest.approx(primary["min_attainable_p"].iloc[0]) == pytest.approx(2 * 2 / 252)
    assert "5 runs per arm (unpaired)" in planning.describe(parse_config(raw), [plan])


@pytest.mark.parametrize(
    "analysis, key",
    [
        ({"ci_methods": ["t"]}, "ci_methods"),
        ({"equivalence_test": "t"}, "equivalence_test"),
        ({"item_bootstrap": True}, "item_bootstrap"),
        ({"common_seeds_only": True}, "common_seeds_only"),
        ({"pairing": "matched"}, "pairing"),
    ],
)
def test_settings_the_unpaired_test_cannot_honour_are_one_line_errors(analysis, key):
    with pytest.raises(AnalysisInputError, match=rf"^<config>: analysis\.{key}: expected [^\n]*$"):
        _config(**analysis)


def test_a_sequential_design_is_refused_unpaired():
    with pytest.raises(AnalysisInputError, match="sequential design"):
        parse_config(
            {
                "experiment": "ind",
                "seeds": {"initial": 3, "wave": 2, "max": 9},
                "comparisons": [{"family": "f", "reference": "ref", "arms": ["a"]}],
                "analysis": {"pairing": "unpaired"},
            }
        )


def _paired_scores_with_different_seed_sets():
    """ref and a ran seeds 1-7, b ran 1-6 and 9: paired runs of different seed sets."""
    scores = synthetic_scores(
        arms=["ref", "a", "b"],
        seeds=range(1, 10),
        benchmarks=BENCHMARKS,
        items=None,
        experiment="ind",
        rng=np.random.default_rng(4),
        effects={"a": 0.3},
    )
    keep = scores["seed"].le(7) | (scores["arm"].eq("b") & scores["seed"].eq(9))
    return scores[keep & ~(scores["arm"].eq("b") & scores["seed"].eq(7))].reset_index(drop=True)


def test_common_seeds_only_keeps_the_seeds_every_compared_arm_ran_and_lists_the_rest():
    scores = _paired_scores_with_different_seed_sets()
    raw = {"experiment": "ind", "comparisons": [{"family": "f", "reference": "ref", "arms": ["a", "b"]}]}
    with pytest.raises(AnalysisInputError, match="seeds of arm 'b'"):  # today's default: refused
        pipeline.run_analysis(parse_config(raw), scores)
    result = pipeline.run_analysis(parse_config({**raw, "analysis": {"common_seeds_only": True}}), scores)
    dropped = set(zip(result.dropped["arm"], result.dropped["seed"]))
    assert dropped == {("ref", 7), ("a", 7), ("b", 9)}
    assert result.dropped["reason"].str.contains("common_seeds_only").all()
    assert (result.comparisons["n_seeds"] == 6).all()
    # the same as analysing only the common seeds
    common = pipeline.run_analysis(parse_config(raw), scores[scores["seed"].le(6)])
    pd.testing.assert_frame_equal(result.comparisons, common.comparisons)
    assert any("Dropped run arm=b seed=9: seed 9 was not run" in note for note in result.notes)


def test_the_html_report_and_console_say_unpaired_and_never_sign_flip(tmp_path, capsys):
    """Run as a user would: ``armlab analyze`` then ``armlab report`` on a tidy CSV of independent runs."""
    from armlab import cli

    _unpaired_scores({"ref": 0.0, "better": 0.05, "same": 0.0}, seeds=6).to_csv(tmp_path / "scores.csv", index=False)
    config = tmp_path / "ind.yaml"
    config.write_text(
        "experiment: ind\n"
        f"input: {{kind: tidy, path: {tmp_path / 'scores.csv'}}}\n"
        "benchmarks: {m1: {domain: math}, m2: {domain: math}, c1: {domain: code}}\n"
        "comparisons:\n  - {family: f, reference: ref, arms: [better, same]}\n"
        "analysis: {pairing: unpaired}\n"
    )
    assert cli.main(["analyze", str(config), "--out", str(tmp_path / "out")]) == 0
    console = capsys.readouterr().out
    assert "f: better vs ref on domain_balanced: better" in console and "(6 vs 6 unpaired runs)" in console
    assert cli.main(["report", str(config), "--analysis", str(tmp_path / "out"), "--out", str(tmp_path / "html")]) == 0
    page = (tmp_path / "html" / "index.html").read_text()
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]+"', "", page))))
    assert "sign-flip" not in text and "sign_flip" not in text and "matched seeds" not in text
    assert "6 vs 6 unpaired runs" in text and "exact permutation test of independent runs" in text
    assert "Difference of the arms' mean scores" in text  # the forest plot's caption
    latex = (tmp_path / "out" / "comparisons.tex").read_text()
    assert "6 vs 6 unpaired runs" in latex and "permutation" in latex and "sign-flip" not in latex


def test_settings_built_by_hand_for_a_paired_test_are_refused_on_unpaired_runs():
    """The config refuses equivalence_test: t unpaired (above); Settings built in code reach the statistics, which
    refuse it too rather than quietly deciding equivalence by another test (before: an AttributeError)."""
    settings = replace(_config().settings, equivalence_test="t")
    x = np.random.default_rng(1).normal(size=(1, 4))
    with pytest.raises(AnalysisInputError, match="^analysis.equivalence_test: t is a paired test"):
        paired.block_statistics(
            intervals.UnpairedBlock(x, x + 1, exact=settings.exact_test(), seed=settings.bootstrap_seed), settings
        )
