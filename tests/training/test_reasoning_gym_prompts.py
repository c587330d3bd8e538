"""reasoning-gym's generators as TRL training prompts (trl.reasoning_gym): drawn from (experiment, name, "train"),
distinct, never an evaluation item's question, graded by the generator's own score_answer at full credit, and
checked before any job."""

import json
import os
import subprocess
import sys

import pytest
import yaml
from conftest import TINY

from armlab import experiment
from armlab.configfile import ConfigError
from armlab.experiment.stages import stage_config
from armlab.training.utils import derive_seed

reasoning_gym = pytest.importorskip(
    "reasoning_gym", reason="reasoning-gym is not installed (pip install 'armlab[reasoning_gym]')"
)

from armlab.evals.verifiers import UNPARSED, grade  # noqa: E402
from armlab.training.reasoning_gym_tasks import score, training_pools  # noqa: E402

# 2 one-digit terms: 200 questions in all, so that evaluation items and training prompts must be kept apart
CHAIN = {"dataset": "chain_sum", "config": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}}


def _config(tmp_path, train: dict, external: dict | None = None, arms=None, **top):
    """tiny.yaml trained by TRL (its tiny Qwen2 reads armlab's characters; 96 of them fit a chain_sum prompt)."""
    config = yaml.safe_load(TINY.read_text())
    arms = arms or {"grpo": {}, "dr_grpo": {"estimator": "dr_grpo"}}
    comparison = {"family": "arms", "reference": "grpo", "arms": [arm for arm in arms if arm != "grpo"]}
    config.update(backend="trl", arms=arms, comparisons=[comparison], trl={"reasoning_gym": train})
    config["model"]["max_len"] = 96
    config["eval"]["external"] = external or {}
    config.update(top)
    path = tmp_path / "rg.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _questions(seed: int, size: int) -> list[str]:
    """chain_sum's questions drawn by reasoning-gym itself (the independent side of the checks)."""
    generated = reasoning_gym.create_dataset(CHAIN["dataset"], seed=seed, size=size, **CHAIN["config"])
    return [generated[i]["question"] for i in range(size)]


@pytest.mark.simulation
def test_training_prompts_are_seeded_distinct_and_never_evaluation_items(tmp_path):
    train = {"chain": {**CHAIN, "domain": "gym", "n_items": 40}}
    external = {"held": {"source": "reasoning_gym", **CHAIN, "domain": "gym", "n_items": 150}}
    config = experiment.load([_config(tmp_path, train, external)])
    pools = training_pools(stage_config(config, "train", "grpo"))
    assert list(pools) == ["gym"] and len(pools["gym"]) == 40
    prompts = [item["prompt"] for item in pools["gym"]]
    assert len(set(prompts)) == 40
    evaluated = set(_questions(derive_seed("tiny", "held"), 150))
    assert len(evaluated) > 100 and not evaluated & set(prompts)  # 150 draws of 200 questions: most of them
    # the prompts are reasoning-gym's own draws from (experiment, name, "train"), in order, skipping those taken
    drawn = _questions(derive_seed("tiny", "chain", "train"), max(item["rg_index"] for item in pools["gym"]) + 1)
    expected = list(dict.fromkeys(q for q in drawn if q not in evaluated))
    assert prompts == expected
    assert [item["id"] for item in pools["gym"][:2]] == ["chain-train-00000", "chain-train-00001"]
    # another process, with another hash seed, draws the same prompts (each training job draws them anew)
    view = tmp_path / "view.json"
    view.write_text(json.dumps(stage_config(config, "train", "grpo")))
    code = "import json, sys; from armlab.training.reasoning_gym_tasks import training_pools as p; "
    code += "print(json.dumps(p(json.load(open(sys.argv[1])))))"
    env = {**os.environ, "PYTHONHASHSEED": "7"}
    run = subprocess.run([sys.executable, "-c", code, str(view)], capture_output=True, text=True, env=env, check=True)
    assert json.loads(run.stdout) == json.loads(json.dumps(pools))
    # another experiment draws other prompts
    other = experiment.load([_config(tmp_path, train, external, experiment="other")])
    assert [i["prompt"] for i in training_pools(other)["gym"]] != prompts


