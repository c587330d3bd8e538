"""vLLM as the evaluation engine of Hugging Face checkpoints (eval.engine: vllm), in its own environment.

The tests that generate need `make vllm` (.venv-vllm, about 3.5 GB) and skip without it, saying so; the checks of
configs and errors run everywhere."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from armlab import experiment
from armlab.configfile import ConfigError
from armlab.evals.engines import DEFAULT_PYTHON, missing_engine
from armlab.evals.generation import answer_seed
from armlab.files import BadFile

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = REPO / DEFAULT_PYTHON
needs_vllm = pytest.mark.skipif(
    missing_engine(VLLM_PYTHON) is not None,
    reason=f"no vLLM environment at {DEFAULT_PYTHON}: `make vllm` installs it (about 3.5 GB); vLLM tests skipped",
)
TINY = REPO / "tests" / "fixtures" / "tiny.yaml"
# the tiny experiment with a model vLLM's CPU attention serves (head size 32; it refuses 16)
MODEL = {"d_model": 64, "n_layer": 1, "n_head": 2, "max_len": 32}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A trained builtin base policy (head size 32) exported to a Hugging Face checkpoint (armlab_char)."""
    from armlab.experiment.validate import load_config
    from armlab.training import base, data
    from armlab.training.backends.hf_export import export_policy

    config = load_config([TINY], {"model": MODEL, "base": {"steps": 300, "batch_size": 32, "lr": 0.01}})
    root = tmp_path_factory.mktemp("vllm")
    data.write(config, root / "data")
    base.train_base(config, root / "data", root / "base")
    return config, root, export_policy(root / "base" / "policy.pt", root / "base_hf")


def _requests(prompts, copies=1, **gen_kwargs):
    kwargs = {"until": ["\n"], "max_gen_toks": 5, **gen_kwargs}
    return [
        SimpleNamespace(args=(p, kwargs), task_name="armlab_add", doc={"id": f"add-{p}"}, doc_id=n)
        for n, p in enumerate(prompts)
        for _ in range(copies)
    ]


def _by_answer(prompts, copies, answers):
    """Answers keyed by (item, sample j): lm-eval's j-th copy of an item's request is its sample j."""
    keys = [(p, j) for p in prompts for j in range(copies)]
    return dict(zip(keys, answers))


PROMPTS = [f"{a}+{b}=" for a in range(10) for b in range(0, 10, 3)]


@pytest.mark.vllm
@needs_vllm
def test_same_seed_answers_are_identical_across_runs_and_batch_orders(exported):
    from armlab.evals.vllm_engine import VllmLM

    _, _, checkpoint = exported
    lm = VllmLM(str(checkpoint), python=str(VLLM_PYTHON), stream="exp/seed-1")
    sampled = {"do_sample": True, "temperature": 1.0}
    requests = _requests(PROMPTS, copies=3, **sampled)
    first, second = lm.generate_until(requests), lm.generate_until(requests)
    assert first == second  # another run: the same answers
    backwards = lm.generate_until(_requests(PROMPTS[::-1], copies=3, **sampled))
    by_answer = _by_answer(PROMPTS, 3, first)
    assert _by_answer(PROMPTS[::-1], 3, backwards) == by_answer  # the items in another order and batch
    assert any(len({by_answer[(p, j)] for j in range(3)}) > 1 for p in PROMPTS)  # 3 copies, 3 draws
    other_seed = VllmLM(str(checkpoint), python=str(VLLM_PYTHON), stream="exp/seed-2").generate_until(requests)
    assert other_seed != first


@pytest.mark.vllm
@needs_vllm
def test_vllm_greedy_answers_are_the_hugging_face_models(exported):
    """The armlab_char checkpoint served as GPT-2 by vLLM answers greedily as transformers' generate does."""
    import torch
    from transformers import AutoModelForCausalLM

    import armlab.training.backends.hf_char  # noqa: F401 (registers armlab_char)
    from armlab.evals.vllm_engine import VllmLM
    from armlab.training.backends.hf_export import char_tokenizer
    from armlab.training.data import load_eval_items

    _, root, checkpoint = exported
    prompts = [item["prompt"] for items in load_eval_items(root / "data").values() for item in items[:10]]
    vllm_answers = VllmLM(str(checkpoint), python=str(VLLM_PYTHON)).generate_until(_requests(prompts))
    model, tokenizer = AutoModelForCausalLM.from_pretrained(str(checkpoint)).eval(), char_tokenizer()
    hf_answers = []
    with torch.no_grad():
        for prompt in prompts:
            ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
            out = model.generate(ids, max_new_tokens=5, do_sample=False)[0, ids.shape[1] :]
            hf_answers.append(tokenizer.decode(out, skip_special_tokens=False).split("\n")[0])
    assert vllm_answers == hf_answers
    assert len(set(hf_answers)) > 5  # answers of every task family, not one repeated string


