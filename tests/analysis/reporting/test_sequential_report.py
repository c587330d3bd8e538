"""The sequential design in the report: where each arm stopped, the runs it saved, and the figure of its looks."""

import re

import numpy as np
import pandas as pd
import pytest
import yaml
from matplotlib.colors import to_hex

from armlab.analysis import pipeline, tables, waves
from armlab.analysis.config import parse_config
from armlab.analysis.design.synthetic import synthetic_scores
from armlab.analysis.reporting import figures, read, report, sections

BENCHMARKS = {"b0": "math", "b1": "math", "b2": "logic"}
SEEDS = list(range(1, 13))
DESIGN = {"initial": 4, "wave": 2, "max": 12, "margin": 0.03}
SECTIONS_WITHOUT_DESIGN = [
    key
    for key in sections.SECTIONS
    if key not in ("sequential", "replication", "curves", "checkpoints", "grader", "contamination", "numerics")
]  # a fixed design, no predictions, no learning curves (armlab report --curves), no runs made elsewhere, no other
# verifiers (armlab rescore), no procedural twins, no numerics controls


def _config(seeds):
    """Family `controls`: `big` (a large planted effect) and `null` (none) against `ref`."""
    return {
        "experiment": "sequential_report",
        "benchmarks": {b: {"domain": d} for b, d in BENCHMARKS.items()},
        "comparisons": [{"family": "controls", "reference": "ref", "arms": ["big", "null"]}],
        "seeds": seeds,
        "analysis": {"resamples": 200, "per_benchmark": False},
    }


def _analyze_and_report(root, seeds):
    """Analysis and report of the planted scores under ``seeds`` (a design or a list); ``(analysis dir, html)``."""
    raw = _config(seeds)
    scores = synthetic_scores(
        arms=["ref", "big", "null"],
        seeds=SEEDS,
        benchmarks=BENCHMARKS,
        items=None,
        rng=np.random.default_rng(5),
        effects={"big": 0.5},
        run_sd=0.01,
        experiment=raw["experiment"],
    )
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump(raw))
    pipeline.write_outputs(pipeline.run_analysis(parse_config(raw, str(config)), scores), root / "analysis")
    return root / "analysis", _report(root, root / "analysis")


def _report(root, analysis):
    out = root / f"report-{analysis.name}"
    return report.write_report(root / "config.yaml", analysis, out).read_text()


@pytest.fixture(scope="module")
def sequential(tmp_path_factory):
    return _analyze_and_report(tmp_path_factory.mktemp("sequential"), DESIGN)


def _sections(html):
    return re.findall(r'<section id="([^"]+)"', html)


def _sequential_section(html):
    return re.search(r'<section id="sequential">.*?</section>', html).group(0)


