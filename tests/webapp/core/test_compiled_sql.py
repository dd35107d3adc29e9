"""Queries compiled once (webapp.core.compiled_sql) read what the ORM reads, on either database."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models.functions import Left

from tests.factories import TaskFactory, TaskSetFactory, UserFactory
from tests.transcript_builders import attempt, feedback, make_run, store
from webapp.core.compiled_sql import READER_MARKER, ROW_MARKER, bind
from webapp.dialogues.models import Dialogue
from webapp.transcripts import selectors

pytestmark = pytest.mark.django_db


def test_bind_replaces_markers_and_nothing_else() -> None:
    params = (ROW_MARKER, "x", READER_MARKER, True, 1, ["a"])
    bound = bind(params, {ROW_MARKER: 7, READER_MARKER: 9})
    assert bound == (7, "x", 9, True, 1, ["a"]) and bound[3] is True


@pytest.fixture
def dialogues() -> list[Dialogue]:
    task_set = TaskSetFactory()
    run = make_run("a run with a long name that the list cuts", task_set)
    for n in range(3):
        task = TaskFactory(task_set=task_set, prompt=f"What is {n} + 1? " + "word " * 80)
        store(run, task.pk, 0, "a_late", [
            attempt("4", "4", False), feedback("no", leak=n == 1), attempt("1", "1", True)
        ])  # fmt: skip
    return list(Dialogue.objects.order_by("pk"))


def test_list_rows_read_what_the_orm_reads(dialogues: list[Dialogue]) -> None:
    pks = [dialogue.pk for dialogue in reversed(dialogues)]
    orm: dict[int, dict[str, Any]] = {
        row["pk"]: row
        for row in Dialogue.objects.filter(pk__in=pks).values(
            *selectors.ROW_FIELDS, prompt_head=Left("task__prompt", selectors.PROMPT_HEAD)
        )
    }
    assert selectors.dialogue_rows(pks) == [orm[pk] for pk in pks]
    assert selectors.dialogue_rows(pks[:1]) == [orm[pks[0]]]  # another count, its own query
    assert selectors.dialogue_rows([]) == []


def test_the_dialogue_page_reads_what_the_orm_reads(dialogues: list[Dialogue]) -> None:
    dialogue = dialogues[1]
    page, turns = selectors.dialogue_page(pk=dialogue.pk)
    assert (page.pk, page.task_id, page.run_name) == (
        dialogue.pk,
        dialogue.task_id,
        dialogue.run.name,
    )
    assert page.task_reference == dialogue.task.reference
    assert page.outcome_label == dialogue.get_outcome_display()
    assert page.end_reason_label == dialogue.get_end_reason_display()
    assert page.task_set_label == str(dialogue.task.task_set)
    assert page.protocol_mode == dialogue.run.config["protocol"]["mode"]
    assert page.teacher_sees_reference is dialogue.run.config["protocol"]["teacher_sees_reference"]
    assert [turn.pk for turn in turns] == list(
        dialogue.turns.order_by("index").values_list("pk", flat=True)
    )
    annotator = UserFactory(role="annotator")  # nothing in a queue of hers
    with pytest.raises(Dialogue.DoesNotExist):
        selectors.dialogue_page(pk=dialogue.pk, reader=annotator)
