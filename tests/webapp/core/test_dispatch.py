"""webapp.core.dispatch: a task is sent by name once the transaction commits, to the queue
asked for, and the ``on_sent`` callback runs (with the job's id) only after a send that did not
raise."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from tests.broker import queue_holding
from webapp.celery import app
from webapp.core.dispatch import enqueue_on_commit
from webapp.core.queues import BATCH, INTERACTIVE

received: list[tuple[Any, ...]] = []


@app.task(name="tests.dispatch.record")
def record(*args: Any) -> None:
    received.append(args)


@app.task(name="tests.dispatch.refuse")
def refuse() -> None:
    raise ConnectionError("the broker is down")


@pytest.fixture
def sent(eager_celery) -> list[tuple[Any, ...]]:  # type: ignore[no-untyped-def]
    received.clear()
    return received


@pytest.mark.django_db
def test_the_task_is_sent_after_the_commit_and_then_on_sent_runs(
    sent, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    events: list[str] = []
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        enqueue_on_commit("tests.dispatch.record", 7, "x", on_sent=events.append)
        assert sent == [] and events == []  # nothing leaves before the commit
    assert sent == [(7, "x")] and len(events) == 1 and events[0]  # the job's id


@pytest.mark.django_db
def test_a_rolled_back_transaction_sends_nothing(sent) -> None:  # type: ignore[no-untyped-def]
    events: list[str] = []
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue_on_commit("tests.dispatch.record", 1, on_sent=lambda job_id: events.append("sent"))
        raise RuntimeError("roll back")
    assert sent == [] and events == []


@pytest.mark.django_db
def test_on_sent_does_not_run_when_the_send_fails(
    eager_celery, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    events: list[str] = []
    with pytest.raises(ConnectionError), django_capture_on_commit_callbacks(execute=True):
        enqueue_on_commit("tests.dispatch.refuse", on_sent=lambda job_id: events.append("sent"))
    assert events == []


@pytest.mark.django_db
@pytest.mark.parametrize("queue", [INTERACTIVE, BATCH])
def test_the_job_lands_on_the_queue_asked_for(
    queue: str, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    jobs: list[str] = []
    with django_capture_on_commit_callbacks(execute=True):
        enqueue_on_commit("tests.dispatch.record", 1, queue=queue, on_sent=jobs.append)
    assert queue_holding(jobs[0]) == queue


@pytest.mark.django_db
def test_a_task_without_a_route_is_interactive_work(
    django_capture_on_commit_callbacks,
) -> None:  # type: ignore[no-untyped-def]
    jobs: list[str] = []
    with django_capture_on_commit_callbacks(execute=True):
        enqueue_on_commit("workers.tasks.verify_probe", 0, on_sent=jobs.append)
    assert queue_holding(jobs[0]) == INTERACTIVE
