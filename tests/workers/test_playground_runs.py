"""The playground: a researcher as the teacher of a model about one task, stored as a run of
that task alone, played by the real worker code in-process."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory
from webapp.dialogues.models import Dialogue, PendingTurn
from webapp.models_registry.models import ModelSpec
from webapp.people import services as people
from webapp.runs.models import Run
from workers.evaluation import execute_evaluation

pytestmark = pytest.mark.django_db


@pytest.fixture
def task():  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    for i in range(3):
        TaskFactory(task_set=task_set, position=i, prompt=f"What is {i} + 40?",
                    reference={"answer": str(i + 40)})  # fmt: skip
    return task_set.tasks.order_by("position")[1]


def test_a_researcher_teaches_a_model_about_one_task(researcher_client, researcher, task) -> None:  # type: ignore[no-untyped-def]
    student = ModelSpec.objects.create(
        name="weak student", backend="scripted", location="arithmetic-student",
        generation_params={"first_try_accuracy": 0.0, "feedback_gain": 1.0},
    )  # fmt: skip
    protocol = ProtocolFactory(max_turns=3)
    page = researcher_client.get(reverse("playground_new", args=[task.pk]))
    assert page.status_code == 200 and "What is 1 + 40?" in page.content.decode()
    response = researcher_client.post(
        reverse("playground_new", args=[task.pk]),
        {"role": "teacher", "partner": student.pk, "protocol": protocol.pk},
    )
    run = Run.objects.get()
    assert response.url == reverse("playground_wait", args=[run.pk])
    assert run.frozen_config.task_ids == (task.pk,) and run.progress_total == 1
    assert list(run.people.all()) == [researcher]

    execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    pending = PendingTurn.objects.get(run=run, status="open")
    assert pending.task_id == task.pk and pending.role == "teacher"
    assert researcher_client.get(reverse("playground_wait", args=[run.pk])).url == reverse(
        "people_turn", args=[pending.pk]
    )
    assert people.pending_claim(pending=pending, user=researcher)
    people.pending_answer(pending=pending, user=researcher, text="Count on from 40.")
    execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    dialogue = Dialogue.objects.get(run=run)
    assert dialogue.outcome == "solved" and dialogue.first_correct_turn == 2
    assert Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED
    wait = researcher_client.get(reverse("playground_wait", args=[run.pk])).content.decode()
    assert "solved at turn 2" in wait


def test_a_scripted_teacher_cannot_be_taught(researcher_client, task) -> None:  # type: ignore[no-untyped-def]
    teacher = ModelSpec.objects.create(name="t", backend="scripted", location="feedback-teacher")
    response = researcher_client.post(
        reverse("playground_new", args=[task.pk]),
        {"role": "teacher", "partner": teacher.pk, "protocol": ProtocolFactory().pk},
    )
    assert "cannot be the student" in response.content.decode()
    assert not Run.objects.exists()


def test_a_researcher_as_the_student_of_a_model_teacher(
    researcher_client, researcher, task
) -> None:  # type: ignore[no-untyped-def]
    teacher = ModelSpec.objects.create(name="t", backend="scripted", location="feedback-teacher")
    researcher_client.post(
        reverse("playground_new", args=[task.pk]),
        {"role": "student", "partner": teacher.pk, "protocol": ProtocolFactory(max_turns=3).pk},
    )
    run = Run.objects.get()
    execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    first = PendingTurn.objects.get(run=run, status="open")
    assert (first.role, first.round, first.rounds_played) == ("student", 1, 0)
    page = researcher_client.get(reverse("people_turn", args=[first.pk])).content.decode()
    assert "What is 1 + 40?" in page and '"answer"' not in page  # a student sees no reference
    people.pending_answer(pending=first, user=researcher, text="The answer is 40.")
    execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    second = PendingTurn.objects.get(run=run, status="open")
    assert (second.role, second.round) == ("student", 2)
    assert second.turns[1]["role"] == "teacher"  # the model teacher answered the wrong reply
    assert people.pending_claim(pending=second, user=researcher)
    people.pending_answer(pending=second, user=researcher, text="The answer is 41.")
    execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    dialogue = Dialogue.objects.get(run=run)
    assert (dialogue.outcome, dialogue.first_correct_turn) == ("solved", 2)
