"""Per-benchmark avg@k, pass@k and maj@k (issue 54, item 4): "MATH-500 pass@4 per method" without a hand computation.

Each benchmark's pass@k is checked against the unbiased estimator computed by enumerating every k-subset of an
item's answers, its maj@k against the votes counted by hand, its p against the 2^n sign flips enumerated by hand;
an arm better on one benchmark only is found there (under the family's gatekept Holm) and not on the other, where
nothing was planted, nor is an arm drawn like its reference; the paper table marks exactly the Holm-significant cells.
"""

from collections import Counter
from itertools import combinations, product

import numpy as np
import pandas as pd
import pytest

from armlab.analysis import tables
from armlab.analysis.config import parse_config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.pipeline import run_analysis
from armlab.analysis.samples import per_benchmark, sampled

BENCHMARKS = {"gsm": "math", "aime": "math", "logic": "logic"}
K = 4


def _experiment(p_right: dict[str, dict[str, float]], seeds: int, items: int = 25, rng_seed: int = 54):
    """Per-answer verdicts with votes and the tidy scores that go with them. Each answer is right (vote 0) with the
    arm's probability on that benchmark, shifted by a seed effect every arm of a seed shares; else a wrong vote
    (1-3) or nothing readable (-1)."""
    rng = np.random.default_rng(rng_seed)
    seed_shift = rng.normal(0, 0.05, seeds)
    answers, scores = [], []
    for arm, by_benchmark in p_right.items():
        for s in range(seeds):
            for benchmark, domain in BENCHMARKS.items():
                for i in range(items):
                    right = rng.random(K) < np.clip(by_benchmark[benchmark] + seed_shift[s], 0, 1)
                    votes = np.where(right, 0, rng.choice([-1, 1, 2, 3], K))
                    item = f"{benchmark}-{i}"
                    answers += [(arm, s, benchmark, item, j, float(v == 0), int(v)) for j, v in enumerate(votes)]
                    scores.append(("exp", arm, s, benchmark, domain, item, right.mean(), K, float(right.sum())))
    columns = ["experiment", "arm", "seed", "benchmark", "domain", "item", "score", "n_samples", "n_correct"]
    answer_columns = ["arm", "seed", "benchmark", "item", "sample", "correct", "vote"]
    return pd.DataFrame(scores, columns=columns), pd.DataFrame(answers, columns=answer_columns)


def _config(comparisons, **analysis):
    return parse_config(
        {
            "experiment": "exp",
            "benchmarks": {b: {"domain": d} for b, d in BENCHMARKS.items()},
            "comparisons": comparisons,
            "eval": {"samples": K, "pass_k": [1, 2, 4], "maj_k": [3]},
            "analysis": {"resamples": 200, "power_replicates": 100, **analysis},
        }
    )


def _pass_by_enumeration(correct: np.ndarray, k: int) -> float:
    """The share of the k-subsets of an item's answers with at least one right answer (Chen et al. 2021's estimand)."""
    subsets = list(combinations(range(len(correct)), k))
    return sum(correct[list(c)].any() for c in subsets) / len(subsets)


def _maj_by_hand(votes: list[int], k: int) -> float:
    counted = Counter(v for v in votes[:k] if v >= 0)
    top = max(counted.values(), default=0)
    tied = [v for v, n in counted.items() if n == top]
    return sum(v == 0 for v in tied) / len(tied) if tied else 0.0


def _sign_flip_p(d: np.ndarray) -> float:
    """Two-sided sign-flip p by enumerating the 2^n patterns: the share with |sum(s d)| >= |sum(d)|."""
    sums = [abs(np.dot(s, d)) for s in product([-1, 1], repeat=len(d))]
    return float(np.mean(np.array(sums) >= abs(d.sum()) - 1e-12))


@pytest.fixture(scope="module")
def planted():
    """``better`` gains 25 points on gsm only; ``twin`` is drawn like the reference (12 seeds: Holm can reach alpha
    over the secondary cells)."""
    base = {"gsm": 0.3, "aime": 0.3, "logic": 0.4}
    scores, answers = _experiment({"ref": base, "better": base | {"gsm": 0.55}, "twin": base}, seeds=12)
    config = _config(
        [
            {"family": "f", "reference": "ref", "arms": ["better"]},
            {"family": "null", "reference": "ref", "arms": ["twin"]},
        ]
    )
    return scores, answers, run_analysis(config, scores, answers=answers)


