"""The builtin policy's architecture as a registered Hugging Face causal LM (model type ``armlab_char``).

``CharTransformer`` (training/policy.py) is GPT-2's architecture: token + learned absolute position embeddings,
pre-LN blocks with a fused qkv projection, an exact-GELU MLP of width 4 × d_model, a final LayerNorm and an
untied head without bias. :class:`ArmlabCharForCausalLM` is ``GPT2LMHeadModel`` with dropout off and one
difference in the backbone, :class:`ArmlabCharModel`: positions count real tokens only, as the builtin's do.
When a caller gives no ``position_ids`` (TRL's log-probability pass, lm-eval's ``hf`` model, a plain
``model(ids, attention_mask=mask)``), they are computed from the attention mask — ``cumsum(mask) - 1`` clamped
at 0, the last ``T`` columns when a KV cache holds the earlier ones — so a left-padded prompt sits at the
positions the builtin gives it; GPT-2 would count the padding. Without an attention mask (and no cache), the
mask is the builtin's ``ids != PAD``. ``generate`` computes the same positions itself.

The vocabulary is exactly the builtin's ``VOCAB`` (``vocab_size = len(VOCAB)``), so the softmax runs over the
same logits. The tokenizer (hf_export.char_tokenizer) maps a character outside ``VOCAB`` to ``<unk>``, the id
``len(VOCAB)``, which has no embedding: the forward raises a ``ValueError`` naming it, as the builtin's
``encode`` raises on such a character.

Importing this module registers the model type with ``AutoConfig`` and ``AutoModelForCausalLM``: the TRL
backend and the evaluation of lm-eval's ``hf`` model import it before loading a checkpoint.
"""

from __future__ import annotations

from transformers import AutoConfig, AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, GPT2Model

from armlab.training.policy import EOS_ID, PAD_ID, VOCAB

MODEL_TYPE = "armlab_char"


class ArmlabCharConfig(GPT2Config):
    model_type = MODEL_TYPE

    def __init__(self, **kwargs):
        # the builtin policy has no dropout and an untied head; GPT-2's other defaults match it (exact GELU is
        # set by the exporter, LayerNorm eps 1e-5, attention scaled by 1/sqrt(head size))
        for key in ("resid_pdrop", "embd_pdrop", "attn_pdrop", "summary_first_dropout"):
            kwargs.setdefault(key, 0.0)
        kwargs.setdefault("tie_word_embeddings", False)
        kwargs.setdefault("vocab_size", len(VOCAB))
        kwargs.setdefault("pad_token_id", PAD_ID)
        kwargs.setdefault("eos_token_id", EOS_ID)
        kwargs.setdefault("bos_token_id", None)
        super().__init__(**kwargs)


class ArmlabCharModel(GPT2Model):
    """GPT-2's backbone with the builtin's positions: real tokens counted from 0, padding skipped."""

    config_class = ArmlabCharConfig

    def forward(
        self, input_ids=None, cache=None, attention_mask=None, token_type_ids=None, position_ids=None, **kwargs
    ):
        if input_ids is not None and input_ids.numel() and int(input_ids.max()) >= self.config.vocab_size:
            bad = int(input_ids.max())
            raise ValueError(
                f"token id {bad} is outside the policy's vocabulary of {self.config.vocab_size} characters "
                f"(the tokenizer's <unk>: a character the builtin policy cannot encode)"
            )
        cache = kwargs.pop("past_key_values", cache)
        empty_cache = cache is None or cache.get_seq_length() == 0
        if attention_mask is None and input_ids is not None and empty_cache:
            attention_mask = (input_ids != PAD_ID).long()
        if position_ids is None and attention_mask is not None and attention_mask.ndim == 2:
            length = input_ids.shape[1] if input_ids is not None else kwargs["inputs_embeds"].shape[1]
            position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)[:, -length:]
        return super().forward(
            input_ids,
            cache=cache,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            **kwargs,
        )


class ArmlabCharForCausalLM(GPT2LMHeadModel):
    config_class = ArmlabCharConfig
    _tied_weights_keys = {}

    def __init__(self, config: ArmlabCharConfig):
        super().__init__(config)
        self.transformer = ArmlabCharModel(config)
        self.post_init()


AutoConfig.register(MODEL_TYPE, ArmlabCharConfig, exist_ok=True)
AutoModelForCausalLM.register(ArmlabCharConfig, ArmlabCharForCausalLM, exist_ok=True)
