"""Numerics controls in the config and the workflow (training/numerics_controls.py): an arm that differs from its
comparison's reference in numerics only, refused at start (one line naming the key) where it differs in anything
else; its training view and its own evaluation view hold its numerics, so changing them reruns its jobs only."""

import copy
import re

import pytest
from conftest import TINY, snakemake_dry_run

from armlab import numerics
from armlab.configfile import ConfigError, load_configs
from armlab.experiment.plan import RunPlan
from armlab.experiment.stages import stage_config
from armlab.experiment.validate import validate_config

CONTROLS = {
    "grpo_avx2": {"numerics": {"capability": "avx2"}},
    "grpo_t2": {"numerics": {"threads": 2}},
    "grpo_b16": {"numerics": {"eval_batch_size": 16}},
}


def with_controls(**changes) -> dict:
    """tests/fixtures/tiny.yaml with numerics controls of grpo in a family of their own, then ``changes``."""
    raw = load_configs([TINY])
    raw["arms"] |= copy.deepcopy(CONTROLS)
    raw["comparisons"].append({"family": "numerics", "reference": "grpo", "arms": list(CONTROLS)})
    raw.update(changes)
    return raw


VIEWS = [("train", arm) for arm in ("grpo", "difffilter", *CONTROLS)] + [
    ("eval", None),
    *[("eval", arm) for arm in CONTROLS],
    ("base", None),
    ("data", None),
]


def views(config: dict) -> dict:
    return {(stage, arm): stage_config(config, stage, arm) for stage, arm in VIEWS}


def test_a_control_s_views_hold_its_numerics_and_no_other_view_changes():
    config = validate_config(with_controls())
    staged = views(config)
    assert (staged["train", "grpo_t2"]["threads"], staged["eval", "grpo_t2"]["threads"]) == (2, 2)
    assert staged["train", "grpo_t2"]["arms"] == {"grpo_t2": CONTROLS["grpo_t2"]}
    assert staged["train", "grpo_avx2"]["capability"] == staged["eval", "grpo_avx2"]["capability"] == "avx2"
    assert staged["eval", "grpo_b16"]["eval"]["batch_size"] == 16 and staged["eval", None]["eval"]["batch_size"] == 512
    # the reference's and the other arms' views are those of the config without controls: nothing of theirs reruns
    plain = validate_config(load_configs([TINY]))
    for stage, arm in [("train", "grpo"), ("train", "difffilter"), ("eval", None), ("base", None), ("data", None)]:
        assert staged[stage, arm] == stage_config(plain, stage, arm)
    # changing one control's numerics changes that control's views alone (and the analysis view, which names them)
    changed = with_controls()
    changed["arms"]["grpo_t2"]["numerics"]["threads"] = 3
    again = views(validate_config(changed))
    assert [key for key in VIEWS if again[key] != staged[key]] == [("train", "grpo_t2"), ("eval", "grpo_t2")]
    assert stage_config(validate_config(changed), "analysis") != stage_config(config, "analysis")
    assert "arms" not in stage_config(plain, "analysis")  # a config without controls stages as before


def test_the_plan_gives_a_control_its_own_evaluation_view_and_threads():
    plan = RunPlan(validate_config(with_controls()))
    assert plan.eval_config("grpo_t2") == "results/tiny/config/eval/grpo_t2.json"
    assert plan.eval_config("grpo") == plan.eval_config("base") == "results/tiny/config/eval.json"
    assert (plan.threads_of("grpo_t2"), plan.threads_of("grpo_b16"), plan.threads_of("grpo")) == (2, 1, 1)
    pattern = re.compile(plan.controls_pattern())
    assert [arm for arm in ("grpo", "difffilter", *CONTROLS) if pattern.fullmatch(arm)] == list(CONTROLS)


NUMERICS = {"family": "numerics", "reference": "grpo", "arms": ["grpo_t2", "grpo_b16"]}


def mutate(path: str, value):
    """A config change: ``value`` at the dotted ``path`` (None deletes it)."""

    def change(raw):
        *parents, last = path.split(".")
        node = raw
        for part in parents:
            node = node[part]
        if value is None:
            del node[last]
        else:
            node[last] = value

    return change