def test_the_section_shows_where_each_arm_stopped_and_the_runs_it_saved(sequential):
    analysis, html = sequential
    assert _sections(html) == ["card", "run", "verdicts", "comparisons", "sequential", *SECTIONS_WITHOUT_DESIGN[4:]]
    assert '<a href="#comparisons">Comparisons</a><a href="#sequential">Sequential</a>' in html
    decisions = pd.read_csv(analysis / "sequential.csv", keep_default_na=False).set_index("arm")
    big, null = decisions.loc["big"], decisions.loc["null"]
    # the planted effect stops early for a difference; the null arm never differs
    assert (big["decision"], big["direction"]) == ("differs", "better") and big["n_seeds"] < DESIGN["max"]
    assert null["decision"] != "differs"
    # Δ at the stop is the mean of the first n seeds' paired differences on the primary summary
    summaries = pd.read_csv(analysis / "summaries.csv").query("summary == 'domain_balanced'")
    per_run = summaries.pivot(index="seed", columns="arm", values="value")
    assert big["mean_diff"] == pytest.approx((per_run["big"] - per_run["ref"]).iloc[: big["n_seeds"]].mean())
    shown = _sequential_section(html)
    assert (
        f"<td>controls</td><td>big</td><td>ref</td><td>{big['look']}</td><td>{big['n_seeds']}</td>"
        f"<td>differs (better)</td><td>{tables.points(big['mean_diff'])}</td>"
        f"<td>[{tables.points(big['rci_low'])}, {tables.points(big['rci_high'])}]</td>"
        f"<td>{big['z']:+.2f}</td><td>±{big['boundary_z']:.2f}</td><td>{big['level']:.3g}</td>"
    ) in shown
    assert f"<td>null</td><td>ref</td><td>{null['look']}</td><td>{null['n_seeds']}</td><td>{null['decision']}</td>" in (
        shown
    )
    assert "<th>95% repeated CI</th>" in shown and 0 < big["rci_low"] <= big["mean_diff"] <= big["rci_high"]
    # the reference runs until its family's last arm stops; the fixed design runs every arm to the maximum
    ref_seeds = max(big["n_seeds"], null["n_seeds"])
    used = big["n_seeds"] + null["n_seeds"] + ref_seeds
    assert f"<p>{used} runs (arm × seed) against 36 for the fixed design of 12 seeds per arm: {36 - used} saved" in (
        shown
    )
    assert f"<td>ref</td><td>{ref_seeds}</td><td>12</td><td>{12 - ref_seeds}</td>" in shown
    # the design, from the config, and what is valid under it
    assert "<dd>5, after 4, 6, 8, 10 and 12 seeds (seeds 1 to 12, in that order)</dd>" in shown
    assert "O&#x27;Brien–Fleming-type spending of α = 0.05" in shown and "within ±3 point(s)" in shown
    assert "comparisons table above are fixed-n: they ignore that seeds were added" in shown
    assert "repeated confidence intervals here are valid under the design" in shown
    assert 'alt="Sequential design"' in shown and html.count('alt="Sequential design"') == 1


def test_no_section_when_the_tables_hold_only_a_header(tmp_path):
    analysis, html = _analyze_and_report(tmp_path, SEEDS)
    assert pd.read_csv(analysis / "sequential.csv").empty and pd.read_csv(analysis / "sequential_looks.csv").empty
    assert _sections(html) == SECTIONS_WITHOUT_DESIGN
    assert "#sequential" not in html and "Sequential design" not in html  # neither the section nor its figure


# ------------------------------------------------------------------------------ the figure


def _planted_tables():
    """``(decisions, looks)`` of family `controls` (`big` far above `ref`, `null` at it) and `solo` (one arm)."""
    rng = np.random.default_rng(0)
    differences = {
        "big": 0.2 + rng.normal(0, 0.02, 12),
        "null": rng.normal(0, 0.02, 12),
        "solo": rng.normal(0, 0.05, 12),
    }
    raw = _config(DESIGN) | {
        "comparisons": [
            {"family": "controls", "reference": "ref", "arms": ["big", "null"]},
            {"family": "other", "reference": "ref", "arms": ["solo"]},
        ]
    }
    values = {("ref", seed): 0.5 for seed in SEEDS}
    values |= {(arm, seed): 0.5 + d for arm, diffs in differences.items() for seed, d in zip(SEEDS, diffs)}
    return waves.final_tables(pd.Series(values), parse_config(raw))


def _drawn(ax):
    """``(paths, bars, stops)`` of a panel: ``{arm: (x, y)}``, ``{colour: (x, y)}`` and ``{colour: line}``."""
    paths, bars, stops = {}, {}, {}
    for line in ax.get_lines():
        x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
        if not line.get_label().startswith("_"):
            paths[line.get_label()] = (x, y)
        elif line.get_marker() == "_":
            bars[to_hex(line.get_color())] = (x, y)
        elif line.get_marker() in ("o", "D"):
            stops[to_hex(line.get_mec())] = line
    return paths, bars, stops


