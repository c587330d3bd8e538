"""The analysis' part of a config: defaults, validation and command-line overrides."""

import json
import re

import pytest
import yaml
from conftest import REPO

from armlab.analysis.config import DEFAULTS, apply_overrides, compared_measures, load_config, parse_config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.stats.sequential import Design
from armlab.configfile import SEQUENTIAL_DEFAULTS
from armlab.experiment.validate import load_config as load_experiment_config

BASE = {"experiment": "demo", "comparisons": [{"family": "estimators", "reference": "grpo", "arms": ["rloo"]}]}


def test_defaults_and_the_pipeline_keys_it_ignores():
    cfg = parse_config(
        {
            **BASE,
            "seeds": [1, 2],
            "recipe": {"lr": 1e-3},
            "arms": {"grpo": {}},
            "benchmarks": {"add": {"domain": "math", "n_items": 50}},
        }
    )
    s = cfg.settings
    assert (s.alpha, s.resamples, s.ci_methods, s.bootstrap_seed) == (0.05, 10_000, (), 0)
    assert cfg.benchmarks == {"add": "math"} and cfg.input is None
    assert cfg.compared_arms == ["grpo", "rloo"]


def test_subset_weights_are_normalized_and_written_explicitly():
    cfg = parse_config({**BASE, "analysis": {"subsets": {"six": ["a", "b", "c"], "w": {"a": 3, "b": 1}}}})
    assert cfg.settings.subsets == {"six": {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}, "w": {"a": 0.75, "b": 0.25}}


@pytest.mark.parametrize(
    "analysis, message",
    [
        ({"alpah": 0.05}, "unknown key(s) ['alpah']"),
        ({"alpha": 0.7}, "analysis.alpha: expected a number in (0, 0.5)"),
        ({"resamples": 10.5}, "analysis.resamples: expected an integer >= 100"),
        ({"ci_methods": ["studentized"]}, "analysis.ci_methods"),
        ({"item_bootstrap": "yes"}, "analysis.item_bootstrap: expected true or false"),
        ({"subsets": {"flat": ["a"]}}, "reserved for a built-in summary"),
        ({"subsets": {"s": {"a": -1}}}, "positive weight"),
        ({"rankings": {"r": ["one"]}}, "list of >= 2 arms"),
        ({"ci_methods": [{"t": 1}]}, "analysis.ci_methods: expected a list drawn from"),
        ({"crossed_methods": ["jackknife"]}, "analysis.crossed_methods: expected a non-empty list drawn from"),
        (
            {"statistics": ["median"]},
            "analysis.statistics: unknown statistic 'median'; expected one of ['iqm', 'optimality_gap']",
        ),
        ({"statistics": "iqm"}, "analysis.statistics: expected a list of statistic names or a mapping"),
        (
            {"statistics": {"optimality_gap": {"tau": 1}}},
            "analysis.statistics.optimality_gap: expected a mapping of parameters drawn from ['gamma']",
        ),
        (
            {"statistics": {"optimality_gap": {"gamma": "high"}}},
            "analysis.statistics.optimality_gap.gamma: expected a number",
        ),
    ],
)
def test_bad_settings_are_named(analysis, message):
    with pytest.raises(AnalysisInputError) as err:
        parse_config({**BASE, "analysis": analysis}, source="cfg.yaml")
    assert str(err.value).startswith("cfg.yaml:") and message in str(err.value)


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"comparisons": BASE["comparisons"]}, "experiment: expected a non-empty string"),
        ({"experiment": "x"}, "comparisons: expected a non-empty list"),
        (
            {**BASE, "comparisons": [{"family": "f", "reference": "a", "arms": ["a"]}]},
            "the reference 'a' cannot also be",
        ),
        ({**BASE, "comparisons": BASE["comparisons"] * 2}, "duplicate family name"),
        (
            {**BASE, "comparisons": [{**BASE["comparisons"][0], "control": "yes"}]},
            "comparisons[0].control: expected true or false, got 'yes'",
        ),
        (
            {**BASE, "comparisons": [{**BASE["comparisons"][0], "controls": True}]},
            "comparisons[0]: expected the keys family, reference, arms (and optionally control)",
        ),
        ({**BASE, "input": {"path": "x.csv"}}, "input: expected a mapping with a 'kind'"),
        ({**BASE, "benchmarks": {"add": {"n_items": 3}}}, "benchmarks.add.domain: expected a string"),
    ],
)
def test_bad_structure_is_named(raw, message):
    with pytest.raises(AnalysisInputError, match=re.escape(message)):
        parse_config(raw)


def test_a_family_marked_control_is_a_planted_control():
    plain = parse_config(BASE).comparisons[0]
    marked = parse_config({**BASE, "comparisons": [{**BASE["comparisons"][0], "control": True}]}).comparisons[0]
    assert not plain.control and marked.control and marked.arms == plain.arms