def test_the_train_view_holds_what_draws_the_evaluations_reasoning_gym_items_only(tmp_path):
    """Editing eval.temperature, or a reasoning-gym benchmark's samples, prompt or domain, reruns no training;
    editing what draws its items (its dataset, config or n_items), which the prompts leave out, does."""
    train = {"chain": {**CHAIN, "domain": "gym", "n_items": 20}}
    external = {"held": {"source": "reasoning_gym", **CHAIN, "domain": "gym", "n_items": 10}}
    config = experiment.load([_config(tmp_path, train, external)])
    view = stage_config(config, "train", "grpo")
    assert view["eval"] == {"external": {"held": {"source": "reasoning_gym", **CHAIN, "n_items": 10}}}

    def edited(**changes):
        held = {**config["eval"]["external"]["held"], **changes}
        return stage_config({**config, "eval": {**config["eval"], "external": {"held": held}}}, "train", "grpo")

    assert stage_config({**config, "eval": {**config["eval"], "temperature": 0.7}}, "train", "grpo") == view
    assert edited(samples=4) == edited(prompt="Q: {question}") == edited(domain="other") == view
    assert edited(n_items=30) != view and edited(config={**CHAIN["config"], "max_terms": 3}) != view
    assert "eval" not in stage_config({**config, "trl": {}}, "train", "grpo")


def test_partial_credit_is_not_a_correct_answer():
    """chain_sum's score_answer gives 0.5 to "33" for 3; a verdict is 0 or 1 (pass@k, maj@k and the data policies
    read it as a pass), in evaluation and in training alike. The answer is the last <answer>...</answer>, else all."""
    generated = reasoning_gym.create_dataset("chain_sum", seed=3, size=1, **CHAIN["config"])
    entry = generated[0]
    truth = str(entry["answer"])
    assert generated.score_answer(truth + truth, entry) == 0.5
    item = {
        "verifier": "reasoning_gym",
        "rg_dataset": "chain_sum",
        "rg_config": json.dumps(CHAIN["config"], sort_keys=True),
        "rg_seed": 3,
        "rg_size": 1,
        "rg_index": 0,
        "answer": truth,
    }
    assert grade(item, truth + truth).correct == 0.0 and score(item, truth + truth) == (0.0, truth + truth)
    assert grade(item, f" {truth} ").correct == 1.0
    tagged = grade(item, f"first <answer>{truth}9</answer>, then\n<answer> {truth} </answer>")
    assert (tagged.correct, tagged.extracted) == (1.0, truth)
    assert grade(item, "  ").status == UNPARSED


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"arms": {"grpo": {}, "mine": {"backend": "builtin"}}, "trl": {"model": "builtin_base"}},
            r"trl\.reasoning_gym: arm 'mine' trains with the builtin backend, which draws armlab's own prompts only",
        ),
        ({"train": {"add": {**CHAIN, "domain": "gym"}}}, r"trl\.reasoning_gym\.add: also in benchmarks"),
        ({"train": {"c": {**CHAIN, "domain": "gym", "prompt": "{q}"}}}, r"trl\.reasoning_gym\.c\.prompt: '\{q\}' is"),
        (
            {"train": {"c": {**CHAIN, "domain": "gym", "prompt": "{question.x}"}}},
            r"trl\.reasoning_gym\.c\.prompt: '\{question\.x\}' is not a template of \{question\}: it names",
        ),
        (
            {"train": {"c": {**CHAIN, "domain": "gym", "prompt": "Add."}}},
            r"trl\.reasoning_gym\.c\.prompt: 'Add\.' is not a template of \{question\}: it has no \{question\}",
        ),
        (
            {"train": {"c": {"dataset": "chain_summ", "domain": "gym"}}},
            r"trl\.reasoning_gym\.c\.dataset: unknown reasoning-gym dataset 'chain_summ'; did you mean 'chain_sum'",
        ),
        (
            {"train": {"c": {**CHAIN, "domain": "gym", "n_items": 190}}},
            r"trl\.reasoning_gym\.c\.n_items: 9500 draws gave only \d+ distinct questions that are not evaluation",
        ),
        (
            {"train": {"c": {**CHAIN, "domain": "gym", "n_items": 2_000_000}}},
            r"trl\.reasoning_gym\.c\.n_items: 2000000 is above the limit of 1000000",
        ),
        # TRL's tiny Qwen2 reads armlab's characters: letter_counting's quotes are not among them
        (
            {"train": {"c": {"dataset": "letter_counting", "domain": "gym", "n_items": 5}}},
            r"trl\.reasoning_gym\.c: prompt c-train-00000: the character-level model cannot read its prompt",
        ),
        (
            {"train": {"c": {**CHAIN, "domain": "gym", "n_items": 5, "prompt": "{question} (twice) {question}"}}},
            r"trl\.reasoning_gym\.c: prompt c-train-00000: its prompt of \d+ characters and max_new_tokens 5 exceed",
        ),
    ],
)
def test_bad_training_prompts_are_one_line_errors_before_any_job(tmp_path, change, message):
    external = {"held": {"source": "reasoning_gym", **CHAIN, "domain": "gym", "n_items": 150}}
    config = yaml.safe_load(_config(tmp_path, {"c": {**CHAIN, "domain": "gym"}}, external).read_text())
    config["trl"]["reasoning_gym"] = change.get("train", config["trl"]["reasoning_gym"])
    if "arms" in change:
        config["arms"] = change["arms"]
        config["comparisons"][0]["arms"] = [arm for arm in change["arms"] if arm != "grpo"]
    config["trl"].update(change.get("trl", {}))
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"bad\.yaml: " + message):
        experiment.load([path])


