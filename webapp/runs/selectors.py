from __future__ import annotations

from django.db.models import Count, QuerySet

from webapp.dialogues.models import Dialogue
from webapp.runs.metrics import TurnAccuracy, cumulative_accuracy
from webapp.runs.models import Protocol, Run


def run_list() -> QuerySet[Run]:
    return Run.objects.select_related("task_set", "student", "teacher", "protocol")


def protocol_list() -> QuerySet[Protocol]:
    return Protocol.objects.all()


def run_accuracy_by_turn(*, run: Run) -> list[TurnAccuracy]:
    """One grouped query over the run's finished dialogues."""
    rows = (
        Dialogue.objects.filter(run=run)
        .values("first_correct_turn")
        .annotate(n=Count("id"))
        .order_by()
    )
    counts = {row["first_correct_turn"]: row["n"] for row in rows}
    total = sum(counts.values())
    solved_at = {turn: n for turn, n in counts.items() if turn is not None}
    return cumulative_accuracy(
        first_correct_counts=solved_at, total=total, max_turns=run.config["protocol"]["max_turns"]
    )


def run_stored_dialogue_keys(*, run_id: int) -> set[tuple[int, int]]:
    """(task id, sample index) of every dialogue already stored: what a resumed run skips."""
    return set(Dialogue.objects.filter(run_id=run_id).values_list("task_id", "sample_index"))
