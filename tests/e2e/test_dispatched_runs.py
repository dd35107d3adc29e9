"""A real Celery worker process takes runs dispatched after commit and stores their dialogues."""

from __future__ import annotations

import pytest
from django.db import transaction

from tests.e2e.conftest import wait_until
from tests.factories import ProtocolFactory, StudentFactory, TaskFactory, TeacherFactory
from webapp.dialogues.models import Dialogue
from webapp.runs.models import Run
from webapp.runs.services import evaluation_run_create

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def launch(task_set, samples_per_task: int = 3) -> Run:  # type: ignore[no-untyped-def]
    with transaction.atomic():
        return evaluation_run_create(
            name="worker e2e",
            task_set=task_set,
            student=StudentFactory(),
            teacher=TeacherFactory(),
            protocol=ProtocolFactory(max_turns=4),
            samples_per_task=samples_per_task,
            created_by=None,
        )


def test_worker_runs_a_dispatched_evaluation_to_the_end(worker) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory()
    TaskFactory.create_batch(4, task_set=task.task_set)
    run = launch(task.task_set)

    wait_until(lambda: Run.objects.get(pk=run.pk).is_finished, timeout=60)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error + worker.output()
    assert run.progress_done == run.progress_total == 15
    assert Dialogue.objects.filter(run=run).count() == 15
    assert run.accounting["student_generations"] >= 15
    assert run.worker, "the claiming worker is recorded"
    assert "run_evaluation" in worker.output()


def test_run_cancelled_while_queued_is_never_played(start_worker) -> None:  # type: ignore[no-untyped-def]
    from webapp.runs.services import run_cancel

    task = TaskFactory()
    run = launch(task.task_set)
    run_cancel(run=run)
    worker = start_worker()
    # A second run queued behind it proves the worker has consumed the first message.
    follower = launch(task.task_set, samples_per_task=1)
    wait_until(lambda: Run.objects.get(pk=follower.pk).is_finished, timeout=60)

    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED
    assert not Dialogue.objects.filter(run=run).exists()
    assert "not claimable" in worker.output()
