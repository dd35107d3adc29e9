from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from models_gpu.spec.results import DialogueRow
from tests.factories import TaskFactory, frozen_run
from webapp.dialogues.models import Dialogue, Turn
from webapp.runs.models import Run
from webapp.runs.services import dialogues_store
from webapp.training.selectors import training_dialogues

pytestmark = pytest.mark.django_db


@pytest.fixture
def run():  # type: ignore[no-untyped-def]
    return frozen_run(name="r")


def rows(payloads: list[dict]) -> list[DialogueRow]:
    return [DialogueRow.from_json(payload) for payload in payloads]


def dialogue_payload(task_id: int, sample_index: int = 0, text: str = "The answer is 3.") -> dict:
    return {
        "task_id": task_id,
        "sample_index": sample_index,
        "seed": 11,
        "outcome": "solved",
        "first_correct_turn": 1,
        "num_turns": 1,
        "end_reason": "solved",
        "turns": [
            {
                "index": 0, "round": 1, "role": "student", "kind": "attempt", "text": text,
                "private_context": {}, "extracted_answer": "3", "is_correct": True, "score": 1.0,
                "verdict_details": {"reason": "correct"}, "leak_flag": False,
                "prompt_tokens": 5, "completion_tokens": 4, "latency_ms": 0.1,
            }
        ],
    }  # fmt: skip


def test_storing_the_same_dialogues_twice_keeps_one_copy(run) -> None:  # type: ignore[no-untyped-def]
    tasks = TaskFactory.create_batch(3, task_set=run.task_set)
    batch = rows([dialogue_payload(t.pk) for t in tasks])
    assert dialogues_store(run_id=run.pk, dialogues=batch) == 3
    again = [*batch, *rows([dialogue_payload(tasks[0].pk, 1)])]
    assert dialogues_store(run_id=run.pk, dialogues=again) == 1
    assert Dialogue.objects.filter(run=run).count() == 4
    assert Turn.objects.count() == 4


def test_dialogue_list_uses_a_fixed_number_of_queries(researcher_client, run) -> None:  # type: ignore[no-untyped-def]
    def queries_for(count: int) -> int:
        tasks = TaskFactory.create_batch(count, task_set=run.task_set)
        dialogues_store(run_id=run.pk, dialogues=rows([dialogue_payload(t.pk) for t in tasks]))
        with CaptureQueriesContext(connection) as context:
            assert researcher_client.get(reverse("dialogue_list")).status_code == 200
        return len(context.captured_queries)

    assert queries_for(2) == queries_for(20)


def test_dialogue_page_escapes_model_text_and_shows_verdicts(researcher_client, run) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory(task_set=run.task_set)
    hostile = "<script>alert('x')</script> The answer is 3."
    dialogues_store(run_id=run.pk, dialogues=rows([dialogue_payload(task.pk, text=hostile)]))
    dialogue = Dialogue.objects.get()
    html = researcher_client.get(reverse("dialogue_detail", args=[dialogue.pk])).content.decode()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert" in html
    assert "✔ correct" in html


def test_an_unsandboxed_code_verdict_is_marked_on_the_dialogue_page(researcher_client, run) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory(task_set=run.task_set)
    sandboxed, unsandboxed = dialogue_payload(task.pk, 0), dialogue_payload(task.pk, 1)
    sandboxed["turns"][0]["verdict_details"] = {"reason": "correct", "sandbox": "bubblewrap"}
    unsandboxed["turns"][0]["verdict_details"] = {"reason": "correct", "sandbox": "none"}
    dialogues_store(run_id=run.pk, dialogues=rows([sandboxed, unsandboxed]))
    pages = {
        dialogue.sample_index: researcher_client.get(
            reverse("dialogue_detail", args=[dialogue.pk])
        ).content.decode()
        for dialogue in Dialogue.objects.all()
    }
    assert 'class="unsandboxed"' not in pages[0]
    assert 'class="unsandboxed"' in pages[1]


