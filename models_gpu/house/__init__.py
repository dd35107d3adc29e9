"""Dialab's house model: a small Llama with a locally trained tokenizer, saved in Hugging Face
format so that the ``transformers`` and ``vllm`` backends load it like any checkpoint.

Nothing is downloaded: the tokenizer is trained on procedural text, the weights start random
(``model.build_untrained``), and ``build_house_model`` pre-trains them on procedural arithmetic
dialogues (``corpus``, ``train``) and measures the result (``evaluate``). Command line:
``python -m models_gpu.house --out DIR [--steps N] [--seed S]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from models_gpu.house.build import build_house_model

__all__ = ["build_house_model"]


def __getattr__(name: str) -> Any:
    # Lazy, so that importing models_gpu.house (or one of its modules) never imports torch.
    if name == "build_house_model":
        from models_gpu.house.build import build_house_model

        return build_house_model
    raise AttributeError(name)
