"""The contamination screen (analysis/screens/contamination.py): a planted leak is flagged, an A/A arm is not, its
differences and p-values are an enumeration's, the twins never enter a summary, and docs/statistics.md quotes
benchmarks/contamination_validity.py, whose flags are the screen's."""

from __future__ import annotations

import itertools
import re
import runpy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from armlab.analysis.config import parse_config
from armlab.analysis.pipeline import run_analysis
from armlab.contract import twin_name

REPO = Path(__file__).resolve().parents[3]
BENCHMARKS = {"add": "math", "sort": "logic", "sci": "science"}
ITEMS, SEEDS, LEAKED = 150, tuple(range(1, 9)), 40  # the leak arm solves the first 40 items of each benchmark
VALIDITY = runpy.run_path(str(REPO / "benchmarks" / "contamination_validity.py"))


def config(families: list[dict] | None = None) -> object:
    return parse_config(
        {
            "experiment": "screen",
            "seeds": list(SEEDS),
            "benchmarks": {b: {"domain": d} for b, d in BENCHMARKS.items()},
            "comparisons": families
            or [
                {"family": "leaks", "reference": "grpo", "arms": ["leak"]},
                {"family": "aa", "reference": "grpo", "arms": ["grpo_aa"]},
            ],
            "analysis": {"resamples": 200, "power_replicates": 200},
        }
    )


def scores(seed: int = 55) -> pd.DataFrame:
    """One answer per item; every arm's item probabilities move by a per-run gain, the same on a benchmark's items and
    its twin's; the leak arm also answers its leaked items right."""
    rng = np.random.default_rng(seed)
    p = {b: rng.uniform(0.2, 0.8, ITEMS) for b in [*BENCHMARKS, *map(twin_name, BENCHMARKS)]}
    rows = []
    for s in SEEDS:
        for arm in ("grpo", "leak", "grpo_aa"):
            gain = rng.normal(0.05, 0.03)
            for benchmark, probability in p.items():
                correct = rng.random(ITEMS) < np.clip(probability + gain, 0, 1)
                if arm == "leak" and benchmark in BENCHMARKS:
                    correct[:LEAKED] = True
                domain = BENCHMARKS[benchmark.removesuffix("__twin")]
                rows += [
                    ("screen", arm, s, benchmark, domain, f"{benchmark}-{i}", float(c), 1, float(c))
                    for i, c in enumerate(correct)
                ]
    columns = ["experiment", "arm", "seed", "benchmark", "domain", "item", "score", "n_samples", "n_correct"]
    return pd.DataFrame(rows, columns=columns)


@pytest.fixture(scope="module")
def result():
    return run_analysis(config(), scores())


def test_a_planted_leak_is_flagged_and_an_aa_arm_is_not(result):
    table = result.contamination.set_index(["arm", "benchmark"])
    assert table.loc[("leak", "domain_balanced"), "flagged"]
    assert not table.xs("grpo_aa", level="arm")["flagged"].any()
    leak = table.loc[("leak", "domain_balanced")]
    assert leak.gain > leak.twin_gain and leak.mean_diff == pytest.approx(leak.gain - leak.twin_gain)
    assert (leak.n_items, leak.n_twin_items) == (3 * ITEMS, 3 * ITEMS)


def test_the_twins_never_enter_a_summary_or_a_comparison(result):
    published = scores()
    alone = run_analysis(config(), published[~published["benchmark"].str.endswith("__twin")])
    assert list(result.accuracy.columns) == list(BENCHMARKS)
    pd.testing.assert_frame_equal(result.summaries, alone.summaries)
    pd.testing.assert_frame_equal(result.comparisons, alone.comparisons)
    assert alone.contamination.empty and alone.report_card.set_index("item").loc["contamination", "status"] == "not run"


