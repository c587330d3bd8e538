"""A Hugging Face tokenizer and a tiny causal LM for the TRL backend, built locally (no hub).

The tokenizer is character-level over the builtin policy's ``VOCAB`` (training/policy.py): a ``tokenizers``
WordLevel model whose pre-tokenizer isolates every character and whose decoder fuses them back, wrapped in
``transformers.PreTrainedTokenizerFast``; EOS is the tasks' end-of-answer character. The model is a randomly
initialised ``Qwen2ForCausalLM`` sized by the experiment's ``model`` section (d_model, n_layer, n_head, max_len).

:func:`export_policy` converts a trained builtin policy (``policy.pt``) to a Hugging Face checkpoint of the
registered ``armlab_char`` model (training/backends/hf_char.py, GPT-2's architecture with the builtin's
positions) with this tokenizer: its logits equal the builtin's (tests/training/backends/test_hf_export.py). The
workflow runs it on the base policy when ``trl.model: builtin_base`` (rule export_base):

    python -m armlab.training.backends.hf_export --policy results/<exp>/base/policy.pt --out results/<exp>/base_hf
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from armlab import numerics
from armlab.training.policy import EOS_ID, PAD_ID, VOCAB

EXPORT_DIR = "model"  # the checkpoint inside the export's directory, beside its manifest.json


def char_tokenizer():
    """A ``PreTrainedTokenizerFast`` with one token per character of ``VOCAB``."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    unk = "<unk>"
    vocab = {ch: i for i, ch in enumerate(VOCAB)} | {unk: len(VOCAB)}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token=unk, pad_token=VOCAB[PAD_ID], eos_token=VOCAB[EOS_ID], padding_side="left"
    )


def tiny_model(model_config: dict, seed: int, intermediate_size: int | None = None):
    """A randomly initialised Qwen2 causal LM with the builtin policy's width, depth, heads and context.

    ``intermediate_size`` (default 4 × d_model) sets the MLP width, e.g. to match a parameter count.
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(VOCAB) + 1,
        hidden_size=model_config["d_model"],
        intermediate_size=intermediate_size or 4 * model_config["d_model"],
        num_hidden_layers=model_config["n_layer"],
        num_attention_heads=model_config["n_head"],
        num_key_value_heads=model_config["n_head"],
        max_position_embeddings=model_config["max_len"],
        tie_word_embeddings=True,
        pad_token_id=PAD_ID,
        eos_token_id=EOS_ID,
        bos_token_id=None,
    )
    return Qwen2ForCausalLM(config)


def convert_policy(policy):
    """The ``armlab_char`` causal LM with the weights of a builtin ``CharTransformer`` (same logits)."""
    import torch

    from armlab.training.backends.hf_char import ArmlabCharConfig, ArmlabCharForCausalLM

    cfg = policy.cfg
    if cfg.vocab_size != len(VOCAB):
        raise ValueError(f"policy vocabulary of {cfg.vocab_size} tokens, expected len(VOCAB) = {len(VOCAB)}")
    config = ArmlabCharConfig(
        n_embd=cfg.d_model,
        n_layer=cfg.n_layer,
        n_head=cfg.n_head,
        n_positions=cfg.max_len,
        n_inner=4 * cfg.d_model,
        activation_function="gelu",  # exact (erf) GELU, as nn.GELU()
        layer_norm_epsilon=1e-5,
    )
    model = ArmlabCharForCausalLM(config)
    source = policy.state_dict()
    # GPT-2's Conv1D stores (in, out): the builtin's nn.Linear weights transposed
    weights = {
        "transformer.wte.weight": source["tok.weight"],
        "transformer.wpe.weight": source["pos.weight"],
        "transformer.ln_f.weight": source["ln_f.weight"],
        "transformer.ln_f.bias": source["ln_f.bias"],
        "lm_head.weight": source["head.weight"],
    }
    for i in range(cfg.n_layer):
        b, h = f"blocks.{i}.", f"transformer.h.{i}."
        for ours, theirs in (("ln1", "ln_1"), ("ln2", "ln_2")):
            weights[f"{h}{theirs}.weight"] = source[f"{b}{ours}.weight"]
            weights[f"{h}{theirs}.bias"] = source[f"{b}{ours}.bias"]
        linears = (("qkv", "attn.c_attn"), ("proj", "attn.c_proj"), ("mlp.0", "mlp.c_fc"), ("mlp.2", "mlp.c_proj"))
        for ours, theirs in linears:
            weights[f"{h}{theirs}.weight"] = source[f"{b}{ours}.weight"].t().contiguous()
            weights[f"{h}{theirs}.bias"] = source[f"{b}{ours}.bias"]
    expected = {k for k in model.state_dict() if not k.endswith(".attn.bias") and not k.endswith(".masked_bias")}
    if set(weights) != expected:
        raise RuntimeError(f"weight mapping out of date: {sorted(set(weights) ^ expected)}")
    with torch.no_grad():
        model.load_state_dict(weights, strict=False)
    model.generation_config.pad_token_id, model.generation_config.eos_token_id = PAD_ID, EOS_ID
    return model.eval()


def export_policy(
    policy_path: str | Path, out_dir: str | Path, threads: int = 1, numerics_mode: str = numerics.DEFAULT_MODE
) -> Path:
    """Write ``out_dir`` atomically: the HF checkpoint of the builtin policy ``policy_path`` in ``model/`` (the
    ``armlab_char`` model and the character tokenizer) and a ``manifest.json`` with their sha256 and the source's."""

    from armlab.files import atomic_path, environment_record, file_sha256, write_manifest
    from armlab.training.policy import load_model

    numerics.start(numerics_mode, threads, strict=False)
    start, out_dir = time.perf_counter(), Path(out_dir)
    model = convert_policy(load_model(policy_path))
    with atomic_path(out_dir) as tmp:
        model.save_pretrained(tmp / EXPORT_DIR)
        char_tokenizer().save_pretrained(tmp / EXPORT_DIR)
        write_manifest(
            tmp,
            {
                "source": str(Path(policy_path).resolve()),
                "source_sha256": file_sha256(policy_path),
                "checkpoint": str((out_dir / EXPORT_DIR).resolve()),
                "model_type": model.config.model_type,
                "seconds": time.perf_counter() - start,
                **environment_record(threads, numerics_mode),
            },
            EXPORT_DIR,
        )
    return out_dir / EXPORT_DIR


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Export a builtin policy to a Hugging Face checkpoint")
    parser.add_argument("--policy", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--numerics", choices=numerics.MODES, default=numerics.DEFAULT_MODE)
    args = parser.parse_args(argv)
    numerics.start(args.numerics, args.threads)  # before any torch operation, checked
    export_policy(args.policy, args.out, args.threads, args.numerics)


if __name__ == "__main__":
    main()
