"""`armlab report`: one self-contained HTML file from an analysis, for our results and converted ones.

Fixtures are synthetic (tests/fixtures/report/build.py): a demo-like experiment with step logs and
run manifests, DataFlex-RL's table layout, lm-eval output, and names that are HTML.
"""

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import fork_server
import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, REPORT_FIXTURE, report_build

from armlab import cli
from armlab.analysis import outputs, tables
from armlab.analysis.config import Settings, load_config
from armlab.analysis.design.synthetic import synthetic_scores
from armlab.analysis.reporting import html as report_html
from armlab.analysis.reporting import read, report, sections
from armlab.files import OUTPUT_MARKER, write_manifest
from armlab.registry import Registry

FIXTURE = REPORT_FIXTURE
BUILD = report_build()
DATAFLEX_CONFIG = REPO / "config" / "experiments" / "dataflex_rl_released.yaml"
SECTIONS = [
    "card",
    "run",
    "verdicts",
    "comparisons",
    "benchmarks",
    "distributions",
    "training",
    "rankings",
    "sampling",
    "power",
]


def _analyze_and_report(config, out, *analyze_args, **paths):
    return BUILD["analyze_and_report"](config, out, *analyze_args, **paths).read_text()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    results = BUILD["write_experiment"](tmp_path_factory.mktemp("demo"))
    html = _analyze_and_report(
        FIXTURE / "experiment.yaml",
        results,
        "--scores",
        str(results / "scores.parquet"),
        runs=results / "runs",
        figures=results / "figures",
    )
    return results, html


def _images(html):
    return re.findall(r'<img src="([^"]*)"', html)


