"""Evaluation plumbing shared by the trl and command backends: listed lm-eval tasks land in the tidy table."""

import json

import pandas as pd
import pytest
import yaml
from conftest import TINY

from armlab.configfile import ConfigError
from armlab.contract import COLUMNS
from armlab.evals.run import samples_to_scores
from armlab.experiment.validate import load_config


def test_listed_lm_eval_tasks_are_scored_by_their_metric_and_filter():
    samples = {
        "armlab_add": [{"doc": {"domain": "math", "id": "add-1"}, "acc": 0.75, "n_correct": 3, "n_samples": 4}],
        "gsm8k": [
            {"doc_id": 0, "filter": "strict-match", "exact_match": 1.0},
            {"doc_id": 0, "filter": "flexible-extract", "exact_match": 0.0},
            {"doc_id": 1, "filter": "strict-match", "exact_match": 0.0},
        ],
    }
    spec = {"gsm8k": {"domain": "math", "metric": "exact_match", "filter": "strict-match"}}
    scores = samples_to_scores(samples, "exp", "grpo", 1, spec)
    assert list(scores.columns) == COLUMNS
    assert scores[["benchmark", "item", "score", "n_samples", "n_correct"]].values.tolist() == [
        ["add", "add-1", 0.75, 4, 3.0],
        ["gsm8k", "0", 1.0, 1, 1.0],
        ["gsm8k", "1", 0.0, 1, 0.0],
    ]


def test_lm_eval_tasks_need_a_domain(tmp_path):
    config = yaml.safe_load(TINY.read_text())
    config["eval"]["lm_eval_tasks"] = {"gsm8k": {"metric": "exact_match"}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"eval\.lm_eval_tasks\.gsm8k: 'domain' is a required property"):
        load_config([path])
    config["eval"]["lm_eval_tasks"] = {"gsm8k": {"domain": "math"}}
    path.write_text(yaml.safe_dump(config))
    assert load_config([path])["eval"]["lm_eval_tasks"]["gsm8k"] == {
        "domain": "math",
        "metric": "exact_match",
        "filter": "none",
    }


def test_lm_eval_hf_model_samples_k_answers_reproducibly(tiny_config, tiny_experiment, tmp_path):
    """lm-eval's own ``hf`` model on the same task configs with repeats: k answers, the same ones every time."""
    from armlab.evals.lm_eval_tasks import write_task_configs
    from armlab.evals.run import evaluate
    from armlab.training.backends.hf_export import char_tokenizer, tiny_model

    checkpoint = tmp_path / "hf"
    tiny_model(tiny_config["model"], 0).save_pretrained(checkpoint)
    char_tokenizer().save_pretrained(checkpoint)
    config = {**tiny_config, "eval": {**tiny_config["eval"], "samples": 3, "temperature": 1.0, "top_p": 0.95}}
    write_task_configs(config, tiny_experiment / "data", tmp_path / "tasks")
    one = evaluate(config, tmp_path / "tasks", checkpoint, "grpo", 1, tmp_path / "one", model="hf")
    assert (one.n_samples == 3).all() and list(one.columns) == COLUMNS
    logged = (tmp_path / "one" / "samples_armlab_add.jsonl").read_text()
    answers = [json.loads(line)["resps"][0] for line in logged.splitlines()]
    assert {len(a) for a in answers} == {3} and any(len(set(a)) > 1 for a in answers)  # sampled, not greedy
    two = evaluate(config, tmp_path / "tasks", checkpoint, "rloo", 1, tmp_path / "two", model="hf")
    pd.testing.assert_frame_equal(one.drop(columns="arm"), two.drop(columns="arm"))
    assert (tmp_path / "two" / "samples_armlab_add.jsonl").read_text() == logged
    manifest = json.loads((tmp_path / "one" / "manifest.json").read_text())
    assert manifest["sampling"]["how"].startswith("torch's generator seeded once per (experiment, seed)")
