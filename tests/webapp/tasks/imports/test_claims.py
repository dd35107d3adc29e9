"""Imports whose worker died: who may claim a running import, recovery, and an import that
lost its claim writing nothing (webapp.tasks.imports.claims)."""

from __future__ import annotations

import socket
import subprocess
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from webapp.core.heartbeat import stale_after
from webapp.tasks.imports.claims import (
    MAX_IMPORT_ATTEMPTS,
    task_import_claim,
    task_imports_recover,
    worker_identity,
)
from webapp.tasks.imports.services import task_import_execute
from webapp.tasks.imports.sources import ImportSource
from webapp.tasks.models import TaskImport, TaskSet

pytestmark = pytest.mark.django_db


def dead_worker() -> str:
    """A worker on this host whose process has exited."""
    process = subprocess.Popen(["true"])
    process.wait()
    return f"{socket.gethostname()}:{process.pid}"


def running_import(worker: str, *, attempts: int = 1, heartbeat_age: float = 0) -> TaskImport:
    return TaskImport.objects.create(
        source=TaskImport.Source.GENERATOR, task_set_name="sums", dataset="arithmetic",
        parameters={"count": 30, "seed": 1}, status=TaskImport.Status.RUNNING, worker=worker,
        attempts=attempts, heartbeat_at=timezone.now() - timedelta(seconds=heartbeat_age),
    )  # fmt: skip


def test_a_running_import_whose_worker_lives_is_not_taken() -> None:
    task_import = running_import(worker_identity())  # this very process
    assert not task_import_claim(import_id=task_import.pk, worker="elsewhere:7")
    task_import.refresh_from_db()
    assert task_import.worker == worker_identity() and task_import.attempts == 1


def test_a_running_import_whose_worker_exited_is_taken_over() -> None:
    task_import = running_import(dead_worker())
    assert task_import_claim(import_id=task_import.pk, worker="new-worker:1")
    task_import.refresh_from_db()
    assert task_import.status == "running"
    assert task_import.worker == "new-worker:1" and task_import.attempts == 2
    assert not task_import_claim(import_id=task_import.pk, worker="third:1"), "taken once"


def test_another_host_s_worker_is_judged_by_its_heartbeat() -> None:
    stale = stale_after().total_seconds()
    fresh = running_import("another-host:42", heartbeat_age=stale / 3)
    assert not task_import_claim(import_id=fresh.pk, worker="new-worker:1")
    old = running_import("another-host:43", heartbeat_age=2 * stale)
    taken = task_import_claim(import_id=old.pk, worker="new-worker:1")
    # SQLite has no heartbeat during an import (its write lock), so it never judges by one.
    assert taken == (connection.vendor != "sqlite")


def test_the_import_page_says_it_was_started_again(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task_import = running_import(dead_worker())
    assert task_import_claim(import_id=task_import.pk, worker="new-worker:1")
    page = researcher_client.get(reverse("task_import_detail", args=[task_import.pk]))
    assert "Started again (attempt 2)" in page.content.decode()


def test_an_import_that_kept_killing_its_workers_fails() -> None:
    task_import = running_import(dead_worker(), attempts=MAX_IMPORT_ATTEMPTS)
    assert not task_import_claim(import_id=task_import.pk, worker="new-worker:1")
    task_import.refresh_from_db()
    assert task_import.status == "failed"
    assert f"stopped {MAX_IMPORT_ATTEMPTS} times" in task_import.error


def test_recovery_sends_lost_imports_and_the_next_claim_finishes_them(
    eager_celery, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    import workers.task_imports  # noqa: F401  (registers the import tasks for eager dispatch)

    lost = running_import(dead_worker())
    alive = running_import(worker_identity())
    with django_capture_on_commit_callbacks(execute=True):
        assert task_imports_recover() == [lost.pk]
    lost.refresh_from_db()
    assert lost.status == "succeeded" and lost.attempts == 2
    assert lost.task_set is not None and lost.task_set.tasks.count() == 30
    assert TaskImport.objects.get(pk=alive.pk).status == "running"


def test_an_import_whose_claim_was_taken_over_writes_nothing() -> None:
    """A worker judged dead wrongly (stopped, not killed) finishes after its successor took the
    import: its transaction checks the claim before committing and rolls back."""
    from workers.task_imports import generator_source

    task_import = TaskImport.objects.create(
        source=TaskImport.Source.GENERATOR, task_set_name="sums", dataset="arithmetic",
        parameters={"count": 30, "seed": 1},
    )  # fmt: skip

    def taken_over_midway(claimed: TaskImport) -> ImportSource:
        source = generator_source(claimed)
        records = source.records

        def read() -> object:
            for number, record in records():
                if number == 10:  # another worker takes the import over
                    TaskImport.objects.filter(pk=claimed.pk).update(worker="successor:1")
                yield number, record

        source.records = read  # type: ignore[assignment]
        return source

    task_import_execute(import_id=task_import.pk, open_source=taken_over_midway)
    assert not TaskSet.objects.exists()
    task_import.refresh_from_db()
    assert task_import.status == "running", "the outcome is the successor's to record"
