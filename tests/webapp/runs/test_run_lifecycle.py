from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import (
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TaskSetFactory,
    TeacherFactory,
)
from webapp.dialogues.models import Dialogue, Turn
from webapp.models_registry.models import ModelSpec
from webapp.runs import selectors, services
from webapp.runs.models import Protocol, Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def launch_form(researcher):  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    TaskFactory.create_batch(4, task_set=task_set)
    return {
        "task_set": task_set.pk,
        "protocol": ProtocolFactory().pk,
        "student": StudentFactory().pk,
        "teacher": TeacherFactory().pk,
        "samples_per_task": 3,
        "seed": 7,
    }


def test_launching_freezes_the_config_and_dispatches_after_commit(
    researcher_client, launch_form, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks() as callbacks:
        response = researcher_client.post(reverse("run_create"), launch_form)
    run = Run.objects.get()
    assert response["Location"] == reverse("run_detail", args=[run.pk])
    assert run.status == Run.Status.QUEUED
    assert run.progress_total == 12
    assert len(callbacks) == 1, "dispatch waits for the commit"
    assert run.config["protocol"]["max_turns"] == 5
    assert run.config["student"]["location"] == "arithmetic-student"
    assert run.config["task_set"]["task_count"] == 4
    assert len(run.config_hash) == 64
    # The snapshot is frozen: editing the protocol afterwards does not change the run.
    Protocol.objects.update(max_turns=9)
    run.refresh_from_db()
    assert run.config["protocol"]["max_turns"] == 5


def test_same_configuration_gives_the_same_hash(researcher_client, launch_form) -> None:  # type: ignore[no-untyped-def]
    researcher_client.post(reverse("run_create"), launch_form)
    researcher_client.post(reverse("run_create"), launch_form)
    researcher_client.post(reverse("run_create"), {**launch_form, "seed": 8})
    hashes = list(Run.objects.order_by("pk").values_list("config_hash", flat=True))
    assert hashes[0] == hashes[1] != hashes[2]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"teacher": ""}, "The didactic protocol needs a teacher model."),
        ({"samples_per_task": 0}, "Ensure this value is greater than or equal to 1."),
    ],
)
def test_launch_form_explains_what_is_wrong(
    researcher_client, launch_form, change, message
) -> None:  # type: ignore[no-untyped-def]
    response = researcher_client.post(reverse("run_create"), {**launch_form, **change})
    assert message in response.content.decode()
    assert not Run.objects.exists()


def test_empty_task_set_cannot_be_launched(researcher_client, launch_form) -> None:  # type: ignore[no-untyped-def]
    empty = TaskSetFactory()
    response = researcher_client.post(reverse("run_create"), {**launch_form, "task_set": empty.pk})
    assert "This task set has no tasks yet" in response.content.decode()


def test_evaluation_runs_through_the_worker_task(
    researcher_client, launch_form, eager_celery, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(reverse("run_create"), launch_form)
    run = Run.objects.get()
    assert run.status == Run.Status.SUCCEEDED, run.error
    assert run.progress_done == 12
    dialogues = Dialogue.objects.filter(run=run)
    assert dialogues.count() == 12
    for dialogue in dialogues:
        turns = list(dialogue.turns.order_by("index"))
        attempts = [t for t in turns if t.role == Turn.Role.STUDENT]
        assert len(attempts) == dialogue.num_turns
        assert all(t.is_correct is not None for t in attempts)
        if dialogue.outcome == Dialogue.Outcome.SOLVED:
            assert attempts[-1].is_correct and attempts[-1].round == dialogue.first_correct_turn
        else:
            assert dialogue.num_turns == 5 and dialogue.first_correct_turn is None
        for feedback in (t for t in turns if t.role == Turn.Role.TEACHER):
            answer = dialogue.task.reference["answer"]
            assert answer not in feedback.text.split(), "the teacher never gives the answer"
            assert "verdict_details" in feedback.private_context
    assert run.accounting["student_generations"] >= 12


def test_unknown_backend_fails_the_run_with_a_clear_error(
    researcher, launch_form, eager_celery, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    student = ModelSpec.objects.create(name="odd", backend="transformers", location="/nowhere")
    with django_capture_on_commit_callbacks(execute=True):
        run = services.evaluation_run_create(
            name="odd", **_launch_objects(launch_form, student=student), created_by=researcher
        )
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert "transformers" in run.error
    assert run.finished_at is not None


def _launch_objects(form: dict, **overrides: object) -> dict[str, object]:
    from webapp.tasks.models import TaskSet

    objects = {
        "task_set": TaskSet.objects.get(pk=form["task_set"]),
        "protocol": Protocol.objects.get(pk=form["protocol"]),
        "student": ModelSpec.objects.get(pk=form["student"]),
        "teacher": ModelSpec.objects.get(pk=form["teacher"]),
    }
    return {**objects, **overrides}


def test_live_fragment_polls_while_running_and_stops_when_finished(
    researcher_client, launch_form
) -> None:  # type: ignore[no-untyped-def]
    researcher_client.post(reverse("run_create"), launch_form)
    run = Run.objects.get()
    url = reverse("run_live", args=[run.pk])
    running = researcher_client.get(url)
    assert running.status_code == 200
    assert 'hx-trigger="every 2s"' in running.content.decode()
    assert "Cancel run" in running.content.decode()
    Run.objects.update(status=Run.Status.SUCCEEDED)
    finished = researcher_client.get(url)
    assert finished.status_code == 286, "htmx stops polling on 286"
    assert "hx-trigger" not in finished.content.decode()
    assert "Cancel run" not in finished.content.decode()
    assert 'id="accuracy-figure"' in finished.content.decode()


def test_cancel_of_a_queued_run_is_immediate(researcher_client, launch_form) -> None:  # type: ignore[no-untyped-def]
    researcher_client.post(reverse("run_create"), launch_form)
    run = Run.objects.get()
    researcher_client.post(reverse("run_cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED and run.finished_at is not None


def test_cancel_of_a_running_run_asks_the_worker(researcher_client, launch_form) -> None:  # type: ignore[no-untyped-def]
    researcher_client.post(reverse("run_create"), launch_form)
    Run.objects.update(status=Run.Status.RUNNING)
    run = Run.objects.get()
    researcher_client.post(reverse("run_cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING and run.cancel_requested
    assert selectors.run_cancel_requested(run_id=run.pk)


def test_only_one_claim_wins_and_a_stale_run_can_be_resumed(launch_form, researcher) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from django.utils import timezone

    run = services.evaluation_run_create(
        name="claim", **_launch_objects(launch_form), created_by=researcher
    )
    stale = timedelta(seconds=15)
    assert services.run_claim(run_id=run.pk, worker="a", stale_after=stale)
    assert not services.run_claim(run_id=run.pk, worker="b", stale_after=stale)
    Run.objects.update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    assert services.run_claim(run_id=run.pk, worker="c", stale_after=stale)
    assert Run.objects.get().worker == "c"