def test_the_figure_draws_each_arms_path_its_finite_boundaries_and_its_stop():
    decisions, looks = _planted_tables()
    assert np.isinf(looks.query("look == 1 and arm == 'big'")["boundary_z"]).all()  # no rejection at 4 seeds
    styles = figures.arm_styles(["ref", "big", "null", "solo"], ["ref"])
    colour = {arm: to_hex(style["color"]) for arm, style in styles.items()}
    fig = figures.sequential_plot(looks, decisions, styles)
    assert [ax.get_title() for ax in fig.axes] == ["controls (vs ref)", "other (vs ref)"]
    paths, bars, stops = _drawn(fig.axes[0])
    assert set(paths) == {"big", "null", "fixed design: 12 seeds"}
    for arm in ("big", "null"):
        mine, stop = looks[looks["arm"] == arm], decisions.set_index("arm").loc[arm]
        np.testing.assert_allclose(paths[arm][0], mine["n_seeds"])
        np.testing.assert_allclose(paths[arm][1], mine["z"])
        finite = mine[np.isfinite(mine["boundary_z"])]
        x, y = bars[colour[arm]]
        assert 4 not in x and np.isfinite(y).all()
        np.testing.assert_allclose(sorted(y), sorted([*finite["boundary_z"], *-finite["boundary_z"]]))
        marker = stops[colour[arm]]
        assert (marker.get_xdata()[0], marker.get_ydata()[0]) == (stop["n_seeds"], pytest.approx(stop["z"]))
    assert stops[colour["big"]].get_marker() == "o" and to_hex(stops[colour["big"]].get_mfc()) == colour["big"]
    assert {t.get_text() for t in fig.axes[0].texts} == set(decisions.query("family == 'controls'")["decision"])
    assert figures.render(fig, ["svg"])["svg"].startswith(b"<?xml")


def test_the_figure_draws_no_boundary_where_every_boundary_is_infinite():
    decisions, looks = _planted_tables()
    looks = looks.assign(boundary_z=np.where(looks["arm"] == "solo", np.inf, looks["boundary_z"]))
    fig = figures.sequential_plot(looks, decisions)
    paths, bars, _ = _drawn(fig.axes[1])
    assert "solo" in paths and all(len(x) == 0 for x, _ in bars.values())
    low, high = fig.axes[1].get_ylim()
    assert np.isfinite([low, high]).all()
    assert figures.render(fig, ["svg"])["svg"].startswith(b"<?xml")


def test_the_section_says_so_when_the_config_has_no_design(sequential):
    analysis = read.read_analysis(sequential[0], "sequential_report")
    shown = sections.sequential_section(sections.Page(parse_config(_config(SEEDS)), analysis))
    assert "The config has no sequential design" in shown and "<dt>Looks</dt>" not in shown
    assert "<td>differs (better)</td>" in shown  # the tables are the analysis's, shown all the same


def test_the_headline_verdicts_are_the_designs_decisions_not_the_fixed_n_tests(sequential):
    """Under a sequential design the headline once took the fixed-n Holm verdicts of comparisons.csv, which
    ignore the stopping; it now states each arm's decision at its stop with its repeated interval."""
    analysis, html = sequential
    headline = re.search(r'<section id="verdicts">(.*?)</section>', html, re.S).group(1)
    decisions = pd.read_csv(analysis / "sequential.csv", keep_default_na=False).set_index("arm")
    big = decisions.loc["big"]
    assert "A sequential seed design decided these" in headline
    assert (
        f"big beats ref by {abs(100 * big['mean_diff']):.2f} points (95% repeated interval "
        f"{tables.points(big['rci_low'])} to {tables.points(big['rci_high'])}; stopped at look {big['look']} "
        f"with {big['n_seeds']} seeds)." in headline
    )
    assert "Holm p =" not in headline  # no fixed-n p-value in the headline


def test_a_config_edited_after_the_analysis_changes_no_setting_the_report_shows(sequential, tmp_path):
    """The report took α and the interval's confidence of the design from the config re-parsed at report time, and
    every other α from the analysis's manifest: a config edited after the analysis gave one page with two α. It now
    reads every setting as the analysis recorded it (manifest.json's settings)."""
    analysis, html = sequential
    edited = _config(DESIGN)
    edited["analysis"] = {**edited["analysis"], "alpha": 0.1, "confidence": 0.9}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(edited))
    shown = _report(tmp_path, analysis)
    assert shown.count("α = 0.05") == html.count("α = 0.05") > 0 and "α = 0.1" not in shown
    assert _sequential_section(shown) == _sequential_section(html)
    assert "95% repeated confidence intervals" in _sequential_section(shown)
    assert "alpha: 0.1" in shown and "confidence: 0.9" in shown  # the page shows the edited config, as it is