def test_the_report_is_one_self_contained_file(demo):
    _, html = demo
    assert "<script" not in html.lower() and "@import" not in html
    images = _images(html)
    assert len(images) == 8  # two forest plots, heatmap, two performance profiles, training curves, rankings, power
    for src in images:
        assert src.startswith("data:image/svg+xml;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"<?xml")
    links = re.findall(r'(?:href|src)="([^"]*)"', html)
    assert all(link.startswith(("#", "data:")) for link in links)
    assert "url(" not in html


def test_the_report_has_every_section_and_says_what_the_seeds_allow(demo):
    _, html = demo
    assert re.findall(r'<section id="([^"]+)"', html) == SECTIONS
    assert "No arm beats grpo on domain_balanced at this precision (3 seeds, Holm at α = 0.05)." in html
    # what the seeds allow, as a warning in each family's card
    assert (
        '<p class="warning">With 3 seeds no effect of any size is detectable: the smallest Holm-adjusted p '
        "this family can reach is 0.5 &gt; α = 0.05. Detecting 2 point(s) with power 0.8 needs"
    ) in html
    assert html.count('<p class="warning">With 3 seeds no effect of any size is detectable') == 2
    # what was run: runs, commit, the recipe each arm changes, run times
    assert "12 runs with step logs" in html and "commit " + "0" * 40 in html
    assert "<th>estimator.name</th>" in html and "<td>dr_grpo</td>" in html
    assert "<th>ms_per_step</th>" in html
    # score distributions: per family a performance profile and the paired probability of improvement
    assert html.count('alt="estimators: performance profiles"') == 1 and "<th>P(arm &gt; reference)</th>" in html
    assert "<td>dr_grpo</td><td>grpo</td><td>3 × 6</td>" in html


def test_a_new_section_is_one_function_and_one_entry(demo, monkeypatch):
    """A section added to the registry is shown, in its place, with its link; one that returns "" is neither."""
    results, _ = demo
    cfg = load_config(FIXTURE / "experiment.yaml")
    rendered = {p.stem: (p.stem, "", {"svg": p.read_bytes()}) for p in (results / "figures").glob("*.svg")}

    def arms(page):
        shown = "".join(f"<p>{report_html.esc(a)}</p>" for a in page.cfg.compared_arms)
        return report_html.section("arms", "Arms", shown)

    entries = list(sections.SECTIONS.items())
    added = [*entries[:2], ("arms", sections.Section("Arms", arms)), *entries[2:]]
    added.append(("nothing", sections.Section("Nothing", lambda page: "")))
    monkeypatch.setattr(sections, "SECTIONS", Registry("report section", dict(added)))
    page = report.render_html(cfg, read.read_analysis(results / "analysis", cfg.experiment), None, rendered, "")
    assert re.findall(r'<section id="([^"]+)"', page) == [*SECTIONS[:2], "arms", *SECTIONS[2:]]
    assert '<a href="#arms">Arms</a>' in page and "<p>difffilter</p>" in page
    assert 'href="#nothing"' not in page


def test_every_figure_is_written_as_svg_and_png(demo):
    results, _ = demo
    names = ["benchmarks", "forest-1", "forest-2", "power", "profile-1", "profile-2", "rankings", "training"]
    expected = sorted(f"{n}.{ext}" for n in names for ext in ("png", "svg"))
    assert sorted(p.name for p in (results / "figures").iterdir()) == sorted([*expected, OUTPUT_MARKER])
    assert json.loads((results / "figures" / OUTPUT_MARKER).read_text()) == {
        "command": "report --figures",
        "entries": expected,
    }


def _converted(kind, root):
    """A config and `armlab analyze` arguments for results converted from elsewhere."""
    if kind == "wide_csv":
        return DATAFLEX_CONFIG, ["--set", f"input.path={BUILD['write_wide_csv'](root / 'wide.csv')}"]
    return BUILD["write_lmeval"](root), []


@pytest.mark.parametrize("kind", ["wide_csv", "lmeval"])
def test_converted_results_get_the_same_report_without_training_logs(kind, tmp_path):
    config, args = _converted(kind, tmp_path)
    html = _analyze_and_report(config, tmp_path, *args)
    assert re.findall(r'<section id="([^"]+)"', html) == SECTIONS
    assert "No training logs: these results were converted from elsewhere" in html
    assert len(_images(html)) == 7  # no training curves
    reference = "baseline" if kind == "wide_csv" else "grpo"
    assert f"No arm beats {reference} on domain_balanced at this precision" in html


def test_every_string_from_configs_and_results_is_escaped(tmp_path):
    config = BUILD["write_hostile"](tmp_path)
    html = _analyze_and_report(config, tmp_path, "--scores", str(tmp_path / "scores.parquet"))
    for raw in ("<script>alert(1)</script>", "<em>family</em>", "<b>bold</b>", "<i>logic</i>", "m&th"):
        assert raw not in html
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;em&gt;family&lt;/em&gt;" in html
    assert "<td>NA</td>" in html  # an arm named NA is a name, not a missing value


def _constant_domain(root):
    """A config with a statistic and a subset on which every arm scores the same, and its scores; the config."""
    benchmarks = {"a": "math", "b": "math", "c": "logic"}
    config = {
        "experiment": "flat_logic",
        "benchmarks": {k: {"domain": v} for k, v in benchmarks.items()},
        "comparisons": [{"family": "f", "reference": "ref", "arms": ["x", "y"]}],
        "analysis": {"resamples": 500, "subsets": {"logic": ["c"]}, "statistics": ["optimality_gap"]},
    }
    scores = synthetic_scores(
        arms=["ref", "x", "y"],
        seeds=[1, 2, 3],
        benchmarks=benchmarks,
        items=None,
        rng=np.random.default_rng(1),
        experiment="flat_logic",
    )
    scores.loc[scores["benchmark"] == "c", "score"] = 0.5
    scores.to_parquet(root / "scores.parquet", index=False)
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    return root / "config.yaml"


@pytest.fixture(scope="module")
def constant_domain(tmp_path_factory):
    """The constant-domain experiment analysed and reported once: (config, its folder, the report's HTML)."""
    root = tmp_path_factory.mktemp("constant_domain")
    config = _constant_domain(root)
    return config, root, _analyze_and_report(config, root, "--scores", str(root / "scores.parquet"))


def _analysis_copy(constant_domain, tmp_path):
    """A copy of the constant-domain experiment's analysis folder that a test may change; the config and copy."""
    config, root, _ = constant_domain
    return config, Path(shutil.copytree(root / "analysis", tmp_path / "analysis"))


def test_undefined_rank_correlations_show_a_dash_and_lower_is_better_is_said(constant_domain):
    html = constant_domain[2]
    assert "<td>nan</td>" not in html and "<td>—</td><td>—</td><td>all arms have the same mean under logic" in html
    assert "<td>optimality_gap (lower is better)</td>" in html
    assert re.findall(r'<section id="([^"]+)"', html) == SECTIONS and len(_images(html)) == 5  # no training logs


def _rewrite_manifest(analysis, **changes):
    """The analysis's manifest with ``changes`` (a value None: the key removed), its checksums still true."""
    manifest = json.loads((analysis / "manifest.json").read_text())
    recorded = [name for name in manifest.pop("files") if (analysis / name).exists()]
    manifest = {k: v for k, v in {**manifest, **changes}.items() if v is not None}
    (analysis / "manifest.json").unlink()
    write_manifest(analysis, manifest, *recorded)


@pytest.mark.parametrize("found", [None, 1, outputs.FORMAT + 1])
def test_an_analysis_of_another_format_is_refused_with_one_line(constant_domain, tmp_path, capsys, found):
    """The report never guesses what an older (or newer) layout meant; e.g. the first layouts had no format, named
    the measure column ``summary`` and lacked the score distributions."""
    config, analysis = _analysis_copy(constant_domain, tmp_path)
    assert json.loads((analysis / "manifest.json").read_text())["format"] == outputs.FORMAT
    old = pd.read_csv(analysis / "comparisons.csv", keep_default_na=False).rename(columns={"measure": "summary"})
    old.to_csv(analysis / "comparisons.csv", index=False)
    _rewrite_manifest(analysis, format=found)
    out = tmp_path / "old"
    assert cli.main(["report", str(config), "--analysis", str(analysis), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"armlab report: error: {analysis}/manifest.json: an analysis of format {found or 1}, written by another "
        f"version of armlab; this one reads format {outputs.FORMAT}: rerun `armlab analyze` into {analysis}"
    )
    assert not out.exists()
    assert cli.main(["summary", str(analysis)]) == 2  # the verdicts are not reprinted from it either
    assert capsys.readouterr().err.strip() == err.replace("armlab report:", "armlab summary:")


def test_the_analysis_writes_every_table_of_the_catalogue_and_the_report_needs_each(constant_domain, tmp_path, capsys):
    config, analysis = _analysis_copy(constant_domain, tmp_path)
    written = sorted(p.name for p in analysis.glob("*.csv"))
    assert written == sorted(f"{name}.csv" for name in outputs.TABLES)
    (analysis / "variance_components.csv").unlink()
    _rewrite_manifest(analysis)
    assert cli.main(["report", str(config), "--analysis", str(analysis), "--out", str(tmp_path / "r2")]) == 2
    assert "variance_components.csv: not recorded in" in capsys.readouterr().err


def test_report_errors_name_the_file(tmp_path, capsys):
    assert (
        cli.main(
            ["report", str(FIXTURE / "experiment.yaml"), "--analysis", str(tmp_path), "--out", str(tmp_path / "report")]
        )
        == 2
    )
    assert f"{tmp_path}/manifest.json: not found" in capsys.readouterr().err
    (tmp_path / "manifest.json").write_text(json.dumps({"experiment": "other"}))
    assert (
        cli.main(
            ["report", str(FIXTURE / "experiment.yaml"), "--analysis", str(tmp_path), "--out", str(tmp_path / "report")]
        )
        == 2
    )
    assert "experiment 'other' is not the config's 'demo_synthetic'" in capsys.readouterr().err
    assert not (tmp_path / "report").exists()


# ------------------------------------------------------------------------------ words and tables


def _comparisons(**columns):
    """A comparisons table (one family, summary level, one interval method) with sensible defaults."""
    n = len(columns["arm"])
    base = {
        "family": "policies",
        "measure": "domain_balanced",
        "reference": "ref",
        "n_seeds": 8,
        "ci_method": "percentile",
        "level": "summary",
        "ci_level": 0.95,
        "equivalence_margin": 0.01,
        "min_attainable_p": 0.0234,
        "note": "",
        "reject": False,
        "equivalent": False,
        "mde": 0.01,
        "seeds_needed": 10.0,
        "p_value": 0.5,
        "p_holm": 0.5,
        "sd_diff": 0.01,
        # the columns every analysis writes, at their plain values: paired, higher is better, decided by the sign-flip
        "pairing": "paired",
        "higher_is_better": True,
        "equivalence_method": "sign_flip",
        "equivalence_attainable": True,
        "mde_low": 0.01,
        "mde_high": 0.01,
        "seeds_needed_low": 10.0,
        "seeds_needed_high": 10.0,
    }
    frame = pd.DataFrame({key: [value] * n for key, value in base.items()})
    for key, values in columns.items():
        frame[key] = values
    # the interval beside the verdict: here the shown one, at Holm's level of a family that rejects all but one;
    # the TOST's at the level of a family that passes all but one
    return frame.assign(
        stage="primary",
        decision_level=columns.get("decision_level", 0.95),
        decision_low=columns.get("decision_low", frame.get("ci_low", np.nan)),
        decision_high=columns.get("decision_high", frame.get("ci_high", np.nan)),
        eq_decision_level=columns.get("eq_decision_level", 0.9),
        eq_decision_low=columns.get("eq_decision_low", frame.get("ci_low", np.nan)),
        eq_decision_high=columns.get("eq_decision_high", frame.get("ci_high", np.nan)),
        p_equivalence_holm=columns.get("p_equivalence_holm", 0.5),
    )


SETTINGS = Settings(
    alpha=0.05,
    confidence=0.95,
    resamples=1000,
    ci_methods=("percentile",),
    item_bootstrap=False,
    equivalence_margin=0.01,
    power=0.8,
    power_effect=0.02,
    bootstrap_seed=0,
    exact_max_seeds=20,
    sign_flip_resamples=1000,
    per_benchmark=True,
    subsets={},
    rankings=None,
    drop_incomplete=False,
    equivalence_test="sign_flip",
    crossed_methods=("components",),
    power_replicates=4000,
    statistics={},
    pass_k=(),
    pairing="paired",
    common_seeds_only=False,
)


def test_headline_names_winners_losers_and_equivalent_arms_and_the_precision():
    rows = sections.primary_rows(
        _comparisons(
            arm=["up", "down", "same"],
            mean_diff=[0.03, -0.02, 0.001],
            ci_low=[0.02, -0.03, -0.002],
            ci_high=[0.04, -0.01, 0.004],
            p_holm=[0.0078, 0.0156, 1.0],
            reject=[True, True, False],
            equivalent=[False, False, True],
            mde=[0.01, 0.015, 0.02],
            seeds_needed=[6.0, 9.0, 12.0],
            mde_low=[0.008, 0.012, 0.015],
            mde_high=[0.02, 0.03, 0.04],
            seeds_needed_low=[4.0, 6.0, 8.0],
            seeds_needed_high=[12.0, 18.0, 24.0],
            eq_decision_low=[0.015, -0.035, -0.0015],
            eq_decision_high=[0.045, -0.005, 0.0035],
            p_equivalence_holm=[1.0, 1.0, 0.0039],
        )
    )
    assert list(rows["verdict"]) == ["better", "worse", "equivalent"]
    assert sections.family_headline(rows, SETTINGS) == [
        "up beats ref by 3.00 points (95% interval at Holm's level: [+2.00, +4.00]; Holm p = 0.0078).",
        "down is worse than ref by 2.00 points (95% interval at Holm's level: [-3.00, -1.00]; Holm p = 0.0156).",
        # the TOST's own interval, inside the margin (issue 54: not the difference's, which may leave it)
        "same is equivalent to ref within ±1 point (90% TOST interval at Holm's level: [-0.15, +0.35]; TOST Holm "
        "p = 0.0039).",
        "Largest observed difference: up, +3.00 points (95% interval at Holm's level: [+2.00, +4.00]).",
    ]
    assert sections.precision_sentence(rows, SETTINGS) == (
        "The smallest effect detectable with 8 seeds (power 0.8, level α/3) is 1.00–2.00 points at the observed "
        "spread. Detecting 2 point(s) with power 0.8 needs 6–12 matched seeds at the observed spread. Power is the "
        "exact sign-flip test's, for normal differences; over the 95% range of the spread with 8 seeds: detectable "
        "effect 0.80–4.00 points and seeds needed 4–24."
    )


def test_verdicts_follow_holm_then_equivalence():
    frame = pd.DataFrame(
        {
            "reject": [True, True, False, False, True],
            "mean_diff": [1, -1, 0, 0, 1],
            "equivalent": [False, False, True, False, True],
            "higher_is_better": True,
            "decision_level": 0.95,
            "eq_decision_level": [0.9, 0.9, 0.9, np.nan, 0.9],
        }
    )
    assert list(tables.verdicts(frame)) == ["better", "worse", "equivalent", "inconclusive", "better"]
    # a secondary cell behind two closed gates was not tested at all
    closed = frame.assign(reject=False, equivalent=False, decision_level=np.nan, eq_decision_level=np.nan)
    assert set(tables.verdicts(closed)) == {tables.NOT_TESTED}


def test_where_lower_is_better_a_significant_drop_is_better_and_the_lowest_delta_is_bold():
    frame = pd.DataFrame(
        {
            "reject": [True, True, False],
            "mean_diff": [-1, 1, -1],
            "equivalent": [False] * 3,
            "higher_is_better": [False] * 3,
            "decision_level": 0.95,
            "eq_decision_level": 0.9,
        }
    )
    assert list(tables.verdicts(frame)) == ["better", "worse", "inconclusive"]
    table = _comparisons(
        arm=["a", "b"],
        measure=["optimality_gap"] * 2,
        mean_diff=[-0.012, 0.004],
        ci_low=[-0.02, -0.01],
        ci_high=[-0.004, 0.01],
        higher_is_better=[False, False],
    )
    lines = tables.latex_table(table).splitlines()
    assert r"\multicolumn{6}{l}{\textit{optimality\_gap (lower is better)}} \\" in lines
    assert r"a & $\mathbf{-1.20}$ & $[-2.00, -0.40]$ & $0.5$ & $0.5$ & inconclusive \\" in lines
    assert tables.comparison_display(table)["measure"].tolist() == ["optimality_gap (lower is better)"] * 2


def test_latex_table_has_arms_as_rows_and_the_best_values_in_bold():
    table = _comparisons(
        arm=["a_1", "b<2>", "c"],
        mean_diff=[0.012, -0.004, 0.012],
        ci_low=[0.0, -0.01, 0.001],
        ci_high=[0.02, 0.0, 0.02],
        p_value=[0.25, 0.5, 0.125],
        p_holm=[0.5, 0.5, 0.375],
        note=["", "", "BCa undefined"],
        reject=[False] * 3,
        equivalent=[False, True, False],
        eq_decision_low=[-0.01, -0.008, -0.01],
        eq_decision_high=[0.03, 0.002, 0.03],
    )
    tex = tables.latex_table(table)
    lines = tex.splitlines()
    assert lines[:2] == [r"\begin{table}[t]", r"\centering"] and lines[-3:] == [
        r"\bottomrule",
        r"\end{tabular}",
        r"\end{table}",
    ]
    assert r"\label{tab:policies-summary}" in tex and r"\toprule" in tex and r"\midrule" in tex
    assert r"Arm & $\Delta$ (pts) & Interval & $p$ & $p_\mathrm{Holm}$ & Verdict \\" in lines
    assert r"(95\% (primary))" in tex  # the level at which the intervals agree with Holm's decisions
    assert r"\multicolumn{6}{l}{\textit{domain\_balanced}} \\" in lines
    rows = [line for line in lines if line.startswith(("a", "b", "c")) and "&" in line]
    assert rows == [
        r"a\_1 & $\mathbf{+1.20}$ & $[+0.00, +2.00]$ & $0.25$ & $0.5$ & inconclusive \\",
        # beside "equivalent", the TOST's interval inside ±1 (the difference's [-1.00, +0.00] reaches the margin)
        r"b\textless{}2\textgreater{} & $-0.40$ & $[-0.80, +0.20]$\textsuperscript{TOST} & $0.5$ & $0.5$ & "
        r"equivalent \\",
        r"c & $\mathbf{+1.20}$ & $[+0.10, +2.00]$ & $\mathbf{0.125}$ & $\mathbf{0.375}$ & inconclusive \\",
    ]
    assert "Smallest attainable Holm p: 0.0234" in tex


# ------------------------------------------------------------------------------ Snakemake


SNAKEFILE = """
from armlab.experiment.validate import validate_config

configfile: "{config}"
config.update(validate_config(config, source="{config}"))

include: "{repo}/workflows/rules/common.smk"
include: "{repo}/workflows/rules/report.smk"

rule all:
    input: rules.report.output
"""


@pytest.mark.workflow
def test_the_snakemake_rule_writes_the_report_and_snakemake_report_shows_it(tmp_path, snakemake_bin):
    results = BUILD["write_experiment"](tmp_path)
    config = FIXTURE / "experiment.yaml"
    (results / "config").mkdir()
    (results / "config" / "analysis.json").write_text(json.dumps(yaml.safe_load(config.read_text())))
    assert (
        cli.main(
            [
                "analyze",
                str(results / "config" / "analysis.json"),
                "--scores",
                str(results / "scores.parquet"),
                "--out",
                str(results / "analysis"),
            ]
        )
        == 0
    )
    (tmp_path / "Snakefile").write_text(SNAKEFILE.format(config=config, repo=REPO))

    def snakemake(*args):
        command, env = fork_server.warm([snakemake_bin, "--cores", "1", *args])
        proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    snakemake()
    assert "12 runs with step logs" in (results / "report" / "index.html").read_text()
    assert (results / "figures" / "training.svg").exists()
    snakemake("--report", "snakemake_report.html")
    text = (tmp_path / "snakemake_report.html").read_text()
    assert "index.html" in text and "forest-1.svg" in text and "self-contained HTML file" in text


def test_two_seeds_give_seeds_needed_as_a_lower_end_not_a_range_of_noise():
    # issue 26: "seeds needed 7–6726" on a 2-seed table; the sd's interval with 1 df spans a factor of ~70
    rows = sections.primary_rows(
        _comparisons(
            arm=["a", "b"],
            mean_diff=[-0.064, 0.01],
            n_seeds=[2, 2],
            mde=[0.02, 0.03],
            mde_low=[0.009, 0.01],
            mde_high=[0.65, 0.7],
            seeds_needed=[20.0, 30.0],
            seeds_needed_low=[7.0, 9.0],
            seeds_needed_high=[6726.0, 5000.0],
            min_attainable_p=[1.0, 1.0],
        )
    )
    text = sections.precision_sentence(rows, SETTINGS)
    assert (
        "detectable effect at least 0.90 points (2 seeds cannot estimate the spread well enough for an upper end)"
        in text
    )
    assert "seeds needed at least 7 (2 seeds cannot estimate the spread well enough for an upper end)" in text
    assert "6726" not in text
    # with enough seeds the range is informative and stays a range
    rows = rows.assign(n_seeds=12, seeds_needed_high=[14.0, 15.0], mde_high=[0.03, 0.04])
    assert "seeds needed 7–15." in sections.precision_sentence(rows, SETTINGS)


def test_the_report_names_every_component_estimated_below_zero():
    # unbiased components are not truncated (issue 26): a negative one is named and counts as 0 in the shares
    row = {
        "family": "f", "arm": "a", "reference": "ref", "measure": "domain_balanced", "n_seeds": 4, "n_items": 90,
        "samples": 8, "mean_diff": 0.01, "var_training": -2e-5, "var_items": 3e-5, "var_sampling": 1e-4,
        "var_total": 1.3e-4, "share_training": 0.0, "share_items": 3 / 13, "share_sampling": 10 / 13,
        "se": 1.3e-4**0.5, "training_negative": True, "items_negative": False, "sampling_method": "paired by sample",
        "sampling_streams": "",
    }  # fmt: skip
    empty = pd.DataFrame()
    analysis = read.Analysis(
        manifest={}, settings=SETTINGS, comparisons=empty, summaries=empty, weights=empty, rankings=empty,
        sensitivity=empty, dropped=empty, probability_of_improvement=empty, performance_profiles=empty,
        pass_at_k_vs_base=empty, allocation=empty, sequential=empty, sequential_looks=empty, replications=empty,
        per_benchmark=empty,
        unparsed=empty,
        contamination=empty,
        report_card=empty,
        variance_components=pd.DataFrame([row, {**row, "arm": "b", "training_negative": False}]),
    )  # fmt: skip
    html = sections.sampling_section(sections.Page(None, analysis))  # the section reads the analysis only
    assert "counted as 0 in the shares and the standard error: a vs ref (training)." in html
    assert "b vs ref" not in html.split("Estimated below 0")[1]


def test_runs_made_elsewhere_are_listed_with_each_checkpoints_path_and_sha256(tmp_path):
    """The report reads the records of runs made elsewhere (backend checkpoints) from the run folders and names
    every checkpoint evaluated, its folder and sha256; a trained run's folder adds none, and without records there
    is no such section."""
    records = {("base", 0): [None], ("grpo", 1): [10, 20]}
    for (arm, seed), steps in records.items():
        folder = tmp_path / arm / f"seed-{seed}"
        folder.mkdir(parents=True)
        (folder / "checkpoints.json").write_text("{}")
        models = [
            {"step": step, "path": f"/ckpts/{arm}/{step}", "sha256": f"{i}" * 64, "bytes": 1000 * (i + 1)}
            for i, step in enumerate(steps)
        ]
        record = {"checkpoints": models, "description": None if arm == "base" else "GRPO on verl"}
        record |= {"recipe": {"estimator": {"name": "grpo"}, "lr": 1e-6}} if arm == "grpo" else {}
        write_manifest(folder, record, "checkpoints.json")
    trained = tmp_path / "dr_grpo" / "seed-1"
    trained.mkdir(parents=True)
    (trained / "policy.pt").write_bytes(b"weights")
    write_manifest(trained, {"recipe": {}}, "policy.pt")
    found = read.read_checkpoints(tmp_path)
    found_runs = list(zip(found.arm, found.seed, found.step.fillna(-1)))
    assert found_runs == [("base", 0, -1), ("grpo", 1, 10), ("grpo", 1, 20)]
    html = sections.checkpoints_section(sections.Page(None, None, checkpoints=found))  # type: ignore[arg-type]
    for path, sha256 in zip(found.path, found.sha256):
        assert f"<td>{path}</td><td>{sha256}</td>" in html
    assert "<td>base</td><td>0</td><td>—</td>" in html and "<td>2,000</td>" in html
    assert "<td>grpo</td><td>GRPO on verl</td><td>estimator.name: grpo, lr: 1e-06</td>" in html
    assert "<td>base</td><td>—</td>" not in html  # an arm that says nothing of itself has no row
    assert read.read_checkpoints(tmp_path / "dr_grpo") is None
    assert sections.checkpoints_section(sections.Page(None, None)) == ""  # type: ignore[arg-type]