def test_the_differences_and_p_values_are_an_enumeration_and_holm_is_statsmodels(result):
    frame = scores()
    accuracy = frame.groupby(["arm", "seed", "benchmark"])["score"].mean().unstack()
    m = pd.DataFrame({b: accuracy[b] - accuracy[twin_name(b)] for b in BENCHMARKS})
    m.insert(0, "domain_balanced", m.mean(axis=1))  # three domains of one benchmark: equal weights
    table = result.contamination[result.contamination["family"] == "leaks"].set_index("benchmark")
    d = (m.loc["leak"] - m.loc["grpo"]).to_numpy()  # seeds x measures
    p = []
    for j, measure in enumerate(m.columns):
        total = d[:, j].sum()
        sums = [np.dot(signs, d[:, j]) for signs in itertools.product((-1, 1), repeat=len(SEEDS))]
        p.append(np.mean(np.abs(sums) >= abs(total) - 1e-12))
        assert table.loc[measure, "mean_diff"] == pytest.approx(d[:, j].mean())
        assert table.loc[measure, "p_value"] == pytest.approx(p[-1])
    # the pooled row first (one arm: Holm of one), the benchmarks behind it: Holm over them, at least the gate's p
    holm = multipletests(p[1:], method="holm")[1]
    np.testing.assert_allclose(table.loc[list(BENCHMARKS), "p_holm"], np.maximum(holm, p[0]))


def test_the_card_grades_claims_and_names_planted_controls():
    frame = scores()
    claims = run_analysis(config(), frame).report_card.set_index("item").loc["contamination"]
    assert claims.status == "fail" and "leak (leaks)" in claims.reason and "grpo_aa" not in claims.reason
    controls = [
        {"family": "leaks", "reference": "grpo", "arms": ["leak"], "control": True},
        {"family": "aa", "reference": "grpo", "arms": ["grpo_aa"], "control": True},
    ]
    graded = run_analysis(config(controls), frame).report_card.set_index("item").loc["contamination"]
    assert graded.status == "not applicable"
    assert "leak (leaks) flagged" in graded.reason and "grpo_aa (aa) not flagged" in graded.reason
    clean = [{"family": "aa", "reference": "grpo", "arms": ["grpo_aa"]}]
    assert run_analysis(config(clean), frame).report_card.set_index("item").loc["contamination", "status"] == "pass"


def test_the_simulations_flags_are_the_screens():
    """benchmarks/contamination_validity.py's procedure on its own differences gives the screen's flags: per
    replicate, a tidy table with the same d_s run through run_analysis."""
    rng = np.random.default_rng(3)
    benchmarks = VALIDITY["BENCHMARKS"]
    d = VALIDITY["differences"](rng, 6, 0.4, 1)[:, :8]
    expected = VALIDITY["flagged"](d)
    names = {f"b{i}": f"d{i % 3}" for i in range(benchmarks)}  # three domains of equal size: pooled is their mean
    cfg = parse_config(
        {
            "experiment": "sim",
            "seeds": list(range(8)),
            "benchmarks": {b: {"domain": dom} for b, dom in names.items()},
            "comparisons": [{"family": "f", "reference": "ref", "arms": ["arm"]}],
            "analysis": {"resamples": 200, "power_replicates": 200, "per_benchmark": False},
        }
    )
    for replicate, flag in enumerate(expected):
        rows = [
            ("sim", arm, s, name, names[b], "i", 0.5 - (d[replicate, s, 1 + i] if arm == "arm" and twin else 0.0))
            for s in range(8)
            for arm in ("arm", "ref")
            for i, b in enumerate(names)
            for twin, name in ((False, b), (True, twin_name(b)))
        ]
        # the arm's twin accuracy is 0.5 - d, every other 0.5: m(arm) - m(ref) = d
        frame = pd.DataFrame(rows, columns=["experiment", "arm", "seed", "benchmark", "domain", "item", "score"])
        table = run_analysis(cfg, frame).contamination
        assert bool(table["flagged"].any()) == bool(flag), replicate


@pytest.mark.simulation
def test_the_docs_table_is_the_simulations_and_the_aa_arm_holds_the_level():
    quoted = VALIDITY["docs_table"](VALIDITY["DOCS"].read_text())
    replicates, seed = (int(x) for x in re.search(r"--replicates (\d+) --seed (\d+)", quoted).groups())
    aa = VALIDITY["rates"](replicates, seed, 0.0, 1)
    quoted_aa = {int(n): float(rate) for n, rate in re.findall(r"^\| 1 \| (\d+) \| ([0-9.]+) \|", quoted, re.M)}
    assert quoted_aa == {n: round(rate, 3) for n, rate in aa.items()}
    slack = 3 * np.sqrt(0.05 * 0.95 / replicates)
    assert all(rate <= 0.05 + slack for rate in aa.values())
    for line in quoted.splitlines():
        if line.startswith("| 1 |") or line.startswith("| 4 |"):
            rates = [float(x) for x in line.strip("| ").split(" | ")[2:]]
            assert rates[0] <= 0.05 + slack  # A/A at either number of answers
            assert rates[1:] == sorted(rates[1:])  # a stronger leak is found at least as often