def test_statistics_are_named_from_the_registry_with_their_parameters():
    listed = parse_config({**BASE, "analysis": {"statistics": ["iqm", "optimality_gap"]}}).settings
    assert listed.statistics == {"iqm": {}, "optimality_gap": {"gamma": 1.0}}
    tuned = parse_config({**BASE, "analysis": {"statistics": {"optimality_gap": {"gamma": 0.9}}}}).settings
    assert tuned.statistics == {"optimality_gap": {"gamma": 0.9}}
    assert parse_config(BASE).settings.statistics == {}


def test_overrides_parse_values_as_yaml_and_create_sections():
    raw = apply_overrides(BASE, ["analysis.resamples=2000", "analysis.ci_methods=[bca]", "input.path=a b.csv"])
    assert raw["analysis"] == {"resamples": 2000, "ci_methods": ["bca"]} and raw["input"] == {"path": "a b.csv"}
    assert "analysis" not in BASE  # the original is untouched
    with pytest.raises(AnalysisInputError, match="expected KEY=VALUE"):
        apply_overrides(BASE, ["analysis.resamples"])
    with pytest.raises(AnalysisInputError, match="'experiment' is not a mapping"):
        apply_overrides(BASE, ["experiment.name=x"])


def test_json_and_yaml_files_load_the_same(tmp_path):
    (tmp_path / "c.json").write_text(json.dumps(BASE))
    (tmp_path / "c.yaml").write_text(
        "experiment: demo\ncomparisons:\n  - {family: estimators, reference: grpo, arms: [rloo]}\n"
    )
    assert load_config(tmp_path / "c.json").comparisons == load_config(tmp_path / "c.yaml").comparisons
    (tmp_path / "bad.yaml").write_text("experiment: [unclosed\n")
    with pytest.raises(AnalysisInputError, match="bad.yaml: not valid YAML"):
        load_config(tmp_path / "bad.yaml")
    with pytest.raises(AnalysisInputError, match="absent.yaml: config not found"):
        load_config(tmp_path / "absent.yaml")


def test_every_default_is_a_documented_setting():
    """Each key has its row in docs/settings.md's analysis table (generated from armlab.spec.Analysis; before, the
    analysis/config.py docstring held a hand-written copy of the defaults)."""
    table = (REPO / "docs" / "settings.md").read_text().split("\n## analysis\n")[1].split("\n## ")[0]
    for key in DEFAULTS:
        assert f"\n| `{key}` | " in table, key


def test_a_prediction_on_a_measure_under_a_second_name_names_the_one_tested():
    # four benchmarks in two domains of two: flat weighs them exactly as domain_balanced does (tested once)
    raw = {
        "experiment": "x",
        "benchmarks": {"a": {"domain": "m"}, "b": {"domain": "m"}, "c": {"domain": "l"}, "d": {"domain": "l"}},
        "comparisons": [{"family": "f", "reference": "r", "arms": ["a1"]}],
        "predictions": [{"family": "f", "arm": "a1", "direction": "better", "summary": "flat", "source": "s"}],
    }
    with pytest.raises(
        AnalysisInputError,
        match=r"predictions\[0\].summary: 'flat' weighs the benchmarks exactly as "
        r"'domain_balanced' does, so the analysis tests it once, as 'domain_balanced'; predict on that",
    ):
        parse_config(raw, source="cfg.yaml")
    assert "flat" not in compared_measures(
        parse_config({**raw, "predictions": []}).settings, {b: v["domain"] for b, v in raw["benchmarks"].items()}
    )


def test_a_design_built_in_code_tests_as_the_configured_one():
    """The sequential design's defaults are defined once: a Design built with only its counts is the design an
    analysis with default settings parses (before, Design enumerated sign paths up to 16 seeds, the analysis up to
    analysis.exact_max_seeds = 20)."""
    counts = {"initial": 4, "wave": 2, "max": 18}
    assert parse_config({**BASE, "seeds": counts}).design == Design(**counts)
    assert Design(**counts).max_exact == DEFAULTS["exact_max_seeds"] == 20


def test_the_sequential_defaults_live_in_code_and_validation_fills_them_in():
    schema = yaml.safe_load((REPO / "workflows" / "schemas" / "config.schema.yaml").read_text())
    design_schema = next(s for s in schema["properties"]["seeds"]["oneOf"] if s["type"] == "object")
    assert not [key for key, spec in design_schema["properties"].items() if "default" in spec]
    config = load_experiment_config(
        [REPO / "config" / "experiments" / "sequential.yaml"],
        {"seeds": {"initial": 2, "wave": 1, "max": 4}},
    )
    assert config["seeds"] == {"initial": 2, "wave": 1, "max": 4, **SEQUENTIAL_DEFAULTS, "margin": None}
