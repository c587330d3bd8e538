"""armlab.spec is the one place a setting's type, default, range and meaning are written: the schema and the docs'
tables are generated from it and checked, the readers of defaults read it."""

import ast
import dataclasses
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import REPO, TINY

from armlab import schema, spec
from armlab.configfile import load_configs
from armlab.experiment.validate import validate_config
from armlab.limits import DEFAULT_LIMITS


def _checkout_copy(tmp_path):
    """The generated files and their inputs, copied under ``tmp_path`` as a checkout would hold them."""
    for name in schema.generated(REPO):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    return tmp_path


def test_the_generated_files_are_the_specs():
    """workflows/schemas/config.schema.yaml, docs/settings.md and docs/methods.md's recipe table: as generated."""
    assert schema.check(REPO) == []


def test_a_planted_edit_of_the_schema_fails_the_check(tmp_path):
    root = _checkout_copy(tmp_path)
    path = root / schema.SCHEMA_FILE
    path.write_text(path.read_text().replace("minimum: 8", "minimum: 4", 1))  # model.d_model's range, by hand
    problems = schema.check(root)
    assert len(problems) == 1 and problems[0].startswith(f"{schema.SCHEMA_FILE}: line ")
    run = subprocess.run(
        [sys.executable, "-m", "armlab.spec", "--check", "--root", str(root)], capture_output=True, text=True
    )
    assert run.returncode == 1 and "config.schema.yaml" in run.stderr and "python -m armlab.spec --write" in run.stderr
    assert subprocess.run([sys.executable, "-m", "armlab.spec", "--write", "--root", str(root)]).returncode == 0
    assert schema.check(root) == []  # --write restores what the spec says


def test_a_planted_edit_of_a_settings_table_fails_the_check(tmp_path):
    root = _checkout_copy(tmp_path)
    for name, old, new in (
        (schema.SETTINGS_FILE, "| `alpha` | number > 0, < 0.5 | `0.05` |", "| `alpha` | number > 0, < 0.5 | `0.1` |"),
        (schema.METHODS_FILE, "| `steps` | `100` |", "| `steps` | `200` |"),
    ):
        text = (root / name).read_text()
        assert old in text
        (root / name).write_text(text.replace(old, new))
        assert [p.split(":")[0] for p in schema.check(root)] == [name]
        (root / name).write_text(text)


def test_the_schema_fills_the_specs_defaults():
    """The schema's defaults are the spec's: a config of only its required keys resolves to every section's
    defaults (the independent reading: the spec's dataclasses built with no arguments)."""
    raw = {
        "experiment": "x",
        "seeds": [1, 2],
        "benchmarks": {"add": {"domain": "math"}},
        "arms": {"a": None},
    }
    config = validate_config(raw)
    for section in (spec.Data, spec.Model, spec.Base, spec.Eval, spec.Trl):
        name = next(s.name for s in spec.settings_of(spec.Experiment) if s.type == section)
        filled = {s.name: spec.plain(s.default) for s in spec.settings_of(section) if s.fill and s.default is not None}
        assert config[name] == filled, name
    assert spec.Recipe.from_dict(config["recipe"]) == spec.Recipe()
    assert config["benchmarks"]["add"] == {"domain": "math", "task": "add", "n_items": 100, "params": {}}
    assert "engine" not in config["eval"] and "maj_k" not in config["eval"]  # fill=False: absent, as before the keys
    assert DEFAULT_LIMITS == dataclasses.asdict(spec.Limits()) and config["limits"] == {}


def test_a_validated_config_parses_into_its_typed_sections():
    config = validate_config(load_configs([TINY]))
    experiment = spec.parse(spec.Experiment, {k: v for k, v in config.items() if k not in ("analysis", "plan")})
    assert isinstance(experiment.eval, spec.Eval) and experiment.eval.engine == "hf"  # the default, read once
    assert experiment.recipe == spec.Recipe.from_dict(config["recipe"])
    assert isinstance(experiment.seeds, tuple) and experiment.seeds == tuple(config["seeds"])
    assert all(isinstance(c, spec.Comparison) and isinstance(c.arms, tuple) for c in experiment.comparisons)
    assert set(experiment.benchmarks) == set(config["benchmarks"])
    with pytest.raises(KeyError, match=r"Eval: unknown key\(s\) \['nope'\]"):
        spec.parse(spec.Eval, {"nope": 1})


def test_the_schema_holds_what_the_analysis_validates():
    """The analysis checks its section itself (its messages name the key); the schema documents each key with its
    default and never fills one in."""
    properties = yaml.safe_load((REPO / schema.SCHEMA_FILE).read_text())["properties"]["analysis"]["properties"]
    assert list(properties) == [s.name for s in spec.settings_of(spec.Analysis)]
    assert properties["alpha"] == {"description": "family-wise error rate (gatekept Holm); TOST level (default 0.05)"}


def _number(node):
    """A number written in the code (None, "absent", is not a default of a setting)."""
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


STATISTICS_SETTINGS = {"alpha", "confidence", "margin", "max_exact", "resamples", "replicates", "power", "seed"}


def test_the_statistics_restate_no_default_of_the_analysis():
    """A keyword of the statistics named like an analysis setting takes its default from armlab.spec (or has none):
    no number is written beside it (before: 34 keyword defaults restated 20, 100_000, 4000, 0.8, 0.95 and 0)."""
    restated = []
    for path in [*(REPO / "analysis" / "stats").glob("*.py"), REPO / "analysis" / "screens" / "sensitivity.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.arguments):
                pairs = [
                    *zip(node.args[len(node.args) - len(node.defaults) :], node.defaults),
                    *zip(node.kwonlyargs, node.kw_defaults),
                ]
                restated += [
                    f"{path.name}: {arg.arg} = {ast.unparse(default)}"
                    for arg, default in pairs
                    if arg.arg in STATISTICS_SETTINGS and _number(default)
                ]
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.target.id in STATISTICS_SETTINGS and _number(node.value):
                    restated.append(f"{path.name}: {node.target.id} = {ast.unparse(node.value)}")
    assert restated == []


def test_a_default_read_elsewhere_is_the_specs():
    """Defaults a stage takes for an absent key come from the spec: the sequential design's, the evaluation
    engine's, the analysis's."""
    from armlab.analysis.config import DEFAULTS
    from armlab.analysis.stats.power import seeds_needed
    from armlab.configfile import SEQUENTIAL_DEFAULTS

    assert SEQUENTIAL_DEFAULTS == {"start": 1, "spending": "obrien_fleming"}
    assert DEFAULTS == {s.name: spec.plain(s.default) for s in spec.settings_of(spec.Analysis)}
    assert DEFAULTS["alpha"] == spec.DEFAULT_ANALYSIS.alpha == 0.05
    signature = __import__("inspect").signature(seeds_needed).parameters
    assert signature["power"].default == spec.DEFAULT_ANALYSIS.power == 0.8
    assert signature["max_exact"].default == spec.DEFAULT_ANALYSIS.exact_max_seeds == 20
