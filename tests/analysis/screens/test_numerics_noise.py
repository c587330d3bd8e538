"""Numerics as a variance component (analysis/screens/numerics_noise.py): the estimator against a simulation with known
numerics and seed variances, and the "not robust to numerics" flag on planted effects of numerics size and larger."""

import numpy as np
import pandas as pd
import pytest

from armlab.analysis import tables
from armlab.analysis.comparisons.paired import Pair
from armlab.analysis.config import parse_config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.pipeline import run_analysis
from armlab.analysis.samples.sampled import components_table
from armlab.analysis.stats import sampling

COLUMNS = ["experiment", "arm", "seed", "benchmark", "domain", "item", "score", "n_samples", "n_correct"]
BENCHMARKS = {"add": "math", "sort": "logic", "sci": "science"}
WEIGHTS = pd.Series({"add": 1 / 3, "sort": 1 / 3, "sci": 1 / 3})


def simulate(rng, replicates, seeds, items, k, seed_sd, numerics_sd, numerics_item_sd, controls=2):
    """Tidy scores and per-sample verdicts of ``replicates`` independent experiments, each a reference ``r<j>``, an
    arm ``a<j>`` and numerics controls ``c<j>_<m>`` of the reference, with every run's true (sampling-free) measure.

    Logit of item i in run (arm, seed): difficulty_i + seed effect (shared by the arms of a seed) + the arm's training
    noise at that seed (``seed_sd``: a control shares its reference's, since it trains with the same streams) +
    numerics noise, one draw per run for the run and per item (``numerics_sd``, ``numerics_item_sd``: every run,
    reference and controls included, draws its own). Sample j of an item is 1[u < p] with u shared by the arms of a
    seed (common random numbers, as armlab's evaluations draw them).
    """
    n, b = len(seeds), len(BENCHMARKS)
    difficulty = rng.normal(0.0, 1.0, (b, items))
    rows, verdicts, truth = [], [], {}
    for rep in range(replicates):
        seed_effect = rng.normal(0.0, 0.3, n)
        training = {"r": rng.normal(0.0, seed_sd, n), "a": rng.normal(0.0, seed_sd, n)}
        arms = {f"r{rep}": "r", f"a{rep}": "a", **{f"c{rep}_{m}": "r" for m in range(controls)}}
        u = rng.random((n, b, items, k))
        for arm, kind in arms.items():
            logit = (
                difficulty[None]
                + (seed_effect + training[kind] + rng.normal(0.0, numerics_sd, n))[:, None, None]
                + rng.normal(0.0, numerics_item_sd, (n, b, items))
            )
            p = 1 / (1 + np.exp(-logit))
            correct = (u < p[..., None]).astype(float)
            for s, seed in enumerate(seeds):
                truth[(arm, seed)] = float(p[s].mean(axis=1) @ WEIGHTS.to_numpy())
                for j, (benchmark, domain) in enumerate(BENCHMARKS.items()):
                    c = correct[s, j].sum(axis=1)
                    rows += [
                        ("x", arm, seed, benchmark, domain, f"{benchmark}{i}", c[i] / k, k, c[i]) for i in range(items)
                    ]
                    verdicts += [
                        (arm, seed, benchmark, f"{benchmark}{i}", t, correct[s, j, i, t])
                        for i in range(items)
                        for t in range(k)
                    ]
    scores = pd.DataFrame(rows, columns=COLUMNS)
    answers = pd.DataFrame(verdicts, columns=["arm", "seed", "benchmark", "item", "sample", "correct"])
    return scores, answers, truth


def observed(scores: pd.DataFrame) -> pd.Series:
    """Every run's measure (the equal-weight mean of its benchmarks' accuracies), indexed (arm, seed)."""
    per_benchmark = scores.groupby(["arm", "seed", "benchmark"]).score.mean().unstack("benchmark")
    return per_benchmark[WEIGHTS.index] @ WEIGHTS