@pytest.mark.vllm
@needs_vllm
def test_an_evaluation_through_vllm_writes_the_same_tables(exported, tmp_path):
    """evaluate() with eval.engine vllm: scores, per-answer verdicts with votes, and the manifest says how."""
    from armlab.evals.lm_eval_tasks import write_task_configs
    from armlab.evals.run import engine_model, evaluate

    config, root, checkpoint = exported
    config = {**config, "eval": {**config["eval"], "samples": 3, "engine": "vllm", "vllm_python": str(VLLM_PYTHON)}}
    write_task_configs(config, root / "data", tmp_path / "tasks")
    model = engine_model(config, "hf")
    assert model == "armlab-vllm"
    scores = evaluate(config, tmp_path / "tasks", checkpoint, "grpo", 1, tmp_path / "out", model=model)
    assert set(scores.benchmark) == set(config["benchmarks"]) and (scores.n_samples == 3).all()
    answers = pd.read_parquet(tmp_path / "out" / "answers.parquet")
    assert len(answers) == 3 * len(scores)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["lm_eval_model"] == "armlab-vllm" and "one seed per" in manifest["sampling"]["how"]
    # the same evaluation as another arm of the same seed draws the same answers from the same checkpoint
    again = evaluate(config, tmp_path / "tasks", checkpoint, "other_arm", 1, tmp_path / "again", model=model)
    pd.testing.assert_frame_equal(scores.drop(columns="arm"), again.drop(columns="arm"))


@pytest.mark.vllm
@needs_vllm
def test_a_prompt_beyond_the_context_and_a_worker_failure_are_one_line_errors(exported, tmp_path):
    from armlab.evals.vllm_engine import VllmLM

    _, root, checkpoint = exported
    lm = VllmLM(str(checkpoint), python=str(VLLM_PYTHON))
    with pytest.raises(
        BadFile, match=r"eval\.engine vllm: add item add-1\+1=1\+1=.*: its prompt of 40 tokens and 5 new ones"
    ):
        lm.generate_until(_requests(["1+1=" * 10]))
    # vLLM's CPU attention refuses a head size of 16: its own words, in one line
    narrow = tmp_path / "narrow"
    shutil.copytree(checkpoint, narrow)
    settings = json.loads((narrow / "config.json").read_text())
    (narrow / "config.json").write_text(json.dumps({**settings, "n_head": 4}))
    with pytest.raises(BadFile, match=r"eval\.engine vllm: vllm_worker: .*head_dim=16") as error:
        VllmLM(str(narrow), python=str(VLLM_PYTHON)).generate_until(_requests(PROMPTS[:2]))
    assert "\n" not in str(error.value)


def test_vllm_without_its_environment_is_refused_before_any_job(tmp_path):
    """The workflow's start refuses eval.engine vllm without the environment, saying how to install it, and
    refuses it where no arm has a Hugging Face checkpoint to serve."""
    trl = {
        "backend": "trl",
        "arms": {"difffilter": {"data_policy": "uniform", "lr": 0.001}},  # TRL has no difffilter
        "eval": {"engine": "vllm", "vllm_python": str(tmp_path / "nowhere" / "python")},
    }
    path = tmp_path / "trl.yaml"
    path.write_text(json.dumps(trl))
    with pytest.raises(ConfigError, match=r"eval\.engine: vllm: no vLLM environment at .*nowhere/python: .*make vllm"):
        experiment.load([TINY, path])
    path.write_text(json.dumps({"eval": {"engine": "vllm"}}))
    with pytest.raises(ConfigError, match=r"eval\.engine: vllm serves Hugging Face checkpoints .* builtin policy"):
        experiment.load([TINY, path])


def test_the_vllm_model_without_its_environment_says_how_to_install_it(tmp_path):
    from armlab.evals.vllm_engine import VllmLM

    with pytest.raises(BadFile, match=r"eval\.engine vllm: no vLLM environment at .*: .*`make vllm"):
        VllmLM(str(tmp_path), python=str(tmp_path / "python"))


def test_answer_seeds_depend_on_the_answer_not_the_arm():
    seeds = {answer_seed("exp/seed-1", "add", f"add-{i}", j) for i in range(50) for j in range(4)}
    assert len(seeds) == 200 and all(0 <= s < 2**63 for s in seeds)
    assert answer_seed("exp/seed-1", "add", "add-0", 0) != answer_seed("exp/seed-2", "add", "add-0", 0)


def test_the_worker_refuses_a_request_without_its_own_seed(tmp_path):
    """vLLM's CPU build loses a seeded request's determinism when it is batched with an unseeded one (vLLM issue
    51226): the worker refuses such a job before it imports vLLM, so the check runs without vLLM's environment."""
    import subprocess
    import sys

    request = {"prompt": "1+1=", "max_tokens": 3, "temperature": 1.0, "top_p": 1.0, "stop": ["\n"], "seed": 7}
    for unseeded in (
        {k: v for k, v in request.items() if k != "seed"},
        {**request, "seed": None},
        {**request, "seed": True},
    ):
        job = tmp_path / "job.json"
        job.write_text(json.dumps({"model": str(tmp_path), "requests": [request, unseeded]}))
        worker = REPO / "evals" / "vllm_worker.py"
        proc = subprocess.run(
            [sys.executable, str(worker), str(job), str(tmp_path / "out.jsonl")], capture_output=True, text=True
        )
        assert proc.returncode == 2
        assert proc.stderr.startswith("vllm_worker: ValueError: request 1 has no integer seed")
        assert "vLLM issue 51226" in proc.stderr and not (tmp_path / "out.jsonl").exists()


@pytest.mark.vllm
@needs_vllm
def test_a_seeded_answer_is_the_same_alone_as_batched_with_others(exported):
    """The vLLM case of issue 51226 pinned: one request's answer alone equals its answer among other requests."""
    from armlab.evals.vllm_engine import VllmLM

    _, _, checkpoint = exported
    lm = VllmLM(str(checkpoint), python=str(VLLM_PYTHON), stream="exp/seed-1")
    sampled = {"do_sample": True, "temperature": 1.0}
    alone = lm.generate_until(_requests(PROMPTS[:1], **sampled))
    batched = lm.generate_until(_requests(PROMPTS, **sampled))
    assert alone == batched[:1]
