"""Writes for dialogues: the worker stores finished dialogues here, in bulk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from webapp.dialogues.models import Dialogue, Turn

TURN_FIELDS = (
    "index",
    "round",
    "role",
    "kind",
    "text",
    "private_context",
    "extracted_answer",
    "is_correct",
    "score",
    "verdict_details",
    "leak_flag",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
)


@transaction.atomic
def dialogues_store(*, run_id: int, dialogues: Sequence[dict[str, Any]]) -> int:
    """Insert finished dialogues and their turns in two bulk inserts; return how many were new.

    A dialogue already stored for the same (task, sample) is skipped, so a re-delivered or
    resumed job can hand the same results in again without duplicating them.
    """
    stored = set(
        Dialogue.objects.filter(
            run_id=run_id, task_id__in={d["task_id"] for d in dialogues}
        ).values_list("task_id", "sample_index")
    )
    fresh = [d for d in dialogues if (d["task_id"], d["sample_index"]) not in stored]
    rows = Dialogue.objects.bulk_create(
        Dialogue(
            run_id=run_id,
            task_id=d["task_id"],
            sample_index=d["sample_index"],
            seed=d["seed"],
            outcome=d["outcome"],
            first_correct_turn=d["first_correct_turn"],
            num_turns=d["num_turns"],
            end_reason=d["end_reason"],
        )
        for d in fresh
    )
    Turn.objects.bulk_create(
        Turn(dialogue_id=row.pk, **{field: turn[field] for field in TURN_FIELDS})
        for row, d in zip(rows, fresh, strict=True)
        for turn in d["turns"]
    )
    return len(rows)