def test_the_numerics_component_is_unbiased_against_a_simulation_with_known_numerics_and_seed_noise():
    """Controls of a reference at its seeds, under common random numbers: mean_s d_s^2 - n * sampling recovers the
    true mean square of the numerics difference, which the raw mean square overstates by the sampling noise; and
    beside the training (seed) component of an arm's comparison it has the size the simulation gave it."""
    rng = np.random.default_rng(5)
    seeds, replicates = [1, 2, 3, 4, 5, 6], 60
    scores, answers, truth = simulate(
        rng, replicates, seeds, items=30, k=4, seed_sd=0.15, numerics_sd=0.08, numerics_item_sd=0.2
    )
    measure = observed(scores)
    pairs = []
    for rep in range(replicates):
        for arm in (f"a{rep}", f"c{rep}_0", f"c{rep}_1"):
            diffs = (measure.loc[arm] - measure.loc[f"r{rep}"]).rename("flat").to_frame()
            pairs.append(Pair("f", f"r{rep}", arm, diffs))
    components, _ = components_table(scores, pairs, WEIGHTS, "flat", 4, answers)
    estimates, raw, true_square, training, true_training = [], [], [], [], []
    for pair, row in zip(pairs, components.itertuples()):
        d = pair.diffs["flat"].to_numpy()
        if pair.arm.startswith("c"):
            estimates.append(sampling.numerics_mean_square(d[None, :], row.var_sampling)[0])
            raw.append(np.mean(d**2))
            true_square.append(np.mean([(truth[(pair.arm, s)] - truth[(pair.reference, s)]) ** 2 for s in seeds]))
        else:
            training.append(row.var_training)
            true_d = np.array([truth[(pair.arm, s)] - truth[(pair.reference, s)] for s in seeds])
            true_training.append(true_d.var(ddof=1) / len(seeds))
    estimates, true_square = np.array(estimates), np.array(true_square)
    error = (estimates - true_square).std(ddof=1) / np.sqrt(len(estimates))
    assert abs(estimates.mean() - true_square.mean()) < 3 * error  # unbiased
    excess = np.array(raw) - true_square  # without the correction, sampling noise counts as numerics
    assert excess.mean() > 4 * excess.std(ddof=1) / np.sqrt(len(excess))
    # the training component of an arm's comparison holds the numerics of both runs besides the seed's own noise:
    # per seed E[D^2] = 2 seed part + the numerics mean square; the numerics share of it is what the simulation set
    numerics_share = estimates.mean() / (len(seeds) * np.mean(training))
    true_share = true_square.mean() / (len(seeds) * np.mean(true_training))
    assert numerics_share == pytest.approx(true_share, rel=0.25)
    assert 0.1 < true_share < 0.9  # both sources matter in this simulation