def test_the_table_is_written_and_the_report_names_every_flagged_row(result, tmp_path):
    """contamination.csv round-trips (``flagged`` a boolean column), and the report's section names the leak's flagged
    rows and shows the pooled rows; an analysis without twins has no such section."""
    from armlab.analysis.pipeline import write_outputs
    from armlab.analysis.reporting import read, sections

    write_outputs(result, tmp_path / "analysis")
    analysis = read.read_analysis(tmp_path / "analysis", "screen")
    assert analysis.contamination["flagged"].dtype == bool
    pd.testing.assert_series_equal(analysis.contamination["flagged"], result.contamination["flagged"])
    html = sections.SECTIONS["contamination"].render(sections.Page(config(), analysis))
    assert html.startswith('<section id="contamination"><h2>Contamination screen</h2>')
    flagged = result.contamination[result.contamination["flagged"]]
    assert len(flagged) and set(flagged["arm"]) == {"leak"}
    assert f"<h3>Flagged ({len(flagged)})</h3>" in html and "leaks: leak vs grpo on domain_balanced: gain" in html
    assert html.count("<tr>") == 1 + 2  # the header and the pooled row of each family
    published = scores()
    alone = run_analysis(config(), published[~published["benchmark"].str.endswith("__twin")])
    assert sections.SECTIONS["contamination"].render(sections.Page(config(), alone)) == ""


def test_the_docs_block_is_written_from_the_table_and_an_edited_figure_fails_the_check(tmp_path):
    """ci/quoted_results.py's contamination block (docs/benchmarks.md) is the run's table: every pooled row, what the
    planted leak (its run manifests' ``leak``) did to its leaked items, the flagged lines; a figure edited by hand
    fails the check."""
    import json
    import subprocess
    import sys

    from armlab.analysis.pipeline import write_outputs
    from armlab.analysis.screens.report_card import Jobs

    frame, results = scores(), tmp_path / "contamination"
    items = [f"{b}-{i}" for b in BENCHMARKS for i in range(LEAKED)]
    leak = {"share": LEAKED / ITEMS, "copies": 1, "items": items}
    for s in SEEDS:
        (results / "runs" / "leak" / f"seed-{s}").mkdir(parents=True)
        (results / "runs" / "leak" / f"seed-{s}" / "manifest.json").write_text(json.dumps({"leak": leak}))
    frame.to_parquet(results / "scores.parquet")
    jobs = Jobs(str(results), runs={("leak", s): {"leak": leak} for s in SEEDS})
    analysed = run_analysis(config(), frame, jobs=jobs)
    write_outputs(analysed, results / "analysis")
    page = tmp_path / "page.md"
    page.write_text("<!-- quoted:contamination results/contamination -->\n<!-- /quoted:contamination -->\n")
    script = [sys.executable, str(REPO / "ci" / "quoted_results.py")]
    where = ["contamination", "--results", str(results), "--document", str(page)]
    written = subprocess.run([*script, "write", *where], capture_output=True, text=True, cwd=REPO)
    assert written.returncode == 0, written.stderr
    block = page.read_text()
    row = analysed.contamination.set_index(["arm", "benchmark"]).loc[("leak", "domain_balanced")]
    n_flagged = int(analysed.contamination["flagged"].sum())
    share = f"{100 * LEAKED / ITEMS:g}% of each benchmark's items"
    assert f"| leaks | leak vs grpo | {share} | {100 * row.gain:+.2f} | {100 * row.twin_gain:+.2f} |" in block
    assert "| aa | grpo_aa vs grpo | — |" in block and f"Flagged rows ({n_flagged}):" in block
    on_leaked = frame[frame["item"].isin(items)].groupby("arm")["score"].mean()
    assert f"leak: on its {len(items)} leaked items 100.0% right, grpo {100 * on_leaked['grpo']:.1f}%" in block
    assert subprocess.run([*script, "check", *where], capture_output=True, cwd=REPO).returncode == 0
    page.write_text(block.replace(f"{100 * row.gain:+.2f}", f"{100 * row.gain + 1:+.2f}", 1))
    assert subprocess.run([*script, "check", *where], capture_output=True, cwd=REPO).returncode == 1
