"""The lm-eval adapter and task configs, against a direct greedy evaluation of the same checkpoint."""

from types import SimpleNamespace

import pandas as pd

from armlab.contract import COLUMNS
from evals.lm_eval_adapter import BuiltinPolicyLM, cut_at
from evals.lm_eval_tasks import write_task_configs
from evals.run import evaluate
from training.data import load_eval_items
from training.policy import greedy_answers, load_model
from training.tasks import verify


def test_cut_at_until_strings():
    assert cut_at("42\nmore", ["\n"]) == "42"
    assert cut_at("42;x\ny", ["\n", ";"]) == "42"
    assert cut_at("42", []) == "42"


def test_generate_until_is_greedy_and_cut(tiny_experiment):
    lm = BuiltinPolicyLM(str(tiny_experiment / "base" / "policy.pt"), batch_size=4, max_gen_toks=5)
    prompts = ["3+4=", "T&F|T&T|F=", "12km>m=", "9+9="]
    requests = [SimpleNamespace(args=(p, {"until": ["\n"], "max_gen_toks": 5})) for p in prompts]
    direct = greedy_answers(load_model(tiny_experiment / "base" / "policy.pt"), prompts, 5)
    assert lm.generate_until(requests) == direct
    # a stop string that lm-eval asks for cuts the text even inside the policy's answer
    cut = lm.generate_until(
        [SimpleNamespace(args=(p, {"until": [d[:1]] if d else []})) for p, d in zip(prompts, direct)]
    )
    assert cut == ["" if d else d for d in direct]


def test_simple_evaluate_matches_a_direct_evaluation(tiny_config, tiny_experiment, tmp_path):
    tasks = tmp_path / "tasks"
    write_task_configs(tiny_config, tiny_experiment / "data", tasks)
    scores = evaluate(tiny_config, tasks, tiny_experiment / "base" / "policy.pt", "base", 0, tmp_path / "out")
    assert list(scores.columns) == COLUMNS
    assert set(scores.benchmark) == set(tiny_config["benchmarks"])
    assert (tmp_path / "out" / "results.json").exists()
    assert len(list((tmp_path / "out").glob("samples_armlab_*.jsonl"))) == len(tiny_config["benchmarks"])
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out" / "scores.parquet"), scores)
    model = load_model(tiny_experiment / "base" / "policy.pt")
    for bench, items in load_eval_items(tiny_experiment / "data").items():
        answers = greedy_answers(model, [i["prompt"] for i in items], tiny_config["eval"]["max_gen_toks"])
        expected = {i["id"]: verify(i["task"], i["answer"], a) for i, a in zip(items, answers)}
        got = scores[scores.benchmark == bench].set_index("item").score.to_dict()
        assert got == expected