def per_run_table(values: dict[str, list[float]]) -> pd.DataFrame:
    """Per-benchmark tidy rows (one benchmark) from each arm's per-seed scores."""
    rows = [
        ("x", arm, seed, "add", "math", "*", score, 1, score)
        for arm, scores in values.items()
        for seed, score in enumerate(scores, start=1)
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def flagged_config(arms: list[str], controls: list[str]) -> dict:
    return {
        "experiment": "x",
        "arms": {"ref": {}, **{a: {} for a in arms}, **{c: {"numerics": {"threads": 2}} for c in controls}},
        "benchmarks": {"add": {"domain": "math"}},
        "comparisons": [
            *({"family": f"f_{a}", "reference": "ref", "arms": [a]} for a in arms),
            *([{"family": "numerics", "reference": "ref", "arms": controls}] if controls else []),
        ],
        "analysis": {"resamples": 200, "power_replicates": 200, "per_benchmark": False},
    }


REFERENCE = [0.50, 0.55, 0.45, 0.60, 0.52, 0.48]


def shifted(by: list[float]) -> list[float]:
    return [r + d for r, d in zip(REFERENCE, by)]


def test_a_verdict_within_the_numerics_spread_is_flagged_and_a_large_effect_is_not():
    """Planted: controls whose differences from the reference are numerics noise (largest mean 1.5 points); an arm
    better by about 2 points at every seed (better, but its interval's bound nearest 0 is within 1.5 points), one
    better by 10 points (far outside), one equivalent within ±1 point by a margin smaller than the spread, and one
    equivalent well inside it once the controls move less."""
    noise = {"ctl_a": [0.015, 0.012, 0.018, 0.016, 0.014, 0.015], "ctl_b": [-0.004, 0.006, -0.002, 0.001, 0.0, 0.003]}
    arms = {
        "small": [0.016, 0.012, 0.02, 0.018, 0.013, 0.017],
        "large": [0.10, 0.098, 0.105, 0.102, 0.099, 0.101],
        "same": [0.001, -0.001, 0.002, 0.0, -0.002, 0.001],
    }
    values = {"ref": REFERENCE, **{a: shifted(d) for a, d in {**arms, **noise}.items()}}
    config = parse_config(flagged_config(list(arms), list(noise)))
    result = run_analysis(config, per_run_table(values))
    rows = result.comparisons.set_index("arm")
    verdict = dict(zip(result.comparisons.arm, tables.verdicts(result.comparisons)))
    assert (verdict["small"], verdict["large"], verdict["same"]) == ("better", "better", "equivalent")
    spread = max(abs(np.mean(d)) for d in noise.values())
    assert rows.loc[["small", "large", "same"], "numerics_spread"].tolist() == pytest.approx([spread] * 3)
    # the room: the decision interval's bound nearest 0, or the equivalence interval's distance from the margin
    assert rows.loc["small", "numerics_room"] == pytest.approx(rows.loc["small", "decision_low"])
    eq = rows.loc["same"]
    assert eq.numerics_room == pytest.approx(eq.equivalence_margin - max(abs(eq.eq_low), abs(eq.eq_high)))
    assert rows.loc["small", "numerics_room"] < spread < rows.loc["large", "numerics_room"]
    assert rows.loc["small", "not_robust_to_numerics"] and not rows.loc["large", "not_robust_to_numerics"]
    assert rows.loc["same", "not_robust_to_numerics"]  # its room (about 0.8 points) is within 1.5 points
    # the controls' own rows are the spread, not verdicts to flag
    assert rows.loc[list(noise), "numerics_control"].all() and not rows.loc[list(noise), "not_robust_to_numerics"].any()
    lines = tables.verdict_lines(result.comparisons)
    assert [("not robust to numerics" in line) for line in lines] == [True, False, True, False, False]
    assert "not robust to numerics" in tables.comparisons_markdown(result.comparisons)
    assert any("Not robust to numerics (2 verdict(s)" in note for note in result.notes)

    quieter = {"ctl_a": [d / 10 for d in noise["ctl_a"]], "ctl_b": [d / 10 for d in noise["ctl_b"]]}
    values = {"ref": REFERENCE, **{a: shifted(d) for a, d in {**arms, **quieter}.items()}}
    result = run_analysis(parse_config(flagged_config(list(arms), list(quieter))), per_run_table(values))
    assert not result.comparisons["not_robust_to_numerics"].any()
    assert not any("not robust to numerics" in line for line in tables.verdict_lines(result.comparisons))


def report_section(result) -> str:
    """The report's Numerics section of an analysis in memory (the section reads the analysis's tables only)."""
    from armlab.analysis.reporting import read, sections

    empty = pd.DataFrame()
    analysis = read.Analysis(
        manifest={}, settings=result.config.settings, comparisons=result.comparisons, summaries=empty, weights=empty,
        rankings=empty, sensitivity=empty, dropped=empty, probability_of_improvement=empty,
        performance_profiles=empty, pass_at_k_vs_base=empty, per_benchmark=empty, allocation=empty, sequential=empty,
        sequential_looks=empty, replications=empty, unparsed=empty, report_card=empty, contamination=empty,
        variance_components=result.variance_components,
    )  # fmt: skip
    return sections.numerics_section(sections.Page(None, analysis))


def test_the_report_lists_the_controls_and_the_verdicts_within_their_spread():
    noise = {"ctl": [0.015, 0.012, 0.018, 0.016, 0.014, 0.015]}
    arms = {"small": [0.016, 0.012, 0.02, 0.018, 0.013, 0.017], "large": [0.10, 0.098, 0.105, 0.102, 0.099, 0.101]}
    values = {"ref": REFERENCE, **{a: shifted(d) for a, d in {**arms, **noise}.items()}}
    result = run_analysis(parse_config(flagged_config(list(arms), list(noise))), per_run_table(values))
    html = report_section(result)
    flagged = html.split("Verdicts not robust to numerics")[1]
    assert "<td>ctl</td>" in html and "small vs ref" in flagged and "large vs ref" not in flagged
    without = run_analysis(parse_config(flagged_config(list(arms), [])), per_run_table({"ref": REFERENCE, **{
        a: shifted(d) for a, d in arms.items()}}))  # fmt: skip
    assert report_section(without) == ""


def test_without_controls_nothing_is_flagged_and_the_numerics_component_is_blank():
    values = {"ref": REFERENCE, "small": shifted([0.02, 0.018, 0.025, 0.022, 0.019, 0.021])}
    config = parse_config(flagged_config(["small"], []))
    result = run_analysis(config, per_run_table(values))
    assert result.comparisons["numerics_spread"].isna().all() and not result.comparisons["not_robust_to_numerics"].any()
    assert tables.verdicts(result.comparisons).tolist() == ["better"]
    assert not any("Numerics controls" in note for note in result.notes)


def test_a_control_is_compared_with_one_reference_in_a_family_of_controls_only():
    raw = flagged_config(["small"], ["ctl"])
    raw["comparisons"] = [{"family": "f", "reference": "ref", "arms": ["small", "ctl"]}]
    with pytest.raises(AnalysisInputError, match=r"comparisons\[0\].arms: numerics control 'ctl' shares a family"):
        parse_config(raw)
    raw["comparisons"] = [{"family": "f", "reference": "ref", "arms": ["small"]}]
    with pytest.raises(AnalysisInputError, match=r"arms.ctl.numerics: a numerics control is compared with exactly one"):
        parse_config(raw)
    raw["comparisons"] = [{"family": "f", "reference": "ctl", "arms": ["small"]}]
    with pytest.raises(AnalysisInputError, match=r"comparisons\[0\].reference: 'ctl' is a numerics control"):
        parse_config(raw)
