"""The lm-eval adapter and task configs, against a direct greedy evaluation of the same checkpoint."""

import json
import subprocess
import sys
from importlib import metadata
from types import SimpleNamespace

import lm_eval.evaluator
import numpy as np
import pandas as pd
import pytest
import torch
from lm_eval.loggers.utils import add_env_info

from armlab.contract import COLUMNS
from armlab.evals.lm_eval_adapter import BuiltinPolicyLM, cut_at, sample_uniforms
from armlab.evals.lm_eval_tasks import write_task_configs
from armlab.evals.run import evaluate
from armlab.training.data import load_eval_items
from armlab.training.policy import greedy_answers, load_model, pick_tokens, sampled_answers
from armlab.training.tasks import verify


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
    greedy = {"samples": 1, "temperature": 0.0, "pass_k": []}
    tiny_config = {**tiny_config, "eval": {**tiny_config["eval"], **greedy}}
    tasks = tmp_path / "tasks"
    write_task_configs(tiny_config, tiny_experiment / "data", tasks)
    scores = evaluate(tiny_config, tasks, tiny_experiment / "base" / "policy.pt", "base", 0, tmp_path / "out")
    assert list(scores.columns) == COLUMNS
    assert set(scores.benchmark) == set(tiny_config["benchmarks"])
    # lm-eval's keys, with the versions, but not torch's collect_env (subprocesses): the manifest records that
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["pretty_env_info"].startswith("not collected")
    assert results["lm_eval_version"] == metadata.version("lm_eval")
    assert lm_eval.evaluator.add_env_info is add_env_info, "lm-eval's own add_env_info is put back"
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["packages"]["torch"] == torch.__version__
    assert len(list((tmp_path / "out").glob("samples_armlab_*.jsonl"))) == len(tiny_config["benchmarks"])
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out" / "scores.parquet"), scores)
    model = load_model(tiny_experiment / "base" / "policy.pt")
    for bench, items in load_eval_items(tiny_experiment / "data").items():
        answers = greedy_answers(model, [i["prompt"] for i in items], tiny_config["eval"]["max_gen_toks"])
        expected = {i["id"]: verify(i["task"], i["answer"], a) for i, a in zip(items, answers)}
        got = scores[scores.benchmark == bench].set_index("item").score.to_dict()
        assert got == expected


def _requests(items, copies, **gen_kwargs):
    """lm-eval's view of a task with ``repeats: copies``: each item's request handed over ``copies`` times."""
    kwargs = {"until": ["\n"], "max_gen_toks": 5, "do_sample": True, "temperature": 1.0, **gen_kwargs}
    requests = [
        SimpleNamespace(args=(i["prompt"], kwargs), task_name=f"armlab_{i['benchmark']}", doc=i, doc_id=n)
        for n, i in enumerate(items)
    ]
    return [r for r in requests for _ in range(copies)]


def test_sampled_answers_are_keyed_by_item_and_sample_not_by_batch_or_order(tiny_experiment):
    items = [dict(i, benchmark=b) for b, rows in load_eval_items(tiny_experiment / "data").items() for i in rows[:6]]
    checkpoint = str(tiny_experiment / "base" / "policy.pt")
    lm = BuiltinPolicyLM(checkpoint, batch_size=7, stream="exp/seed-1")
    answers = lm.generate_until(_requests(items, 4))
    # another batch size and the requests in reverse order: each item's sample j is the same answer
    again = BuiltinPolicyLM(checkpoint, batch_size=512, stream="exp/seed-1").generate_until(_requests(items[::-1], 4))
    by_item = {(r.doc["id"], n % 4): a for n, (r, a) in enumerate(zip(_requests(items, 4), answers))}
    by_item_again = {(r.doc["id"], n % 4): a for n, (r, a) in enumerate(zip(_requests(items[::-1], 4), again))}
    assert by_item == by_item_again
    # the k copies of an item are k different draws, and another seed's stream draws other answers
    assert any(len({by_item[(i["id"], j)] for j in range(4)}) > 1 for i in items)
    other = BuiltinPolicyLM(checkpoint, batch_size=7, stream="exp/seed-2").generate_until(_requests(items, 4))
    assert other != answers
    # an answer is drawn from uniforms of its own key: the same as sampled_answers with those uniforms
    first = items[0]
    uniforms = np.stack([sample_uniforms("exp/seed-1", first["benchmark"], first["id"], j, 5) for j in range(4)])
    direct = sampled_answers(load_model(checkpoint), [first["prompt"]] * 4, 5, uniforms, 1.0)
    assert [cut_at(a, ["\n"]) for a in direct] == [by_item[(first["id"], j)] for j in range(4)]