def test_per_benchmark_pass_and_maj_at_k_are_the_estimators_computed_by_hand(planted):
    scores, answers, result = planted
    table = result.per_benchmark.set_index(["family", "arm", "benchmark", "measure"])
    assert set(result.per_benchmark["measure"]) == {"avg@4", "pass@2", "pass@4", "maj@3"}
    by_run = answers.sort_values("sample").groupby(["arm", "seed", "benchmark", "item"])
    pass_at = {k: by_run["correct"].agg(lambda c, k=k: _pass_by_enumeration(c.to_numpy() > 0, k)) for k in (2, 4)}
    maj = by_run["vote"].agg(lambda v: _maj_by_hand(list(v), 3))
    for measure, per_item in {"pass@2": pass_at[2], "pass@4": pass_at[4], "maj@3": maj}.items():
        runs = per_item.groupby(level=["arm", "seed", "benchmark"]).mean()
        for benchmark in BENCHMARKS:
            arm, ref = (runs.xs((a, benchmark), level=["arm", "benchmark"]).to_numpy() for a in ("better", "ref"))
            row = table.loc[("f", "better", benchmark, measure)]
            assert row["arm_mean"] == pytest.approx(arm.mean()) and row["reference_mean"] == pytest.approx(ref.mean())
            assert row["mean_diff"] == pytest.approx((arm - ref).mean())
    # the accuracy (avg@4) and its p: the sign flips of the 12 seeds' differences, enumerated
    accuracy = scores.groupby(["arm", "seed", "benchmark"])["score"].mean()
    for benchmark in BENCHMARKS:
        d = (accuracy.xs(("better", benchmark), level=["arm", "benchmark"]) - accuracy.xs(("ref", benchmark),
             level=["arm", "benchmark"])).to_numpy()  # fmt: skip
        row = table.loc[("f", "better", benchmark, "avg@4")]
        assert row["mean_diff"] == pytest.approx(d.mean()) and row["p_value"] == pytest.approx(_sign_flip_p(d))
    # and the arm's "mean ± interval" is the t interval of its 12 seeds' values
    values = accuracy.xs(("better", "gsm"), level=["arm", "benchmark"]).to_numpy()
    half = 2.200985160082949 * values.std(ddof=1) / np.sqrt(12)  # scipy.stats.t.ppf(0.975, 11)
    row = table.loc[("f", "better", "gsm", "avg@4")]
    assert [row["arm_low"], row["arm_high"]] == pytest.approx([values.mean() - half, values.mean() + half])


def test_a_planted_benchmark_effect_is_found_there_only_and_a_planted_null_nowhere(planted):
    _, _, result = planted
    table = result.per_benchmark.set_index(["family", "arm", "benchmark", "measure"])
    found = table.loc[("f", "better")]
    # the gate is open (better is better on the primary summary) and gsm's gain is found on every measure
    assert (found.loc["gsm", "verdict"] == "better").all(), found.loc["gsm", ["p_holm", "verdict"]]
    assert not found.loc[["aime", "logic"], "reject"].any()  # nothing planted there: nothing found
    assert not table.loc[("null", "twin"), "reject"].any()
    comparisons = result.comparisons.set_index(["family", "arm", "measure"])
    cell = comparisons.loc[("f", "better", "gsm:pass@4")]  # one interval method: one row
    assert (cell["level"], cell["stage"]) == ("benchmark", "secondary")
    # the paper table: benchmarks x methods, mean ± interval in points, * exactly where Holm rejects
    latex = tables.per_benchmark_latex(result.per_benchmark, 0.05)
    (frame,) = [f for family, measure, f in tables.per_benchmark_sections(result.per_benchmark) if (family, measure)
                == ("f", "pass@4")]  # fmt: skip
    assert list(frame.columns) == ["benchmark", "ref", "better"] and list(frame["benchmark"]) == list(BENCHMARKS)
    row = found.loc[("gsm", "pass@4")]
    assert frame.iloc[0, 2] == f"{100 * row['arm_mean']:.2f} ± {50 * (row['arm_high'] - row['arm_low']):.2f}*"
    assert [cell.endswith("*") for cell in frame["better"]] == [True, False, False]
    assert r"\pm" in latex and "^{*}" in latex and "pass@4 per benchmark" in latex
    assert "here every difference was tested)" in tables.per_benchmark_caption(
        result.per_benchmark, "f", "pass@4", 0.05
    )
    # with too few seeds for Holm over the secondary cells the caption says nothing there can be significant
    unreachable = result.per_benchmark.assign(min_attainable_p=0.6)
    caption = tables.per_benchmark_caption(unreachable, "f", "pass@4", 0.05)
    assert "none can be significant: the smallest adjusted p is 0.6 > α = 0.05" in caption


def test_per_benchmark_measures_share_the_secondary_holm_and_are_counted_by_the_plan(planted):
    _, _, result = planted
    first = result.comparisons[result.comparisons["ci_method"] == "sign_flip"]
    secondary = first[(first["family"] == "f") & (first["stage"] == "secondary")]
    names = set(sampled.per_benchmark_measures(list(BENCHMARKS), result.config.settings))
    assert names == {f"{b}:{m}" for b in BENCHMARKS for m in ("pass@2", "pass@4", "maj@3")}
    assert names <= set(secondary["measure"])
    # one Holm over every secondary cell: the adjusted p of the smallest is at least m times its p
    smallest = secondary.loc[secondary["p_value"].idxmin()]
    assert smallest["p_holm"] >= min(1.0, len(secondary) * smallest["p_value"]) - 1e-12
    from armlab.analysis.config import compared_measures

    assert len(compared_measures(result.config.settings, BENCHMARKS)) - 1 == len(secondary)


def test_one_benchmark_has_no_per_benchmark_twin_and_a_clashing_name_is_refused():
    settings = _config([{"family": "f", "reference": "ref", "arms": ["a"]}]).settings
    assert sampled.per_benchmark_measures(["only"], settings) == []
    with pytest.raises(AnalysisInputError, match=r"gsm:pass@2.*per-benchmark pass@k/maj@k"):
        per_benchmark.check_names(["gsm:pass@2", "gsm:pass@4"], ["gsm", "gsm:pass@2"], "c.yaml")