REFUSED = [
    (mutate("arms.grpo_t2.lr", 0.5), "arms.grpo_t2.lr: numerics control 'grpo_t2' may differ from its reference "
     "'grpo' in numerics only; lr is 0.5 in 'grpo_t2' and 0.0003 in 'grpo'"),
    (mutate("arms.grpo.steps", 5), "arms.grpo.steps: numerics control 'grpo_avx2' may differ from its reference"),
    (mutate("arms.grpo_t2.data_policy", "difffilter"), "arms.grpo_t2.data_policy: numerics control 'grpo_t2'"),
    (mutate("arms.grpo_t2.numerics", {}), "arms.grpo_t2.numerics: {} should be non-empty"),
    (mutate("arms.grpo_t2.numerics", {"dtype": "bfloat16"}), "arms.grpo_t2.numerics: Additional properties are not "
     "allowed ('dtype' was unexpected)"),
    (mutate("arms.grpo_t2.numerics", {"capability": "avx10"}), "arms.grpo_t2.numerics.capability: 'avx10' is not one"),
    (mutate("arms.grpo_t2.numerics", {"threads": 1}), "arms.grpo_t2.numerics.threads: 1 is the experiment's own, so "
     "the control would repeat its reference bit for bit"),
    (mutate("arms.grpo_b16.numerics", {"eval_batch_size": 512}), "arms.grpo_b16.numerics.eval_batch_size: 512 is the "
     "experiment's own"),
    (mutate("arms.grpo_t2.numerics", {"engine": "vllm"}), "arms.grpo_t2.numerics.engine: an engine generates the "
     "answers of Hugging Face checkpoints"),
    (mutate("comparisons", [{"family": "f", "reference": "grpo", "arms": ["difffilter", "grpo_avx2"]}, NUMERICS]),
     "comparisons[0].arms: numerics control 'grpo_avx2' shares a family with 'difffilter'"),
    (mutate("comparisons", [{"family": "f", "reference": "grpo", "arms": ["difffilter"]}, NUMERICS]),
     "arms.grpo_avx2.numerics: a numerics control is compared with exactly one reference, the arm it repeats under "
     "other numerics (e.g. {family: numerics, reference: <arm>, arms: [grpo_avx2]}); 'grpo_avx2' is compared with "
     "none"),
    (mutate("comparisons", [{"family": "f", "reference": "grpo_avx2", "arms": ["difffilter"]}, NUMERICS]),
     "comparisons[0].reference: 'grpo_avx2' is a numerics control (arms.grpo_avx2.numerics)"),
    (mutate("seeds", {"initial": 2, "wave": 1, "max": 4}), "arms.grpo_avx2.numerics: a numerics control pairs with "
     "its reference at every seed"),
]  # fmt: skip


@pytest.mark.parametrize("change, message", REFUSED, ids=[m.split(":")[0] + str(i) for i, (_, m) in enumerate(REFUSED)])
def test_a_control_that_differs_in_anything_but_numerics_is_refused_naming_the_key(change, message):
    raw = with_controls()
    change(raw)
    with pytest.raises(ConfigError) as refused:
        validate_config(raw, source="exp.yaml")
    assert str(refused.value).startswith("exp.yaml: ") and "\n" not in str(refused.value)
    assert message in str(refused.value)


def test_a_control_with_a_planted_leak_is_refused_where_the_leak_alone_would_be_accepted():
    """A leak (arms.<arm>.leak) is not a recipe key, so the recipe comparison cannot see it: a control that plants
    one trains on other data than its reference, and is refused naming the key even in a family of planted controls
    with a twin, where the leak itself is allowed."""
    raw = with_controls()
    raw["benchmarks"]["add"]["twin"] = True
    raw["comparisons"][-1]["control"] = True
    validate_config(copy.deepcopy(raw))  # the controls and the twin alone are valid
    raw["arms"]["grpo_t2"]["leak"] = {"share": 0.1}
    with pytest.raises(
        ConfigError,
        match=r"arms\.grpo_t2\.leak: numerics control 'grpo_t2' may differ from its "
        r"reference 'grpo' in numerics only; a planted leak changes what it trains on",
    ):
        validate_config(raw)


def test_a_control_of_a_reference_compared_with_a_control_is_refused():
    raw = with_controls()
    raw["arms"]["grpo_t3"] = {"numerics": {"threads": 3}}
    raw["comparisons"].append({"family": "n2", "reference": "grpo_t2", "arms": ["grpo_t3"]})
    with pytest.raises(ConfigError, match=r"comparisons\[2\].reference: 'grpo_t2' is a numerics control"):
        validate_config(raw)


def test_a_capability_this_cpu_lacks_is_refused_at_start_in_one_line(tmp_path, monkeypatch):
    import yaml

    from armlab import experiment

    raw = with_controls()
    raw["arms"]["grpo_avx2"]["numerics"]["capability"] = "avx512"
    config = tmp_path / "exp.yaml"
    config.write_text(yaml.safe_dump(raw))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(numerics.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(numerics, "cpu_flags", lambda: frozenset({"sse4_2", "avx", "avx2", "fma"}))  # no AVX-512
    with pytest.raises(ConfigError) as refused:
        experiment.load([config])
    assert str(refused.value) == (
        f"{config}: arms.grpo_avx2.numerics.capability: numerics: capability avx512 forces kernels that need "
        f"avx512bw, avx512dq, avx512f, avx512vl, which this CPU ({numerics.cpu_model()}) lacks; name a capability it "
        f"has (default, avx2)"
    )
    assert not (tmp_path / "results").exists()


def test_the_workflow_evaluates_a_control_with_its_own_view_and_threads(tmp_path):
    import yaml

    config = tmp_path / "exp.yaml"
    config.write_text(yaml.safe_dump(with_controls()))
    targets = [f"results/tiny/evals/{arm}/seed-1/scores.parquet" for arm in ("grpo", "grpo_t2")]
    dry = snakemake_dry_run(tmp_path, config, *targets)
    jobs = dry.stdout.split("\nrule ")
    evaluations = {
        re.search(r"arm=(\w+)", job).group(1): job for job in jobs if job.startswith("evaluate:") and "seed=1" in job
    }
    assert "--config results/tiny/config/eval/grpo_t2.json" in evaluations["grpo_t2"]
    assert "--config results/tiny/config/eval.json" in evaluations["grpo"]
    assert re.search(r"threads: 2\b", evaluations["grpo_t2"]) and "threads:" not in evaluations["grpo"]  # 1: not shown
    trainings = [job for job in jobs if job.startswith("train:") and "arm=grpo_t2" in job]
    assert len(trainings) == 1 and re.search(r"threads: 2\b", trainings[0])
    assert any(job.startswith("arm_config:") and "config/eval/grpo_t2.json" in job for job in jobs)
