from __future__ import annotations

from django.db.models import QuerySet

from webapp.dialogues.models import Dialogue


def dialogue_list(*, run_id: int | None = None, outcome: str = "") -> QuerySet[Dialogue]:
    dialogues = Dialogue.objects.select_related("task", "run")
    if run_id is not None:
        dialogues = dialogues.filter(run_id=run_id)
    if outcome:
        dialogues = dialogues.filter(outcome=outcome)
    return dialogues.order_by("-run_id", "task__position", "task_id", "sample_index")


def dialogue_with_turns(*, pk: int) -> Dialogue:
    return (
        Dialogue.objects.select_related("task", "run", "run__student", "run__teacher")
        .prefetch_related("turns")
        .get(pk=pk)
    )
