"""Turn a ``GenerationRequest`` into the chat messages a model backend sends.

Shared by every model-backed backend (transformers, vllm, openai) so the same request reads the
same to every model. A speaker's private context (for a teacher: the reference answer and the
verifier's details) is rendered into the system message, because a model only knows what is in
its prompt; the scripted backend reads ``private_context`` directly instead.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from models_gpu.types import GenerationRequest

# Neutral on purpose: a teacher is told by its system prompt not to reveal this, while a user
# simulator is meant to reveal its unrevealed shards one at a time.
PRIVATE_CONTEXT_HEADER = "Private information (the other speaker cannot see it):"


def chat_messages(request: GenerationRequest) -> list[dict[str, str]]:
    """``[{"role": ..., "content": ...}]`` with the private context folded into the system turn."""
    messages = [{"role": m.role, "content": m.content} for m in request.messages]
    if not request.private_context:
        return messages
    private = render_private_context(request.private_context)
    if messages and messages[0]["role"] == "system":
        messages[0] = {"role": "system", "content": f"{messages[0]['content']}\n\n{private}"}
    else:
        messages.insert(0, {"role": "system", "content": private})
    return messages


def render_private_context(context: Mapping[str, Any]) -> str:
    lines = [PRIVATE_CONTEXT_HEADER]
    for key, value in context.items():
        shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
        lines.append(f"- {key.replace('_', ' ')}: {shown}")
    return "\n".join(lines)


def turn_seed(request: GenerationRequest) -> int:
    """The request's seed mixed with its turn (its number of messages), so every turn of a
    dialogue draws afresh while a given turn stays reproducible in any batch or process."""
    digest = hashlib.blake2b(f"{request.seed}:{len(request.messages)}".encode(), digest_size=4)
    return int.from_bytes(digest.digest(), "big") >> 1  # 31 bits: every server takes it
