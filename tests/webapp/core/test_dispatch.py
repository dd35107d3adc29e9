"""webapp.core.dispatch: a task is sent by name once the transaction commits, and the
``on_sent`` callback runs only after a send that did not raise."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from webapp.celery import app
from webapp.core.dispatch import enqueue_on_commit

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
        enqueue_on_commit("tests.dispatch.record", 7, "x", on_sent=lambda: events.append("sent"))
        assert sent == [] and events == []  # nothing leaves before the commit
    assert sent == [(7, "x")] and events == ["sent"]


@pytest.mark.django_db
def test_a_rolled_back_transaction_sends_nothing(sent) -> None:  # type: ignore[no-untyped-def]
    events: list[str] = []
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue_on_commit("tests.dispatch.record", 1, on_sent=lambda: events.append("sent"))
        raise RuntimeError("roll back")
    assert sent == [] and events == []


@pytest.mark.django_db
def test_on_sent_does_not_run_when_the_send_fails(
    eager_celery, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    events: list[str] = []
    with pytest.raises(ConnectionError), django_capture_on_commit_callbacks(execute=True):
        enqueue_on_commit("tests.dispatch.refuse", on_sent=lambda: events.append("sent"))
    assert events == []
