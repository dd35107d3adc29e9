"""Which worker runs an import, and taking over an import whose worker died.

An import writes its tasks in one transaction, so a worker killed in the middle (SIGKILL, the
OOM killer, a lost host) commits nothing: the database rolls its transaction back. What it
leaves is the import's row, still "running", and its upload (deleted when an import ends,
unless it failed and may be mapped again). So a claim records the worker (``host:pid``), and
a later claim may take over a running import whose worker is gone:

- on the worker's own host, its process is no longer running;
- on PostgreSQL, from any host, its heartbeat is older than three heartbeats. The heartbeat is
  written by :class:`ImportLiveness` through a connection of its own while the import's
  transaction is open. SQLite cannot take that write while the import holds its only write
  lock, so there only the process check applies (an SQLite file is one host's anyway).

A worker that starts looks for such imports and sends them again (``task_imports_recover``,
from ``workers.recovery``); after ``MAX_IMPORT_ATTEMPTS`` claims an import is failed instead,
since a source that kills every worker (one too big for its memory, say) would loop forever.

An import that was judged dead wrongly (a stopped process, a stalled host) must not commit a
second task set beside its successor's: it marks itself succeeded inside its own transaction,
only while the claim is still its own (``claim_succeed``), and rolls back otherwise.
"""

from __future__ import annotations

import logging
import os
import socket

from django.conf import settings
from django.db import connection
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Now

from webapp.core.dispatch import enqueue_on_commit
from webapp.core.heartbeat import Heartbeat, stale_after
from webapp.tasks.models import TaskImport, TaskSet

logger = logging.getLogger(__name__)

IMPORT_TASK = "workers.task_imports.import_tasks"
GENERATE_TASK = "workers.task_imports.generate_tasks"
MAX_IMPORT_ATTEMPTS = 3


class ClaimLost(Exception):
    """Another worker took this import over: this one must write nothing."""


def worker_identity() -> str:
    """This process, as a claim records it."""
    return f"{socket.gethostname()}:{os.getpid()}"


def task_name(task_import: TaskImport) -> str:
    """The Celery task that runs an import: generators have their own."""
    return GENERATE_TASK if task_import.source == TaskImport.Source.GENERATOR else IMPORT_TASK


def _process_gone(worker: str) -> bool | None:
    """Whether the claiming process has exited; None when it ran on another host."""
    host, _, pid = worker.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except PermissionError:  # it exists, as another user's
        return False
    return False


def _lost(import_id: int, worker: str) -> QuerySet[TaskImport] | None:
    """The import, as a conditional update's filter, if ``worker`` claimed it and is gone."""
    gone = _process_gone(worker)
    if gone is False or (gone is None and connection.vendor == "sqlite"):
        return None
    claim = TaskImport.objects.filter(pk=import_id, status=TaskImport.Status.RUNNING, worker=worker)
    if gone is None:  # another host's: judged by its heartbeat, on the database's clock
        claim = claim.filter(Q(heartbeat_at__lt=Now() - stale_after()) | Q(heartbeat_at=None))
        if not claim.exists():
            return None
    return claim


def task_import_claim(*, import_id: int, worker: str) -> bool:
    """Take an import with one conditional update, so exactly one worker runs it: a pending
    one, or a running one whose worker is gone (the new claim starts it again)."""
    claim = {"status": TaskImport.Status.RUNNING, "worker": worker, "heartbeat_at": Now()}
    if TaskImport.objects.filter(pk=import_id, status=TaskImport.Status.PENDING).update(
        **claim, attempts=F("attempts") + 1, started_at=Now()
    ):
        return True
    running = TaskImport.objects.filter(pk=import_id, status=TaskImport.Status.RUNNING)
    previous = running.exclude(worker=worker).values_list("worker", "attempts").first()
    if previous is None:
        return False
    lost = _lost(import_id, previous[0])
    if lost is None:
        return False
    lost = lost.filter(attempts=previous[1])  # and no other worker took it over meanwhile
    if previous[1] >= MAX_IMPORT_ATTEMPTS:
        lost.update(
            status=TaskImport.Status.FAILED,
            finished_at=Now(),
            error=(
                f"The worker importing this stopped {previous[1]} times before finishing "
                "(killed, or out of memory?); nothing was imported and it was not tried again."
            ),
        )
        return False
    taken = bool(lost.update(**claim, attempts=F("attempts") + 1))
    if taken:
        logger.warning("import %s: took over from %s, whose worker is gone", import_id, previous[0])
    return taken


