"""A byte-level BPE tokenizer trained here, with digits split one per token (so arithmetic is
learnable by a tiny model) and a chat template whose turns end with ``END``.

The role headers (``<|system|>``, ``<|user|>``, ``<|assistant|>``) are special tokens, one id each,
as in many chat models: they cost one position instead of ten, and decoding with
``skip_special_tokens=True`` drops them with the padding and ``END``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

BOS = "<|bos|>"
END = "<|end|>"
PAD = "<|pad|>"
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>")
SPECIAL_TOKENS = (PAD, BOS, END, *ROLE_TOKENS)

# Every message is "<|role|>\n{content}<|end|>\n"; a generation prompt opens the assistant turn.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}" + END + "\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def train_tokenizer(texts: Iterable[str], *, vocab_size: int = 2048) -> Any:
    """Train the tokenizer on ``texts``; returns a ``transformers.PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(False)]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=BOS,
        eos_token=END,
        pad_token=PAD,
        additional_special_tokens=list(ROLE_TOKENS),
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"  # decoder-only batches generate from the right edge
    return fast
