"""Writes for dialogues: the worker stores finished dialogues here, in bulk."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from django.db import connection, transaction

from models_gpu.spec.results import DialogueRow
from webapp.dialogues.models import Dialogue, Turn
from webapp.dialogues.search import document_expression
from webapp.dialogues.summary import turn_summary
from webapp.runs.models import Run
from webapp.tasks.models import Task


@transaction.atomic
def dialogues_store(
    *,
    run_id: int,
    dialogues: Sequence[DialogueRow],
    training_step: int | None = None,
    ended_by: str = "",
    end_note: str = "",
) -> int:
    """Insert finished dialogues and their turns in two bulk inserts; return how many were new.

    A dialogue already stored for the same (task, sample) is skipped, so a re-delivered or
    resumed job can hand the same results in again without duplicating them. Each dialogue
    gets the copies the transcript list reads (its task's position, the student's name as the
    run froze it, ``summary.turn_summary``, on PostgreSQL its search document). ``ended_by``
    and ``end_note``: who ended these dialogues by hand and why (``webapp.people``).
    """
    stored = set(
        Dialogue.objects.filter(
            run_id=run_id, task_id__in={d.task_id for d in dialogues}
        ).values_list("task_id", "sample_index")
    )
    fresh = [d for d in dialogues if (d.task_id, d.sample_index) not in stored]
    searchable = connection.vendor == "postgresql"  # see search.py
    positions = dict(
        Task.objects.filter(pk__in={d.task_id for d in fresh}).values_list("pk", "position")
    )
    # As the run froze it (RunConfig.student.name; a training run's rollouts are its base
    # model's), read from the JSON alone.
    student_name, base_name = Run.objects.values_list(
        "config__student__name", "config__base__name"
    ).get(pk=run_id)
    turns = [[asdict(turn) for turn in d.turns] for d in fresh]
    rows = Dialogue.objects.bulk_create(
        Dialogue(
            run_id=run_id,
            task_id=d.task_id,
            sample_index=d.sample_index,
            seed=d.seed,
            outcome=d.outcome,
            first_correct_turn=d.first_correct_turn,
            num_turns=d.num_turns,
            end_reason=d.end_reason,
            ended_by=ended_by,
            end_note=end_note,
            task_position=positions[d.task_id],
            student_name=student_name or base_name or "",
            training_step=training_step,
            parent_id=d.parent_id,
            fork_turns=d.fork_turns,
            **turn_summary(d_turns),
            search_document=(
                document_expression([turn["text"] for turn in d_turns]) if searchable else None
            ),
        )
        for d, d_turns in zip(fresh, turns, strict=True)
    )
    Turn.objects.bulk_create(
        Turn(dialogue_id=row.pk, **turn)
        for row, d_turns in zip(rows, turns, strict=True)
        for turn in d_turns
    )
    return len(rows)
