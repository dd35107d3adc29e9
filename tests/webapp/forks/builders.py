"""Stored parents and forks for the fork tests, through the real store service."""

from __future__ import annotations

from typing import Any

from models_gpu.spec.results import DialogueRow
from webapp.dialogues.models import Dialogue
from webapp.runs.models import Run
from webapp.runs.services import dialogues_store


def stored(
    run: Run,
    task_id: int,
    sample: int,
    turns: list[dict[str, Any]],
    *,
    seed: int = 7,
    parent: Dialogue | None = None,
    fork_turns: int | None = None,
) -> Dialogue:
    """Store one dialogue (rounds counted from the student's replies) and return it."""
    rounds = 0
    for index, item in enumerate(turns):
        if item["role"] == "student":
            rounds += 1
        item.update(index=index, round=max(rounds, 1))
    correct = [t["round"] for t in turns if t["is_correct"]]
    dialogues_store(
        run_id=run.pk,
        dialogues=[
            DialogueRow.from_json({
                "task_id": task_id, "sample_index": sample, "seed": seed,
                "outcome": "solved" if correct else "unsolved",
                "first_correct_turn": correct[0] if correct else None,
                "num_turns": rounds,
                "end_reason": "solved" if correct else "max_turns", "turns": turns,
                "parent_id": parent.pk if parent else None, "fork_turns": fork_turns,
            })
        ],
    )  # fmt: skip
    return Dialogue.objects.get(run=run, task_id=task_id, sample_index=sample)
