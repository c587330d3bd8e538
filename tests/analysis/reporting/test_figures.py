"""Figures: what each one draws is the data it was given, in the one colour-blind-safe style."""

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex

from armlab.analysis import pipeline, tables
from armlab.analysis.config import parse_config
from armlab.analysis.design.synthetic import synthetic_scores
from armlab.analysis.reporting import figures
from armlab.analysis.stats import power
from armlab.analysis.stats.resampling import min_sign_flip_pvalue

BENCHMARKS = {"b0": "math", "b1": "math", "b2": "logic", "b3": "science"}


def _result(seeds, effects):
    """Analysis of per-benchmark synthetic scores: family `policies` (big, none) vs ref, `other` (tiny) vs ref."""
    raw = {
        "experiment": "synthetic",
        "benchmarks": {b: {"domain": d} for b, d in BENCHMARKS.items()},
        "comparisons": [
            {"family": "policies", "reference": "ref", "arms": ["big", "none"]},
            {"family": "other", "reference": "ref", "arms": ["tiny"]},
        ],
        "analysis": {"resamples": 1000},
    }
    scores = synthetic_scores(
        arms=["ref", "big", "none", "tiny"],
        seeds=range(1, seeds + 1),
        benchmarks=BENCHMARKS,
        items=None,
        rng=np.random.default_rng(3),
        effects=effects,
        seed_sd=0.3,
        run_sd=0.002,
    )
    cfg = parse_config(raw)
    return cfg, pipeline.run_analysis(cfg, scores)


@pytest.fixture(scope="module")
def decisive():
    """Eight seeds: `big` is Holm-significant, `none` equivalent to the reference."""
    return _result(8, {"big": 0.5, "tiny": 0.001})


@pytest.fixture(scope="module")
def three_seeds():
    return _result(3, {"big": 0.5, "tiny": 0.001})


def _forest_panel(ax):
    """``{y: (marker, filled)}`` of the point estimates and ``{y: [low, high]}`` of the intervals of a panel."""
    points, intervals = {}, {}
    for line in ax.get_lines():
        x, y = line.get_xdata(), line.get_ydata()
        if line.get_marker() != "None":
            points[int(y[0])] = (line.get_marker(), to_hex(line.get_mfc()) != "#ffffff")
        elif x[0] != x[-1]:
            intervals[int(y[0])] = list(x)
    return points, intervals


def test_forest_plot_marks_significant_and_equivalent_arms_and_draws_the_intervals(decisive):
    _, result = decisive
    table = result.comparisons[result.comparisons["family"] == "policies"]
    fig = figures.forest_plot(table, alpha=0.05)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["domain_balanced", "flat"]
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["big", "none"]
    verdicts = dict(
        zip(
            ["big", "none"],
            table.query("measure == 'domain_balanced' and ci_method == 'sign_flip'").pipe(
                lambda t: zip(t["reject"], t["equivalent"])
            ),
        )
    )
    assert verdicts == {"big": (True, False), "none": (False, True)}
    points, intervals = _forest_panel(axes[0])
    assert points == {0: ("o", True), 1: ("D", False)}
    row = table.query("measure == 'domain_balanced' and ci_method == 'sign_flip' and arm == 'big'").iloc[0]
    assert intervals[0] == pytest.approx([100 * row["ci_low"], 100 * row["ci_high"]])
    # the equivalent arm's whisker is the TOST's interval at Holm's level: inside the shaded ±1 point band
    # (issue 54: it was the difference's interval, which may leave the band beside an "equivalent" diamond)
    row = table.query("measure == 'domain_balanced' and ci_method == 'sign_flip' and arm == 'none'").iloc[0]
    assert intervals[1] == pytest.approx([100 * row["eq_decision_low"], 100 * row["eq_decision_high"]])
    assert -1 < intervals[1][0] <= intervals[1][1] < 1
    assert "equivalent: the TOST's" in fig.get_suptitle()
    assert any(list(line.get_xdata()) == [0, 0] for line in axes[0].get_lines())  # reference line at 0
    assert "seeds no Holm-adjusted p" not in fig.get_suptitle()


def test_forest_plot_shows_the_seed_count_warning_when_nothing_can_be_significant(three_seeds):
    _, result = three_seeds
    fig = figures.forest_plot(result.comparisons[result.comparisons["family"] == "policies"], alpha=0.05)
    assert "With 3 seeds no Holm-adjusted p in this family can be below 0.5 > α = 0.05" in fig.get_suptitle()