def test_pick_tokens_samples_the_tempered_nucleus():
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0, -3.0]])
    uniforms = torch.rand(200_000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for temperature, top_p in [(1.0, 1.0), (0.5, 1.0), (1.0, 0.8)]:
        probs = torch.softmax(logits[0] / temperature, -1).double()
        keep = (probs.cumsum(0) - probs) < top_p  # sorted already: the nucleus by hand
        expected = (probs * keep / (probs * keep).sum()).numpy()
        drawn = pick_tokens(logits.expand(len(uniforms), -1), temperature, top_p, uniforms)
        frequency = np.bincount(drawn.numpy(), minlength=5) / len(uniforms)
        assert np.abs(frequency - expected).max() < 4 * np.sqrt(0.25 / len(uniforms))
        assert (frequency[~keep.numpy()] == 0).all()


def test_sampled_evaluation_through_lm_eval_repeats(tiny_config, tiny_experiment, tmp_path):
    config = {**tiny_config, "eval": {**tiny_config["eval"], "samples": 4, "temperature": 1.0, "pass_k": [1, 4]}}
    tasks = tmp_path / "tasks"
    write_task_configs(config, tiny_experiment / "data", tasks)
    checkpoint = tiny_experiment / "base" / "policy.pt"
    scores = evaluate(config, tasks, checkpoint, "grpo", 1, tmp_path / "one")
    assert (scores.n_samples == 4).all() and scores.n_correct.between(0, 4).all()
    np.testing.assert_array_equal(scores.score, scores.n_correct / 4)
    assert 0 < scores.score.mean() < 1 and ((scores.score > 0) & (scores.score < 1)).any()
    # the per-sample answers stay in the evaluation folder: k answers per item
    logged = [json.loads(line) for line in (tmp_path / "one" / "samples_armlab_add.jsonl").read_text().splitlines()]
    assert {len(s["resps"][0]) for s in logged} == {4} and {s["filter"] for s in logged} == {"samples"}
    items = {i["id"]: i for i in load_eval_items(tiny_experiment / "data")["add"]}
    for sample in logged[:5]:  # each avg@k is the mean of its answers' verdicts
        item = items[sample["doc"]["id"]]
        verdicts = [verify(item["task"], item["answer"], a) for a in sample["resps"][0]]
        assert sample["acc"] == np.mean(verdicts)
    # the same checkpoint evaluated again, as another arm of the same seed: identical samples and scores
    again = evaluate(config, tasks, checkpoint, "rloo", 1, tmp_path / "two")
    pd.testing.assert_frame_equal(scores.drop(columns="arm"), again.drop(columns="arm"))
    assert (tmp_path / "one" / "samples_armlab_add.jsonl").read_text() == (
        tmp_path / "two" / "samples_armlab_add.jsonl"
    ).read_text()
    manifest = json.loads((tmp_path / "one" / "manifest.json").read_text())
    assert manifest["sampling"]["samples"] == 4 and manifest["sampling"]["stream"] == "tiny/seed-1"
    other_seed = evaluate(config, tasks, checkpoint, "grpo", 2, tmp_path / "three")
    assert not other_seed.score.equals(scores.score)


def test_a_uniform_just_below_one_picks_inside_the_nucleus():
    """float32 would round 1 - 2**-26 up to the whole mass and fall through to the least probable token."""
    logits = torch.tensor([[5.0, 4.0, -20.0, -30.0]])
    token = pick_tokens(logits, 1.0, 0.9, torch.tensor([1 - 2**-26], dtype=torch.float64))
    assert token.item() in (0, 1)


@pytest.mark.workflow  # an evaluation job for real, through lm-eval's command line in a process of its own
def test_lm_evals_own_command_line_evaluates_the_builtin_policy(tiny_config, tiny_experiment, tmp_path):
    """`lm_eval run --model armlab-builtin` failed: lm-eval hands every model `device` and `batch_size` (its command
    line defaults: cuda:0, 1), and the adapter took neither (TypeError: unexpected keyword argument 'device');
    lm-eval's own command line cannot know the model either, so armlab's module runs it with the model registered."""
    greedy = {**tiny_config, "eval": {**tiny_config["eval"], "samples": 1, "temperature": 0.0, "pass_k": []}}
    tasks = tmp_path / "tasks"
    write_task_configs(greedy, tiny_experiment / "data", tasks)
    checkpoint = tiny_experiment / "base" / "policy.pt"
    direct = evaluate(greedy, tasks, checkpoint, "base", 0, tmp_path / "direct")
    argv = ["run", "--model", "armlab-builtin", "--model_args", f"checkpoint={checkpoint}", "--tasks", "armlab_add"]
    argv += ["--include_path", str(tasks), "--output_path", str(tmp_path / "cli"), "--log_samples"]
    proc = subprocess.run(
        [sys.executable, "-m", "armlab.evals.lm_eval_adapter", *argv], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (results,) = (tmp_path / "cli").rglob("results_*.json")
    accuracy = json.loads(results.read_text())["results"]["armlab_add"]["acc,none"]
    assert accuracy == direct[direct.benchmark == "add"].score.mean()
    assert "runs on the CPU" in proc.stderr  # the device lm-eval passed (cuda:0) is not used, and it says so


@pytest.mark.parametrize("samples", [1, 3])
def test_armlabs_own_evaluation_folders_read_back_through_the_lmeval_import(
    tiny_config, tiny_experiment, tmp_path, samples
):
    """An evaluation job's folder (results.json, samples_armlab_<benchmark>.jsonl) gives the workflow's own table
    through `input.kind: lmeval`, named as the workflow names them; before, it was refused (no results_*.json)."""
    from armlab.analysis.errors import AnalysisInputError
    from armlab.analysis.inputs.lmeval import lmeval_to_tidy

    sampling = {"samples": samples, "temperature": 0.0 if samples == 1 else 1.0, "pass_k": []}
    config = {**tiny_config, "eval": {**tiny_config["eval"], **sampling}}
    tasks = tmp_path / "tasks"
    write_task_configs(config, tiny_experiment / "data", tasks)
    checkpoint = tiny_experiment / "base" / "policy.pt"
    runs = [("grpo", seed, tmp_path / f"seed-{seed}") for seed in (1, 2)]
    workflow = pd.concat([evaluate(config, tasks, checkpoint, arm, seed, out) for arm, seed, out in runs])
    benchmarks = {name: spec["domain"] for name, spec in config["benchmarks"].items()}
    metric = "acc,none" if samples == 1 else "acc,samples"
    read = lmeval_to_tidy(runs, experiment=config["experiment"], benchmarks=benchmarks, metric=metric)
    key = ["seed", "benchmark", "item"]
    pd.testing.assert_frame_equal(
        read.sort_values(key).reset_index(drop=True),
        workflow.sort_values(key).reset_index(drop=True),
        check_dtype=False,
    )
    assert workflow.n_samples.eq(samples).all()
    # a sample of armlab's task without armlab's item id is named, file and line
    log = tmp_path / "seed-2" / "samples_armlab_add.jsonl"
    lines = log.read_text().splitlines()
    first = json.loads(lines[0])
    del first["doc"]["id"]
    log.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    with pytest.raises(AnalysisInputError, match=r"samples_armlab_add\.jsonl line 1: no doc\.id"):
        lmeval_to_tidy(runs, experiment=config["experiment"], benchmarks=benchmarks, metric=metric)
