"""ci/quoted_results.py: the README's demo block is written from a run's files and checked against them, so a figure
typed by hand, or left behind by a change, fails the check (CI runs it after `make demo`)."""

import subprocess
import sys

import pytest
from conftest import REPO

SCRIPT = REPO / "ci" / "quoted_results.py"
EMPTY = "# a page\n\n<!-- quoted:demo results/demo -->\n<!-- /quoted:demo -->\n\nafter the block\n"


def quoted(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, cwd=REPO)


def test_the_readme_and_results_page_hold_their_blocks():
    for document, name in (
        ("README.md", "demo"),
        ("docs/results.md", "numerics"),
        ("docs/benchmarks.md", "contamination"),
    ):
        text = (REPO / document).read_text()
        assert text.count(f"<!-- quoted:{name} ") == 1 and text.count(f"<!-- /quoted:{name} -->") == 1, document


@pytest.mark.workflow
def test_the_demo_block_is_written_from_the_run_and_an_edited_figure_fails_the_check(tiny_run, tmp_path):
    workdir, _ = tiny_run
    results, page = workdir / "results" / "tiny", tmp_path / "page.md"
    page.write_text(EMPTY)
    written = quoted("write", "demo", "--results", results, "--document", page)
    assert written.returncode == 0, written.stderr
    block = page.read_text()
    assert (
        block.startswith("# a page\n\n<!-- quoted:demo results/demo -->\nAccuracy (%)") and "after the block" in block
    )
    for expected in (
        "| base |",
        "difffilter vs grpo on domain_balanced:",
        "Seed by seed",
        "portable: x86-64 with AVX2",
    ):
        assert expected in block
    assert quoted("check", "demo", "--results", results, "--document", page).returncode == 0

    # a figure edited by hand, or the run changed under the text: the check fails, naming the line
    line = next(x for x in block.splitlines() if "difffilter vs grpo" in x)
    page.write_text(block.replace(line, line.replace("Δ ", "Δ 1")))
    edited = quoted("check", "demo", "--results", results, "--document", page)
    assert edited.returncode == 1
    assert "quoted:demo differs from" in edited.stderr and "`make quoted` rewrites it" in edited.stderr


def test_a_missing_run_is_one_line_naming_the_command_that_makes_it(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(EMPTY)
    missing = quoted("check", "demo", "--results", tmp_path / "nowhere", "--document", page)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"quoted:demo: {tmp_path / 'nowhere' / 'analysis' / 'comparisons.csv'} not found: run `make demo`"
    ]


VARIANTS = """variant,commit,numerics,environment,seconds,scores_sha256,family,arm,verdict,delta_points
portable-avx512,abc1234,portable,ATEN_CPU_CAPABILITY=avx512,300.0,aaaa,f,dr_grpo,"equivalent, Δ +0.09 points",0.09
portable-avx512,abc1234,portable,ATEN_CPU_CAPABILITY=avx512,300.0,aaaa,f,difffilter,"inconclusive, Δ -0.65 points",-0.65
portable-avx2,abc1234,portable,ATEN_CPU_CAPABILITY=avx2,310.0,aaaa,f,dr_grpo,"equivalent, Δ +0.09 points",0.09
portable-avx2,abc1234,portable,ATEN_CPU_CAPABILITY=avx2,310.0,aaaa,f,difffilter,"inconclusive, Δ -0.65 points",-0.65
native-avx2,abc1234,native,ATEN_CPU_CAPABILITY=avx2,290.0,bbbb,f,dr_grpo,"equivalent, Δ +0.17 points",0.17
native-avx2,abc1234,native,ATEN_CPU_CAPABILITY=avx2,290.0,bbbb,f,difffilter,"worse, Δ -0.66 points",-0.66
"""


def test_the_numerics_block_is_written_from_the_series_and_an_edited_figure_fails_the_check(tmp_path):
    (tmp_path / "variants.csv").write_text(VARIANTS)
    page = tmp_path / "page.md"
    page.write_text(EMPTY.replace("demo", "numerics"))
    assert quoted("write", "numerics", "--results", tmp_path, "--document", page).returncode == 0
    block = page.read_text()
    assert (
        "| portable-avx2 | portable | `ATEN_CPU_CAPABILITY=avx2` | `aaaa` | +0.09 (equivalent, Δ +0.09 points) |"
        in block
    )
    assert "| native-avx2 | native |" in block and "-0.66 (worse, Δ -0.66 points)" in block
    assert "portable: 1 distinct scores table(s) over 2 variant(s); native: 1 distinct scores table(s) over 1" in block
    assert "- portable: difffilter Δ -0.65 to -0.65 points, inconclusive" in block
    assert "- native: difffilter Δ -0.66 to -0.66 points, worse" in block
    assert quoted("check", "numerics", "--results", tmp_path, "--document", page).returncode == 0
    page.write_text(block.replace("`bbbb`", "`bbbc`"))
    assert quoted("check", "numerics", "--results", tmp_path, "--document", page).returncode == 1


def test_the_results_page_quotes_the_committed_numerics_series():
    """docs/results.md's numerics block is what results/numerics_portability/variants.csv (in the repository) holds."""
    checked = quoted("check", "numerics")
    assert checked.returncode == 0, checked.stderr