def test_heatmap_cells_are_the_mean_paired_differences_in_points(decisive):
    cfg, result = decisive
    fig = figures.benchmark_heatmap(result.comparisons, cfg.benchmarks)
    ax = fig.axes[0]
    rows = result.comparisons.query("level == 'benchmark' and ci_method == 'sign_flip'")
    expected = rows.pivot(index="arm", columns="measure", values="mean_diff").loc[["big", "none", "tiny"]] * 100
    assert [t.get_text() for t in ax.get_xticklabels()] == ["b0", "b1", "b2", "b3"]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "policies: big − ref",
        "policies: none − ref",
        "other: tiny − ref",
    ]
    assert np.asarray(ax.get_images()[0].get_array()) == pytest.approx(expected[["b0", "b1", "b2", "b3"]].to_numpy())
    bold = {t.get_text() for t in ax.texts if t.get_fontweight() == "bold"}
    significant = rows[rows["reject"]]
    assert bold == {f"{100 * v:+.1f}" for v in significant["mean_diff"]}


def test_heatmap_bolds_only_benchmarks_past_the_familys_gate():
    # 12 seeds, `big` and `tiny` equally far above ref on every benchmark: `tiny` alone in its family
    # passes the gate; `big` does not, because `none` in the same family is not significant
    cfg, result = _result(12, {"big": 0.5, "tiny": 0.5})
    rows = result.comparisons.query("level == 'benchmark' and ci_method == 'sign_flip'")
    assert rows.groupby("arm")["reject"].all().to_dict() == {"big": False, "none": False, "tiny": True}
    ax = figures.benchmark_heatmap(result.comparisons, cfg.benchmarks).axes[0]
    bold = [t.get_text() for t in ax.texts if t.get_fontweight() == "bold"]
    tiny = rows[rows["arm"] == "tiny"].set_index("measure").loc[["b0", "b1", "b2", "b3"], "mean_diff"]
    assert bold == [f"{100 * v:+.1f}" for v in tiny]


def _steps():
    rows = []
    for arm, level in (("ref", 0.3), ("filter", 0.5)):
        for seed in (1, 2, 3):
            for step in range(1, 6):
                rows.append(
                    {
                        "arm": arm,
                        "seed": seed,
                        "step": step,
                        "reward": level + 0.01 * seed,
                        "kept_frac": 1.0 if arm == "ref" else 0.4,
                    }
                )
    return pd.DataFrame(rows)


def test_training_curves_draw_the_mean_and_a_band_over_seeds():
    fig = figures.training_curves(_steps(), window=1)
    assert [ax.get_title() for ax in fig.axes] == ["mean reward", "kept prompts (fraction)"]  # no frac_zero_var
    reward = fig.axes[0]
    means = {line.get_label(): line.get_ydata() for line in reward.get_lines()}
    assert means["ref"] == pytest.approx(np.full(5, 0.32))
    band = reward.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(0.31) and band.max() == pytest.approx(0.33)


def test_rolling_mean_smooths_each_run_separately():
    steps = _steps().assign(reward=lambda t: t["step"].astype(float))
    smoothed = figures.smooth_steps(steps, ["reward"], window=2)
    assert smoothed.query("arm == 'ref' and seed == 1")["reward"].tolist() == [1.0, 1.5, 2.5, 3.5, 4.5]


def test_ranking_plot_draws_each_arms_rank_under_each_summary(decisive):
    _, result = decisive
    fig = figures.ranking_plot(result.rankings)
    assert [ax.get_title() for ax in fig.axes] == ["policies", "other"]
    ranks = result.rankings.query("ranking == 'policies'").pivot(index="arm", columns="summary", values="rank")
    ax = fig.axes[0]
    assert {t.get_text() for t in ax.texts} == {"ref", "big", "none"}
    drawn = sorted(tuple(line.get_ydata()) for line in ax.get_lines())
    assert drawn == sorted(tuple(ranks.loc[a, ["domain_balanced", "flat"]]) for a in ranks.index)


def test_power_plot_is_the_minimum_detectable_effect_at_the_observed_spread(decisive):
    cfg, result = decisive
    fig = figures.power_plot(result.comparisons, cfg.settings, max_seeds=12)
    ax = fig.axes[0]
    row = result.comparisons.query("family == 'policies' and arm == 'big' and measure == 'domain_balanced'").iloc[0]
    line = next(line for line in ax.get_lines() if line.get_label() == "big")
    seeds = np.arange(2, 13)
    level = 0.05 / 2
    expected = 100 * power.minimum_detectable_effect(np.full(11, row["sd_diff"]), seeds, level=level)
    drawn = line.get_ydata()
    reachable = min_sign_flip_pvalue(seeds) <= level
    assert np.isnan(drawn[~reachable]).all() and not reachable[:5].any()  # 2..6 seeds cannot reach 0.025
    assert drawn[reachable] == pytest.approx(expected[reachable])
    assert drawn[list(seeds).index(8)] == pytest.approx(100 * row["mde"])  # the table's MDE at the seeds used


def test_arm_styles_keep_references_black_and_others_in_okabe_ito_colours():
    arms = ["ref", *[f"a{i}" for i in range(8)]]
    styles = figures.arm_styles(arms, ["ref"])
    assert styles["ref"] == {"color": "#000000", "linestyle": "-"}
    colours = [styles[f"a{i}"]["color"] for i in range(8)]
    assert colours[:6] == list(figures.PALETTE) and len(set(colours[:6])) == 6
    assert styles["a6"] == {"color": figures.PALETTE[0], "linestyle": "--"}  # beyond six: another line style


