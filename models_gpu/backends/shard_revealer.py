"""A scripted user simulator for sharded dialogues: it reveals the next shard, word for word.

The engine hands the simulator ``private_context = {"unrevealed_shards": [...], "next_shard":
text | None}``. This policy says ``next_shard`` verbatim; once every shard is out it answers in
one short line that it has nothing to add (it never asks questions, as Lost-in-Conversation's
simulator never does).
"""

from __future__ import annotations

from models_gpu.types import GenerationRequest

NOTHING_TO_ADD = "That is everything I can tell you."


def shard_revealer_reply(request: GenerationRequest) -> str:
    next_shard = request.private_context.get("next_shard")
    return str(next_shard) if next_shard else NOTHING_TO_ADD
