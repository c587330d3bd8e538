"""Every config error is rejected with a message naming the key, before any job runs."""

import copy
import dataclasses

import fork_server
import pytest
import yaml
from conftest import REPO, TINY

from armlab.configfile import ConfigError, load_mapping
from armlab.experiment.validate import load_config, validate_config
from armlab.schema import recipe_keys
from armlab.spec import Recipe
from armlab.training.recipe import resolve_arm


@pytest.fixture
def raw():
    return yaml.safe_load(TINY.read_text())


def _rejects(raw, match):
    with pytest.raises(ConfigError, match=match):
        validate_config(raw, source="tiny.yaml")


def test_default_and_tiny_configs_validate_with_defaults():
    config = load_config([REPO / "config" / "config.yaml"])
    assert config["experiment"] == "demo"
    assert {"grpo", "dr_grpo", "difffilter", "no_learning"} <= set(config["arms"])
    assert len(config["benchmarks"]) == 12
    assert {b["domain"] for b in config["benchmarks"].values()} == {"math", "logic", "science"}
    assert config["recipe"]["loss_agg"] == "token-mean"  # a schema default


WORKFLOW_CONFIGS = [REPO / "config" / "config.yaml", TINY] + [
    path  # those that an analysis reads its input from are not run by the workflow
    for path in sorted((REPO / "config" / "experiments").glob("*.yaml"))
    if "input" not in yaml.safe_load(path.read_text())
]


@pytest.mark.parametrize("path", WORKFLOW_CONFIGS, ids=lambda path: path.name)
def test_schema_defaults_are_those_snakemake_fills_in(path):
    """Defaults are filled in on the schema parsed once; snakemake.utils.validate, which parses it per call, is
    the independent computation. A default is a copy: changing a config never changes the next one's defaults."""
    from snakemake.utils import validate as snakemake_validate

    from armlab.configfile import load_configs
    from armlab.experiment.validate import SCHEMA_PATH, _DefaultsValidator, _schema

    raw = load_configs([REPO / "config" / "config.yaml", path] if path.parent.name == "experiments" else [path])
    ours, theirs = copy.deepcopy(raw), copy.deepcopy(raw)
    _DefaultsValidator(_schema()).validate(ours)
    snakemake_validate(theirs, str(SCHEMA_PATH), set_default=True)
    assert ours == theirs and ours != raw
    for filled in [ours["limits"], *(spec["params"] for spec in ours["benchmarks"].values())]:
        filled["changed"] = True
    properties = _schema()["properties"]
    assert properties["limits"]["default"] == {}
    assert properties["benchmarks"]["additionalProperties"]["properties"]["params"]["default"] == {}


def test_the_recipe_is_typed_frozen_and_has_exactly_the_schemas_keys(tiny_config):
    keys = recipe_keys()
    assert {field.name for field in dataclasses.fields(Recipe)} == {key["name"] for key in keys}
    assert all(key["description"] for key in keys)  # each key documented, once: in the schema
    # the keys without a schema default are the optional fields, None when a config leaves them out
    optional = {field.name for field in dataclasses.fields(Recipe) if field.default is None}
    assert optional == {key["name"] for key in keys if key["default"] is None} == {"policy_loss", "length_bonus"}
    recipe = resolve_arm(tiny_config, "difffilter")
    with pytest.raises(dataclasses.FrozenInstanceError):
        recipe.steps = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        recipe.data_policy["name"] = "uniform"  # type: ignore[index]
    # what manifests record is the dict the recipe was before it had a type (so hashes of it do not move): the
    # common recipe with the arm's overrides, methods as {"name": ...}, the optional keys absent
    common, overrides = tiny_config["recipe"], tiny_config["arms"]["difffilter"]
    expected = {
        **common,
        **overrides,
        "estimator": {"name": common["estimator"]},
        "data_policy": {"name": "difffilter"},
    }
    assert recipe.as_dict() == expected and "policy_loss" not in expected and "length_bonus" not in expected
    assert recipe.replace(policy_loss="clip_higher").policy_loss == {"name": "clip_higher"}


def test_the_docs_recipe_table_is_the_schemas():
    """docs/methods.md, "Recipe knobs", is a copy of the schema's keys, defaults and meanings; kept equal here."""
    defaults = {key["name"]: "none" if key["default"] is None else f"`{key['default']}`" for key in recipe_keys()}
    rows = [f"| `{key['name']}` | {defaults[key['name']]} | {key['description']} |" for key in recipe_keys()]
    docs = (REPO / "docs" / "methods.md").read_text().split("## Recipe knobs")[1].split("\n\n")
    table = next(block for block in docs if block.startswith("| key |")).splitlines()[2:]
    assert table == rows, "docs/methods.md, Recipe knobs: rewrite the table from the schema:\n" + "\n".join(rows)