def claim_succeed(*, import_id: int, worker: str, task_set: TaskSet, done: int) -> None:
    """Mark the import succeeded, in the transaction that writes its tasks: raise ClaimLost
    (rolling them back) if another worker took it over."""
    if not TaskImport.objects.filter(
        pk=import_id, status=TaskImport.Status.RUNNING, worker=worker
    ).update(
        status=TaskImport.Status.SUCCEEDED,
        task_set=task_set,
        progress_done=done,
        progress_total=done,
        error="",
        finished_at=Now(),
    ):
        raise ClaimLost(f"import {import_id} was taken over by another worker")


def claim_fail(*, import_id: int, worker: str, error: str) -> None:
    """Mark the import failed, unless another worker took it over."""
    TaskImport.objects.filter(pk=import_id, status=TaskImport.Status.RUNNING, worker=worker).update(
        status=TaskImport.Status.FAILED, error=error, progress_done=0, finished_at=Now()
    )


def task_imports_recover() -> list[int]:
    """Send again the running imports whose worker is gone; the claim takes them over (or
    fails them after MAX_IMPORT_ATTEMPTS). Returns their ids."""
    running = TaskImport.objects.filter(status=TaskImport.Status.RUNNING)
    lost = [
        task_import
        for task_import in running.only("pk", "source", "worker")
        if _lost(task_import.pk, task_import.worker) is not None
    ]
    for task_import in lost:
        enqueue_on_commit(task_name(task_import), task_import.pk)  # outside a transaction: now
    if lost:
        logger.info("imports whose worker is gone, sent again: %s", [i.pk for i in lost])
    return [task_import.pk for task_import in lost]


def task_imports_resend() -> list[int]:
    """Send again every import no worker has taken, after the broker lost its messages (a Redis
    restart without persistence); returns their ids. A duplicate is harmless: only one claim
    can win (``task_import_claim``)."""
    pending = TaskImport.objects.filter(status=TaskImport.Status.PENDING)
    waiting = list(pending.only("pk", "source"))
    for task_import in waiting:
        enqueue_on_commit(task_name(task_import), task_import.pk)  # outside a transaction: now
    return [task_import.pk for task_import in waiting]


def task_import_release(*, import_id: int, worker: str) -> bool:
    """Give back a claim that ``worker`` cannot finish although it lives (it lost the database:
    its transaction, and so the import, committed nothing), and send the import again; the next
    claim starts it over. A live claimant is never judged gone, so without this nobody would."""
    released = TaskImport.objects.filter(
        pk=import_id, status=TaskImport.Status.RUNNING, worker=worker
    ).update(status=TaskImport.Status.PENDING, worker="")
    if released:
        task_import = TaskImport.objects.only("pk", "source").get(pk=import_id)
        enqueue_on_commit(task_name(task_import), import_id)  # outside a transaction: now
        logger.info("import %s: given back by %s, sent again", import_id, worker)
    return bool(released)


class ImportLiveness(Heartbeat):
    """A running import's heartbeat, which also writes its progress (at once when the import
    reports some), so that both are visible, and kept, while the import's transaction is still
    open. Not on SQLite, where the import holds the database's only write lock: a second writer
    would wait for it. Use it around the import, as its progress callback; it writes nothing
    after it exits, so that the import's own outcome is the last word on its progress."""

    def __init__(self, import_id: int) -> None:
        super().__init__(
            self._write,
            interval_seconds=settings.DIALAB_HEARTBEAT_SECONDS,
            name=f"heartbeat-import-{import_id}",
            enabled=connection.vendor != "sqlite",
        )
        self.import_id = import_id
        self.done: int | None = None

    def __call__(self, done: int) -> None:
        """The import's progress callback: tasks written so far."""
        self.done = done
        self.wake()

    def _write(self) -> None:
        progress = {} if self.done is None else {"progress_done": self.done}
        TaskImport.objects.filter(pk=self.import_id).update(heartbeat_at=Now(), **progress)
