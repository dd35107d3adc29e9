"""Send Celery tasks by name, after the surrounding transaction commits.

By name, so the web process never imports the tasks (``workers``, which leads to model code). A
worker that has the task registered runs it; in unit tests that register the tasks and turn on
eager mode, the signature resolves to the task itself and runs in-process.

Outside a transaction ``on_commit`` runs the send at once, so one function serves both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from django.db import transaction
from kombu.exceptions import OperationalError

from webapp.celery import app as celery_app

logger = logging.getLogger(__name__)


def enqueue_on_commit(
    task_name: str,
    *args: Any,
    queue: str | None = None,
    on_sent: Callable[[str], object] | None = None,
) -> None:
    """Send ``task_name(*args)`` once the transaction commits, to ``queue`` (else the task's
    route in ``CELERY_TASK_ROUTES``, else the interactive queue); then call ``on_sent`` with the
    job's id, which runs only if the send did not raise (to record that it reached the broker)."""
    transaction.on_commit(partial(_send, task_name, args, queue, on_sent))


def _send(
    task_name: str,
    args: tuple[Any, ...],
    queue: str | None,
    on_sent: Callable[[str], object] | None,
) -> None:
    options = {"queue": queue} if queue else {}
    job = celery_app.signature(task_name, args=args).apply_async(**options)
    if on_sent is not None:
        on_sent(job.id)


def revoke(job_id: str) -> None:
    """Tell the workers to drop a job not started yet: whichever worker takes its message
    acknowledges and discards it. Best effort: a worker that starts later does not know it, and
    with the broker unreachable nothing is told; the job's own check (a cancelled run cannot be
    claimed) stops it then."""
    try:
        celery_app.control.revoke(job_id)
    except (OSError, OperationalError) as error:
        logger.warning("could not revoke job %s (%s); its own check will stop it", job_id, error)
