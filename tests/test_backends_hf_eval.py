"""Evaluation plumbing shared by the trl and command backends: listed lm-eval tasks land in the tidy table."""

import pytest
import yaml
from conftest import TINY

from armlab.contract import COLUMNS
from evals.run import samples_to_scores
from training.config import ConfigError, load_config


def test_listed_lm_eval_tasks_are_scored_by_their_metric_and_filter():
    samples = {
        "armlab_add": [{"doc": {"domain": "math", "id": "add-1"}, "acc": 1.0}],
        "gsm8k": [
            {"doc_id": 0, "filter": "strict-match", "exact_match": 1.0},
            {"doc_id": 0, "filter": "flexible-extract", "exact_match": 0.0},
            {"doc_id": 1, "filter": "strict-match", "exact_match": 0.0},
        ],
    }
    spec = {"gsm8k": {"domain": "math", "metric": "exact_match", "filter": "strict-match"}}
    scores = samples_to_scores(samples, "exp", "grpo", 1, spec)
    assert list(scores.columns) == COLUMNS
    assert scores[["benchmark", "item", "score"]].values.tolist() == [
        ["add", "add-1", 1.0],
        ["gsm8k", "0", 1.0],
        ["gsm8k", "1", 0.0],
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
