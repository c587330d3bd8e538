"""The HTML report in a real browser: headless Chromium loads it from disk, with no console errors.

Needs the Debian packages ``chromium`` and ``chromium-driver`` (``ci/install_chromium.sh``).
Without them the test is skipped, except under ``CI=true``, where it fails. A screenshot of
the report's first screen (its report card first) is saved as ``test-artifacts/report_first_screen.png``, and,
once ``make demo`` has run, the demo report's as ``test-artifacts/demo_report_first_screen.png``. The report the
workflow writes is loaded in every checkout: the session's tiny run's.
"""

import os
import runpy
import shutil
from pathlib import Path

import pytest
from conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "report"
BUILD = runpy.run_path(str(FIXTURE / "build.py"))
ARTIFACTS = REPO / "test-artifacts"
SCREENSHOT = ARTIFACTS / "report_first_screen.png"
pytestmark = pytest.mark.browser
SCREEN = (1280, 900)  # the first screen of a laptop
# no network, no background services: the page must not need any
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


def chromium_paths():
    """``(browser, driver)`` executables, or ``None`` when either is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    paths = chromium_paths()
    if paths is None:
        message = "chromium and chromedriver are not installed (run ci/install_chromium.sh)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=paths[1]))
    # the viewport itself, not the window around it, is the first screen
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": SCREEN[0], "height": SCREEN[1], "deviceScaleFactor": 1, "mobile": False},
    )
    yield driver
    driver.quit()


def open_report(driver, path):
    """Load a report from disk (``get`` returns once it has loaded); return the console's errors."""
    driver.get(Path(path).resolve().as_uri())
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory):
    results = BUILD["write_experiment"](tmp_path_factory.mktemp("browser"))
    return BUILD["analyze_and_report"](
        FIXTURE / "experiment.yaml", results, "--scores", str(results / "scores.parquet"), runs=results / "runs"
    )


def test_report_loads_without_console_errors_and_renders_every_figure(browser, demo_report):
    assert open_report(browser, demo_report) == []
    images = browser.execute_script(
        "return Array.from(document.images, i => [i.complete, i.naturalWidth, i.getBoundingClientRect().width])"
    )
    assert len(images) == 8  # two forest plots, heatmap, two performance profiles, training curves, rankings, power
    assert all(complete and natural > 0 and shown > 0 for complete, natural, shown in images)
    # nothing was fetched: every resource is inline
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(name.startswith("data:") for name in resources)
    assert browser.execute_script("return document.scripts.length") == 0
    assert "No arm beats grpo" in browser.find_element("id", "verdicts").text
    assert browser.find_element("id", "card").rect["y"] < SCREEN[1] / 4  # the report card opens the page
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 10_000


def test_on_a_narrow_screen_wide_tables_scroll_in_their_own_box(browser, demo_report):
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 800, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    )
    try:
        open_report(browser, demo_report)
        column, boxes = browser.execute_script(
            "const s = getComputedStyle(document.body);"
            "const right = document.body.getBoundingClientRect().right - parseFloat(s.paddingRight);"
            "return [right, Array.from(document.querySelectorAll('table'),"
            " t => [t.scrollWidth, (t.closest('.scroll') || t).getBoundingClientRect().right])]"
        )
        assert max(width for width, _ in boxes) > 800  # the comparison tables are wider than the screen
        assert all(right <= column + 1 for _, right in boxes)  # and none reaches past the page's column
        assert browser.execute_script("return document.documentElement.scrollWidth") <= 800
    finally:
        browser.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": SCREEN[0], "height": SCREEN[1], "deviceScaleFactor": 1, "mobile": False},
        )


def test_a_hostile_arm_name_is_shown_as_text_and_never_run(browser, tmp_path):
    config = BUILD["write_hostile"](tmp_path)
    page = BUILD["analyze_and_report"](config, tmp_path, "--scores", str(tmp_path / "scores.parquet"))
    assert open_report(browser, page) == []  # an alert() would make this command raise
    assert browser.execute_script("return document.scripts.length") == 0
    assert f"{BUILD['HOSTILE']} +" in browser.find_element("id", "verdicts").text


@pytest.mark.workflow
def test_the_report_the_workflow_wrote_loads_cleanly(browser, tiny_run):
    """The report of the session's tiny run (tests/fixtures/tiny.yaml through the README's command, training logs
    and all) loads cleanly in every checkout, whether or not `make demo` has run."""
    workdir, _ = tiny_run
    assert open_report(browser, workdir / "results" / "tiny" / "report" / "index.html") == []
    assert browser.execute_script("return document.scripts.length") == 0
    images = browser.execute_script("return Array.from(document.images, i => [i.complete, i.naturalWidth])")
    assert images and all(complete and natural > 0 for complete, natural in images)
    assert "difffilter" in browser.find_element("id", "verdicts").text


def test_the_demo_report_first_screen(browser):
    """After `make demo`: the real demo report loads cleanly; its first screen is saved for people to look at."""
    page = REPO / "results" / "demo" / "report" / "index.html"
    if not page.exists():
        pytest.skip("no demo report yet: `make demo` writes results/demo/report/index.html")
    assert open_report(browser, page) == []
    assert "grpo" in browser.find_element("id", "verdicts").text
    # the report card is on the first screen, whole: the experiment graded before anything else
    card = browser.find_element("id", "card")
    assert card.rect["y"] + card.rect["height"] <= SCREEN[1]
    assert "Seeds enough for the configured effect" in card.text
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "demo_report_first_screen.png"))
    assert (ARTIFACTS / "demo_report_first_screen.png").stat().st_size > 10_000
