"""The house model's architecture (a small Llama), its initialisation, and saving it in Hugging
Face format next to its tokenizer."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from models_gpu.house.tokenizer import train_tokenizer

METADATA_FILE = "dialab_house.json"


@dataclass(frozen=True)
class HouseConfig:
    """Sizes of the house model (the defaults are the tiny test model; ``build.HOUSE_MODEL`` is
    the one ``build_house_model`` pre-trains).

    hidden_size / num_heads: vLLM's CPU attention needs a head size of 64 (16 is refused), so
        ``hidden_size == 64 * num_heads``.
    vocab_size: an upper bound; the trained tokenizer may come out smaller on a small corpus.
    seed: seeds the weight initialisation.
    """

    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 2
    intermediate_size: int = 512
    max_position_embeddings: int = 1024
    vocab_size: int = 2048
    seed: int = 0


def init_model(config: HouseConfig, tokenizer: Any) -> Any:
    """A randomly initialised ``LlamaForCausalLM`` (seeded by ``config.seed``) for ``tokenizer``."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    if config.hidden_size % config.num_heads:
        raise ValueError("hidden_size must be a multiple of num_heads")
    llama_config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_heads,
        head_dim=config.hidden_size // config.num_heads,
        max_position_embeddings=config.max_position_embeddings,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(config.seed)
    model = LlamaForCausalLM(llama_config)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return model


def save_checkpoint(
    model: Any, tokenizer: Any, out_dir: str | Path, metadata: Mapping[str, Any]
) -> Path:
    """Save weights, config, tokenizer and Dialab's own notes (``dialab_house.json``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / METADATA_FILE).write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n")
    return out


def build_untrained(out_dir: str | Path, corpus: Iterable[str], config: HouseConfig) -> Path:
    """Train the tokenizer on ``corpus``, initialise the weights from ``config.seed``, save both."""
    tokenizer = train_tokenizer(corpus, vocab_size=config.vocab_size)
    model = init_model(config, tokenizer)
    return save_checkpoint(model, tokenizer, out_dir, {"config": asdict(config), "trained": False})