def test_transcripts_filter_by_run_and_outcome(researcher_client, run) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory(task_set=run.task_set)
    unsolved = {**dialogue_payload(task.pk, 1), "outcome": "unsolved", "first_correct_turn": None}
    dialogues_store(run_id=run.pk, dialogues=rows([dialogue_payload(task.pk), unsolved]))
    response = researcher_client.get(
        reverse("dialogue_list"), {"run": run.pk, "outcome": "unsolved"}
    )
    assert [row.sample for row in response.context["page"]] == [1]
    empty = researcher_client.get(reverse("dialogue_list"), {"run": run.pk, "outcome": "error"})
    assert "No transcripts match these filters" in empty.content.decode()
    # A run that does not exist is ignored with a visible note, never an error page.
    unknown = researcher_client.get(reverse("dialogue_list"), {"run": 999999})
    assert "Ignored run=" in unknown.content.decode()
    assert len(unknown.context["page"]) == 2


COPIED = (
    "task_position", "student_name", "leaked", "changed_answer", "turn_kinds", "search_document",
)  # fmt: skip


def test_migration_backfills_write_what_the_store_writes(corpus) -> None:  # type: ignore[no-untyped-def]
    """The list reads copies on each dialogue (summary.py, search.py): for dialogues stored
    before those columns existed, the migrations' backfills must give the same values."""
    from webapp.dialogues.search import fill_documents
    from webapp.dialogues.summary import KIND_BITS, backfill, fill_student_names
    from webapp.tasks.models import Task

    assert set(KIND_BITS) == set(Turn.Kind.values)
    stored = {row["pk"]: row for row in Dialogue.objects.values("pk", *COPIED)}
    kinds = {row["turn_kinds"] for row in stored.values()}
    assert kinds == {1, 1 | 4, 1 | 2 | 4}  # attempts; and feedback; and a question
    assert sum(row["leaked"] for row in stored.values()) == 1
    students = {d.pk: d.run.student.name for d in Dialogue.objects.select_related("run__student")}
    assert {pk: row["student_name"] for pk, row in stored.items()} == students
    assert len(set(students.values())) == 2  # two runs, two students
    Dialogue.objects.update(
        task_position=0, student_name="", leaked=False, changed_answer=False, turn_kinds=0,
        search_document=None,
    )  # fmt: skip
    backfill(dialogue_model=Dialogue, turn_model=Turn, task_model=Task, chunk=2)
    fill_student_names(dialogue_model=Dialogue, run_model=Run)
    if connection.vendor == "postgresql":
        fill_documents(dialogue_table=Dialogue._meta.db_table, turn_table=Turn._meta.db_table)
    assert {row["pk"]: row for row in Dialogue.objects.values("pk", *COPIED)} == stored


def test_dialogues_keep_the_student_name_their_run_was_launched_with(corpus) -> None:  # type: ignore[no-untyped-def]
    dialogue = Dialogue.objects.select_related("run__student").first()
    student = dialogue.run.student
    launched_as = student.name
    student.name = "renamed student"
    student.save()
    names = set(
        Dialogue.objects.filter(run__student=student).values_list("student_name", flat=True)
    )
    assert names == {launched_as}


def test_feedback_use_of_a_move_is_stored_and_read_back_as_it_came(run) -> None:  # type: ignore[no-untyped-def]
    """Every TurnRow field is a Turn column: what the worker hands in is what training (and
    forks) read back (webapp.training.selectors.TURN_FIELDS)."""
    task = TaskFactory(task_set=run.task_set)
    payload = dialogue_payload(task.pk)
    payload["turns"][0] |= {"move_valid": True, "move_consistent": False, "move_chance": 0.25}
    dialogues_store(run_id=run.pk, dialogues=rows([payload]))
    (dialogue,) = training_dialogues(Dialogue.objects.all())
    (stored,) = dialogue.turns
    assert (stored.move_valid, stored.move_consistent, stored.move_chance) == (True, False, 0.25)