def test_render_gives_svg_and_png_bytes_that_do_not_change_between_runs(three_seeds):
    _, result = three_seeds
    first = figures.render(figures.forest_plot(result.comparisons, alpha=0.05))
    second = figures.render(figures.forest_plot(result.comparisons, alpha=0.05))
    assert first["svg"].startswith(b"<?xml") and first["png"].startswith(b"\x89PNG")
    assert first == second


def test_labels_are_text_even_with_dollar_signs(three_seeds, tmp_path):
    _, result = three_seeds
    table = result.comparisons.replace({"big": "cost $5 and $x$"})
    fig = figures.forest_plot(table[table["family"] == "policies"], alpha=0.05)
    paths = figures.save(figures.render(fig), tmp_path, "dollars")
    assert [p.name for p in paths] == ["dollars.svg", "dollars.png"]
    assert "cost $5 and $x$" in [t.get_text() for t in fig.axes[0].get_yticklabels()]


def test_profile_plot_draws_each_arms_share_above_every_threshold_and_its_band(decisive):
    _, result = decisive
    arms = ["ref", "big", "none"]
    ax = figures.profile_plot(result.profiles, arms, "policies").axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == arms
    big = result.profiles[result.profiles["arm"] == "big"]
    np.testing.assert_allclose(lines["big"].get_xdata(), 100 * big["tau"])
    np.testing.assert_allclose(lines["big"].get_ydata(), big["fraction"])
    accuracy = result.accuracy.loc["big"].to_numpy()
    assert big.set_index("tau").loc[0.5, "fraction"] == pytest.approx(np.mean(accuracy > 0.5))
    assert len(ax.collections) == 3 and (big["ci_low"] <= big["fraction"]).all()
    assert (big["fraction"] <= big["ci_high"]).all()
    assert ax.get_title() == "policies, 95% percentile bootstrap band over seeds"


def _overlaps(boxes):
    return [(i, j) for i, a in enumerate(boxes) for j, b in enumerate(boxes[i + 1 :], i + 1) if a.overlaps(b)]


def test_ranking_plot_labels_do_not_overlap_where_arms_tie_or_summaries_have_long_names():
    summaries = ["domain_balanced_average", "flat_mean_over_benchmarks", "math_and_logic_only", "science_only"]
    arms = ["grpo", "dr_grpo", "rloo", "difffilter"]
    ranks = [[1, 1, 1, 1], [2, 2, 2, 1], [3, 3, 2, 1], [4, 4, 4, 4]]  # three arms share rank 1 on the last summary
    rankings = pd.DataFrame(
        [
            {"ranking": "all", "summary": s, "arm": a, "mean": 0.5, "rank": r[j], "separated": False}
            for a, r in zip(arms, ranks)
            for j, s in enumerate(summaries)
        ]
    )
    fig = figures.ranking_plot(rankings)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = fig.axes[0]
    labels = [t.get_window_extent(renderer) for t in ax.texts]
    ticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels()]
    assert len(labels) == 4 and _overlaps(labels) == []
    assert len(ticks) == 4 and _overlaps(ticks) == []


def test_rankings_say_which_neighbours_the_seeds_separate():
    from itertools import product

    from armlab.analysis.screens import sensitivity

    rng = np.random.default_rng(3)
    seeds = range(8)
    base = rng.normal(0.5, 0.02, 8)
    runs = {"top": base + 0.05, "close": base + 0.049 + rng.normal(0, 0.004, 8), "low": base}
    frame = pd.DataFrame(
        {"s": np.concatenate(list(runs.values()))},
        index=pd.MultiIndex.from_product([list(runs), seeds], names=["arm", "seed"]),
    )
    ranked = sensitivity.rankings(frame, {"all": ["low", "close", "top"]}).set_index("arm")
    assert ranked["rank"].to_dict() == {"top": 1, "close": 2, "low": 3}

    def exact_p(d):  # enumeration of all 2^8 sign patterns, independent of analysis.resampling
        sums = [abs(np.dot(signs, d)) for signs in product([-1, 1], repeat=len(d))]
        return np.mean(np.array(sums) >= abs(d.sum()) - 1e-12)

    for arm, below in (("top", "close"), ("close", "low")):
        expected = exact_p(runs[arm] - runs[below]) <= 0.05
        assert bool(ranked.loc[arm, "separated"]) == expected
    assert not ranked.loc["top", "separated"] and ranked.loc["close", "separated"]  # one of each case
    assert np.isnan(ranked.loc["low", "separated"])
    orders = tables.ranking_orders(ranked.reset_index())
    assert orders["order (best first)"].tolist() == ["top ≈ close > low"]
