"""A Hugging Face tokenizer and a tiny causal LM for the TRL backend, built locally (no hub).

The tokenizer is character-level over the builtin policy's ``VOCAB`` (training/policy.py): a ``tokenizers``
WordLevel model whose pre-tokenizer isolates every character and whose decoder fuses them back, wrapped in
``transformers.PreTrainedTokenizerFast``; EOS is the tasks' end-of-answer character. The model is a randomly
initialised ``Qwen2ForCausalLM`` sized by the experiment's ``model`` section (d_model, n_layer, n_head, max_len).
"""

from __future__ import annotations

from training.policy import EOS_ID, PAD_ID, VOCAB


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
