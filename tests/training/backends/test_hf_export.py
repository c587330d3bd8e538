"""The builtin base policy as a Hugging Face causal LM (training/backends/hf_export.py, hf_char.py): the same
logits through every call path TRL and lm-eval use, the same greedy answers, an atomic export, the
``trl.model: builtin_base`` switch, and a short TRL run from the export that learns."""

import importlib.util
import json
import os
import re

import pytest
import torch
import yaml
from conftest import TINY, job_counts, snakemake_dry_run

from armlab.configfile import ConfigError
from armlab.experiment.validate import load_config

# found, not imported: transformers (2 s to import) is loaded by the tests that read an export, in their worker
if importlib.util.find_spec("trl") is None:
    if os.environ.get("CI") == "true":
        raise ImportError("trl is not installed")
    pytest.skip("HF export tests skipped: trl is not installed (they always run in CI)", allow_module_level=True)

from armlab.contract import BUILTIN_BASE  # noqa: E402
from armlab.training.backends import BACKENDS  # noqa: E402
from armlab.training.backends.hf_export import EXPORT_DIR, export_policy  # noqa: E402
from armlab.training.policy import completion_logprobs, greedy_answers, left_pad, load_model  # noqa: E402

TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def exported(tiny_experiment, tmp_path_factory):
    """The tiny experiment's trained base policy, its export, loaded back through the Auto classes."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path_factory.mktemp("export") / "base_hf"
    path = export_policy(tiny_experiment / "base" / "policy.pt", out)
    policy = load_model(tiny_experiment / "base" / "policy.pt").eval()
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    return policy, model, AutoTokenizer.from_pretrained(path), out


def _prompts(tiny_experiment) -> list[str]:
    """Real task prompts of every benchmark, of different lengths (so batches are left-padded)."""
    from armlab.training.data import load_pools

    pools = load_pools(tiny_experiment / "data")
    prompts = [item["prompt"] for pool in pools.values() for item in pool[:12]]
    assert len({len(p) for p in prompts}) >= 4
    return prompts


def test_export_is_the_registered_architecture_with_the_builtin_vocabulary(exported):
    from armlab.training.policy import VOCAB

    policy, model, tokenizer, out = exported
    assert type(model).__name__ == "ArmlabCharForCausalLM" and model.config.model_type == "armlab_char"
    assert model.config.vocab_size == len(VOCAB) == model.lm_head.out_features  # no logit for <unk>
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in policy.parameters())
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["checkpoint"] == str((out / EXPORT_DIR).resolve()) and manifest["files"]
    assert all(name.startswith(f"{EXPORT_DIR}/") for name in manifest["files"])
    # the base arm's evaluation names the export by this manifest (evals/run.py --run-manifest), which checks it
    from argparse import Namespace

    from armlab.evals.run import checkpoint_to_evaluate

    named = Namespace(checkpoint=None, hf_checkpoint=None, run_manifest=out / "manifest.json")
    assert checkpoint_to_evaluate(named) == (out / EXPORT_DIR).resolve()


def test_logits_equal_the_builtins_on_left_padded_task_prompts(exported, tiny_experiment):
    """TRL's and lm-eval's calls pass no position_ids; positions must still count real tokens only."""
    policy, model, tokenizer, _ = exported
    prompts = _prompts(tiny_experiment)
    ids, valid = left_pad(prompts)
    with torch.no_grad():
        reference = policy(ids, valid)
        encoded = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        assert torch.equal(encoded.input_ids, ids) and torch.equal(encoded.attention_mask.bool(), valid)
        with_mask = model(input_ids=encoded.input_ids, attention_mask=encoded.attention_mask).logits
        without_mask = model(encoded.input_ids).logits  # lm-eval's _model_call: ids only
        kept = model(input_ids=ids, attention_mask=valid.long(), logits_to_keep=3).logits
    assert torch.isfinite(with_mask).all() and torch.isfinite(without_mask).all()  # padded queries too
    for logits in (with_mask, without_mask):
        assert (logits - reference).abs()[valid].max() <= TOLERANCE
    assert (kept - reference[:, -3:]).abs().max() <= TOLERANCE
    # GPT-2's own arange positions would see the padded prompts shifted: the test can tell them apart
    shifted = model(input_ids=ids, attention_mask=valid.long(), position_ids=torch.arange(ids.shape[1])[None]).logits
    assert (shifted - reference).abs()[valid].max() > 1e-2


def test_trls_log_probability_pass_equals_the_builtins(exported, tiny_experiment):
    """GRPOTrainer scores completions through its fused LM head, which calls the backbone directly."""
    from trl.trainer.utils import add_fused_lm_head

    policy, model, tokenizer, _ = exported
    prompts = _prompts(tiny_experiment)[:24]
    prompt_ids, prompt_valid = left_pad(prompts)
    generator = torch.Generator().manual_seed(0)
    tokens, token_mask = policy.generate(prompt_ids, prompt_valid, 5, generator=generator)
    reference, _ = completion_logprobs(policy, prompt_ids, prompt_valid, tokens, token_mask)
    ids, mask = torch.cat([prompt_ids, tokens], 1), torch.cat([prompt_valid, token_mask], 1).long()
    from transformers import AutoModelForCausalLM

    fused = AutoModelForCausalLM.from_pretrained(exported[3] / EXPORT_DIR).eval()
    add_fused_lm_head(fused)
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, : -tokens.shape[1]] = -100
    with torch.no_grad():
        logps = fused(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True).log_probs
        logits = model(input_ids=ids, attention_mask=mask, logits_to_keep=tokens.shape[1] + 1).logits[:, :-1]
    from_logits = torch.log_softmax(logits, -1).gather(-1, tokens[..., None]).squeeze(-1)
    real = token_mask
    assert (logps[:, -tokens.shape[1] :] - reference).abs()[real].max() <= TOLERANCE
    assert (from_logits - reference).abs()[real].max() <= TOLERANCE


def test_greedy_generation_with_the_kv_cache_equals_the_builtins(exported, tiny_experiment):
    policy, model, tokenizer, _ = exported
    prompts = _prompts(tiny_experiment)
    expected = greedy_answers(policy, prompts, 5)
    encoded = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(
            **encoded, max_new_tokens=5, do_sample=False, output_logits=True, return_dict_in_generate=True
        )
    width = encoded.input_ids.shape[1]
    answers = [text.split(tokenizer.eos_token)[0] for text in tokenizer.batch_decode(out.sequences[:, width:])]
    assert answers == expected
    # every step's logits (from the cache) equal the builtin's full forward pass over prompt + answer so far
    sequences = out.sequences
    valid = torch.ones_like(sequences, dtype=torch.bool)
    valid[:, :width] = encoded.attention_mask.bool()
    finished = torch.zeros(len(prompts), dtype=torch.bool)
    with torch.no_grad():
        reference = policy(sequences, valid)
    for step, logits in enumerate(out.logits):
        live = ~finished
        assert (logits[live] - reference[live, width - 1 + step]).abs().max() <= TOLERANCE
        finished |= sequences[:, width + step] == tokenizer.eos_token_id


def test_lm_eval_hf_model_scores_the_export_as_the_builtin_model_scores_the_policy(
    exported, tiny_config, tiny_experiment, tmp_path
):
    """Greedy evaluation in lm-eval's ``hf`` model (the base arm under builtin_base) gives the builtin's scores."""
    import pandas as pd

    from armlab.evals.lm_eval_tasks import write_task_configs
    from armlab.evals.run import evaluate

    config = {**tiny_config, "eval": {**tiny_config["eval"], "samples": 1, "temperature": 0.0, "pass_k": [1]}}
    write_task_configs(config, tiny_experiment / "data", tmp_path / "tasks")
    builtin = evaluate(config, tmp_path / "tasks", tiny_experiment / "base" / "policy.pt", "base", 0, tmp_path / "b")
    hf = evaluate(config, tmp_path / "tasks", exported[3] / EXPORT_DIR, "base", 0, tmp_path / "h", model="hf")
    pd.testing.assert_frame_equal(builtin, hf)
    assert 0 < builtin.score.mean() < 1  # a partly right base: equal scores are not all zeros


def test_a_character_outside_the_vocabulary_fails_loudly(exported):
    _, model, tokenizer, _ = exported
    encoded = tokenizer(["1+2=", "1@2="], return_tensors="pt", padding=True)
    with pytest.raises(ValueError, match=r"token id 82 is outside the policy's vocabulary of 82 characters"):
        model(**encoded)


def test_the_export_is_written_atomically(tiny_experiment, tmp_path, monkeypatch):
    from transformers import PreTrainedTokenizerFast

    policy = tiny_experiment / "base" / "policy.pt"
    out = tmp_path / "base_hf"
    export_policy(policy, out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed while writing the tokenizer")

    monkeypatch.setattr(PreTrainedTokenizerFast, "save_pretrained", killed)
    with pytest.raises(KeyboardInterrupt):
        export_policy(policy, out)
    # the complete earlier export is untouched, and nothing half-written is left beside it
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["base_hf"]
    monkeypatch.undo()
    fresh = tmp_path / "fresh"
    monkeypatch.setattr(PreTrainedTokenizerFast, "save_pretrained", killed)
    with pytest.raises(KeyboardInterrupt):
        export_policy(policy, fresh)
    assert not fresh.exists() and [p.name for p in tmp_path.iterdir()] == ["base_hf"]


def _trl_config(tmp_path, **trl):
    config = yaml.safe_load(TINY.read_text())
    config.update(
        backend="trl",
        arms={"grpo": {}, "dr_grpo": {"estimator": "dr_grpo"}},
        comparisons=[{"family": "estimators", "reference": "grpo", "arms": ["dr_grpo"]}],
        trl=trl,
    )
    path = tmp_path / "trl.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_trl_model_switch(tmp_path, exported):
    config = load_config([_trl_config(tmp_path, model=BUILTIN_BASE)])
    backend = BACKENDS["trl"]
    assert backend.exports_base(config) and backend.base_checkpoint(config) is None
    assert backend.reads_for(config) == ("data", "hf_base")
    checkpoint = str(exported[3] / EXPORT_DIR)
    local = load_config([_trl_config(tmp_path, model=checkpoint)])
    assert not backend.exports_base(local) and backend.base_checkpoint(local) == checkpoint
    assert backend.reads_for(local) == ("data",)
    assert BACKENDS["builtin"].reads_for(load_config([TINY])) == ("data", "base")
    for bad in ("builtin-base", str(tmp_path / "missing"), "Qwen/Qwen2.5-0.5B"):
        with pytest.raises(ConfigError, match=rf"trl\.yaml: trl\.model: '{re.escape(bad)}' is neither 'builtin_base'"):
            load_config([_trl_config(tmp_path, model=bad)])
    with pytest.raises(ConfigError, match=r"trl\.model"):
        load_config([_trl_config(tmp_path, model="")])
    from armlab.training.backends.trl_backend import load_start

    with pytest.raises(ValueError, match=r"trl\.model: builtin_base needs the exported base policy \(--hf_base"):
        load_start(config, 0)


def test_snakemake_dag_of_trl_from_the_builtin_base(tmp_path):

    config = _trl_config(tmp_path, model=BUILTIN_BASE)
    dry = snakemake_dry_run(tmp_path, config, "results/tiny/scores.parquet")
    counts = job_counts(dry.stdout + dry.stderr)
    # the sampled base is evaluated at both seeds, beside the 4 runs
    assert (counts["base_policy"], counts["export_base"], counts["train"], counts["evaluate"]) == (1, 1, 4, 6)
    assert "--policy results/tiny/base/policy.pt --out results/tiny/base_hf" in dry.stdout
    starts = re.findall(r"trl_backend .*--data results/tiny/data --hf_base results/tiny/base_hf/model", dry.stdout)
    assert len(starts) == 4
    assert "--model hf --run-manifest results/tiny/base_hf/manifest.json --arm base --seed 1" in dry.stdout


@pytest.mark.workflow  # a whole training job, run for real
def test_a_short_trl_run_from_the_exported_base_learns(tmp_path):
    """GRPOTrainer from the exported base on one-digit addition: the expected reward rises well past noise."""
    from armlab.experiment.stages import stage_config
    from armlab.training import base, data
    from armlab.training.backends import trl_backend
    from armlab.training.data import load_pools
    from armlab.training.recipe import resolve_arm
    from armlab.training.rollouts import score

    raw = yaml.safe_load(_trl_config(tmp_path, model=BUILTIN_BASE).read_text())
    raw["benchmarks"] = {"add": {"domain": "math", "n_items": 20, "params": {"digits": 1}}}
    raw["recipe"].update(steps=100, prompts_per_step=16, group_size=8, lr=0.001, log_every=10)
    (tmp_path / "learn.yaml").write_text(yaml.safe_dump(raw))
    config = load_config([tmp_path / "learn.yaml"])
    data.write(config, tmp_path / "data")
    base.train_base(config, tmp_path / "data", tmp_path / "base")
    start = export_policy(tmp_path / "base" / "policy.pt", tmp_path / "base_hf")
    trl_backend.train(stage_config(config, "train", "grpo"), "grpo", 1, tmp_path / "data", tmp_path / "run", start)
    items = [item for pool in load_pools(tmp_path / "data").values() for item in pool]
    samples, recipe = 8, resolve_arm(config, "grpo")  # the verifier's plain verdict: no noise, no length bonus

    def expected_reward(path) -> float:
        """Mean verifier reward of 8 answers per training prompt, sampled at temperature 1 (fixed seed)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model, tokenizer = AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
        encoded = tokenizer([item["prompt"] for item in items], return_tensors="pt", padding=True)
        torch.manual_seed(0)
        with torch.no_grad():
            out = model.generate(
                **encoded, do_sample=True, temperature=1.0, top_k=0, max_new_tokens=5, num_return_sequences=samples
            )
        texts = tokenizer.batch_decode(out[:, encoded.input_ids.shape[1] :], skip_special_tokens=True)
        rewards = [
            score(items[k // samples]["task"], items[k // samples]["answer"], "", text, recipe, 1)
            for k, text in enumerate(texts)
        ]
        return sum(rewards) / len(rewards)

    before, after = expected_reward(start), expected_reward(tmp_path / "run" / "model")
    # 80 prompts × 8 answers: the sampling error of the difference is about 0.03; the run gains about 0.14
    assert after - before >= 0.08, (before, after)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["start"] == str(start.resolve())