def test_arms_resolve_as_overrides_of_the_recipe(tiny_config):
    recipe = resolve_arm(tiny_config, "difffilter")
    assert recipe.data_policy == {"name": "difffilter"}
    assert recipe.estimator == {"name": "grpo"}
    assert recipe.steps == tiny_config["recipe"]["steps"]


def test_unknown_estimator(raw):
    raw["arms"]["grpo"] = {"estimator": "ppo_magic"}
    _rejects(raw, r"tiny\.yaml: arms\.grpo\.estimator: unknown estimator 'ppo_magic'")


def test_unknown_data_policy(raw):
    raw["arms"]["difffilter"] = {"data_policy": {"name": "oracle"}}
    _rejects(raw, r"arms\.difffilter\.data_policy: unknown data policy 'oracle'")


def test_bad_policy_parameter(raw):
    raw["arms"]["difffilter"] = {"data_policy": {"name": "difffilter", "low": 0.9, "high": 0.1}}
    _rejects(raw, r"arms\.difffilter\.data_policy: difffilter: need 0 <= low < high")
    raw["arms"]["difffilter"] = {"data_policy": {"name": "difffilter", "band": 3}}
    _rejects(raw, r"arms\.difffilter\.data_policy\.band: unknown parameter; expected one of \[.high., .low.\]")


def test_unknown_recipe_key_in_arm(raw):
    raw["arms"]["grpo"] = {"stepz": 3}
    _rejects(raw, r"arms\.grpo: Additional properties are not allowed \('stepz'")


def test_comparison_arm_that_does_not_exist(raw):
    raw["comparisons"][0]["arms"] = ["difffilter", "dapo"]
    _rejects(raw, r"comparisons\[0\]\.arms: arm 'dapo' does not exist")


def test_comparison_reference_that_does_not_exist(raw):
    raw["comparisons"][0]["reference"] = "ppo"
    _rejects(raw, r"comparisons\[0\]\.reference: arm 'ppo' does not exist")


def test_duplicate_family_and_duplicate_arms_in_a_family(raw):
    raw["comparisons"].append(copy.deepcopy(raw["comparisons"][0]))
    _rejects(raw, r"comparisons\[1\]\.family: duplicate family name 'data_policies'")
    raw["comparisons"] = [{"family": "f", "reference": "grpo", "arms": ["difffilter", "difffilter"]}]
    _rejects(raw, r"comparisons\[0\]\.arms: duplicate arm names")