@pytest.mark.simulation
def test_a_generator_that_draws_other_items_in_another_process_is_refused():
    """isomorphic_strings' items depend on Python's hash seed: the evaluation job could not rebuild the items it
    asked, and a training job could not keep the evaluation's questions out. chain_sum's do not."""
    from armlab.training.reasoning_gym_tasks import check_reproducible

    stable = {"x.yaml: trl.reasoning_gym.c.dataset": ("chain_sum", json.dumps(CHAIN["config"]), 5, 100, 100)}
    check_reproducible(stable)
    unstable = {"x.yaml: eval.external.iso.dataset": ("isomorphic_strings", "{}", 5, 10, 10)}
    with pytest.raises(
        ConfigError, match=r"x\.yaml: eval\.external\.iso\.dataset: reasoning-gym's isomorphic_strings draws"
    ):
        check_reproducible({**stable, **unstable})


def test_every_reasoning_gym_draw_is_checked_across_processes(tmp_path):
    """The workflow's start checks the evaluation's benchmarks and the training prompts, with their own seeds."""
    from armlab.training.reasoning_gym_tasks import draws_of, training_pools

    train = {"chain": {**CHAIN, "domain": "gym", "n_items": 20}}
    external = {"held": {"source": "reasoning_gym", **CHAIN, "domain": "gym", "n_items": 10}}
    config = experiment.load([_config(tmp_path, train, external)])
    config_json = json.dumps(CHAIN["config"], sort_keys=True)
    draws = draws_of(config, "x.yaml")
    # every item the jobs use: the benchmark's 10, the training pool's up to the last index it took
    taken = 1 + max(item["rg_index"] for item in training_pools(config)["gym"])
    assert 20 <= taken < 1000
    assert draws == {
        "x.yaml: eval.external.held.dataset": ("chain_sum", config_json, derive_seed("tiny", "held"), 10, 10),
        "x.yaml: trl.reasoning_gym.chain.dataset": (
            "chain_sum",
            config_json,
            derive_seed("tiny", "chain", "train"),
            1000,
            taken,
        ),
    }