def test_duplicate_arm_names_in_yaml(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text(
        TINY.read_text().replace(
            "  difffilter: {data_policy: difffilter}", "  difffilter: {data_policy: difffilter}\n  grpo: {lr: 0.1}"
        )
    )
    with pytest.raises(ConfigError, match=r"dup\.yaml: line \d+: duplicate key 'grpo'"):
        load_mapping(path)


@pytest.mark.parametrize(
    "seeds, match",
    [
        ([], r"seeds: \[\] should be non-empty"),
        ([1, "two"], r"seeds\.1: 'two' is not of type 'integer'"),
        ([1, 2.5], r"seeds\.1: 2\.5 is not of type 'integer'"),
        ([1, 1], r"seeds: duplicate seeds"),
    ],
)
def test_bad_seeds(raw, seeds, match):
    raw["seeds"] = seeds
    _rejects(raw, match)


def test_benchmark_without_domain(raw):
    raw["benchmarks"]["add"] = {"params": {"digits": 1}}
    _rejects(raw, r"benchmarks\.add: 'domain' is a required property")


def test_unknown_task_family(raw):
    raw["benchmarks"]["chess"] = {"domain": "logic"}
    _rejects(raw, r"benchmarks\.chess\.task: unknown task family 'chess'")


def test_reserved_base_arm(raw):
    raw["arms"]["base"] = {}
    _rejects(raw, r"arms\.base: the name 'base' is reserved")


def test_snakemake_rejects_a_bad_config_before_any_job(tmp_path, raw):
    raw["comparisons"][0]["reference"] = "ppo"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(raw))
    proc = fork_server.run_snakemake(
        ["-s", str(REPO / "Snakefile"), "--configfile", str(bad), "--replace-workflow-config", "--cores", "1"],
        tmp_path,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "comparisons[0].reference: arm 'ppo' does not exist" in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


def test_armlab_arms_lists_exactly_what_configs_accept(capsys, raw):
    from armlab.cli import main
    from armlab.training.data_policies import DATA_POLICIES
    from armlab.training.estimators import ESTIMATORS
    from armlab.training.losses import POLICY_LOSSES

    assert main(["arms"]) == 0
    methods, recipe = capsys.readouterr().out.split("recipe keys (")
    listed = {
        line.split()[0]
        for line in methods.splitlines()
        if line.startswith("  ") and not line.strip().startswith("parameters")
    }
    keys = {line.split()[0]: line.split(maxsplit=2)[2] for line in recipe.splitlines() if "  default " in line}
    assert keys == {k["name"]: "none" if k["default"] is None else repr(k["default"]) for k in recipe_keys()}
    assert listed == set(ESTIMATORS) | set(DATA_POLICIES) | set(POLICY_LOSSES)
    for name in listed:  # every listed name validates as an arm; an unlisted one does not
        field = "estimator" if name in ESTIMATORS else "policy_loss" if name in POLICY_LOSSES else "data_policy"
        probe = {field: name}
        if name in POLICY_LOSSES and POLICY_LOSSES[name].aggregation:  # gmpo is a mean over sequences
            probe["loss_agg"] = POLICY_LOSSES[name].aggregation
        validate_config({**raw, "arms": {**raw["arms"], "probe": probe}}, source="probe")
    _rejects({**raw, "arms": {"probe": {"data_policy": "not_listed"}}}, "unknown data policy")
    _rejects({**raw, "arms": {"probe": {"policy_loss": "not_listed"}}}, "unknown policy loss")


@pytest.mark.parametrize(
    "sampling, match",
    [
        ({"samples": 0}, r"eval\.samples: 0 is less than the minimum of 1"),
        ({"temperature": -0.5}, r"eval\.temperature: -0\.5 is less than the minimum of 0"),
        ({"top_p": 0}, r"eval\.top_p: 0 is less than or equal to the minimum of 0"),
        ({"top_p": 1.5}, r"eval\.top_p: 1\.5 is greater than the maximum of 1"),
        ({"samples": 4}, r"eval\.samples: 4 answers per item at eval\.temperature 0 would be 4 copies"),
        ({"top_p": 0.9}, r"eval\.top_p: 0\.9 needs sampling"),
        ({"samples": 4, "temperature": 1.0, "pass_k": [1, 8]}, r"eval\.pass_k: \[8\] above eval\.samples \(4\)"),
        ({"samples": 4, "temperature": 1.0, "pass_k": [0]}, r"eval\.pass_k\.0: 0 is less than the minimum of 1"),
        ({"samples": 5000, "temperature": 1.0}, r"eval\.samples: 5000 is above the limit of 4096"),
    ],
)
def test_bad_sampled_evaluation(raw, sampling, match):
    raw["eval"] = {"max_gen_toks": 5, **sampling}
    _rejects(raw, match)


def test_a_config_without_sampling_keys_stays_greedy(raw):
    raw["eval"] = {"max_gen_toks": 5}
    sampling = validate_config(raw)["eval"]
    assert {k: sampling[k] for k in ("samples", "temperature", "top_p", "pass_k")} == {
        "samples": 1,
        "temperature": 0.0,
        "top_p": 1.0,
        "pass_k": [],
    }


def test_existing_lm_eval_tasks_are_sampled_k_times_and_only_maj_at_k_is_refused(raw):
    """lm-eval's own tasks get k answers per item (evals/lm_eval_tasks.py sampled_existing_tasks): pass@k is theirs
    too (refused before issue 27: "scored on one answer per item"); maj@k needs votes, which only armlab grades."""
    raw["eval"] = {"samples": 4, "temperature": 1.0, "pass_k": [1, 4], "lm_eval_tasks": {"gsm8k": {"domain": "math"}}}
    assert validate_config(raw)["eval"]["pass_k"] == [1, 4]
    raw["eval"]["maj_k"] = [4]
    _rejects(raw, r"eval\.maj_k: maj@k counts the votes of each answer, but the tasks of eval\.lm_eval_tasks")


def test_validation_outside_a_checkout_says_it_needs_the_checkout(monkeypatch, tmp_path):
    """An installed copy (a wheel) has no workflows/ folder: one line saying so, not a FileNotFoundError."""
    from armlab.experiment import validate

    monkeypatch.setattr(validate, "SCHEMA_PATH", tmp_path / "workflows" / "schemas" / "config.schema.yaml")
    validate._schema.cache_clear()
    try:
        with pytest.raises(ConfigError, match=r"config.schema.yaml: not found; validating a whole experiment config"):
            validate.validate_config(yaml.safe_load(TINY.read_text()))
    finally:
        validate._schema.cache_clear()
