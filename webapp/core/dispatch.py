"""Send Celery tasks by name, after the surrounding transaction commits.

By name, so the web process never imports the tasks (``workers``, which leads to model code). A
worker that has the task registered runs it; in unit tests that register the tasks and turn on
eager mode, the signature resolves to the task itself and runs in-process.

Outside a transaction ``on_commit`` runs the send at once, so one function serves both.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django.db import transaction

from webapp.celery import app as celery_app


def enqueue_on_commit(
    task_name: str, *args: Any, on_sent: Callable[[], object] | None = None
) -> None:
    """Send ``task_name(*args)`` once the transaction commits; then call ``on_sent``, which
    runs only if the send did not raise (to record that the job reached the broker)."""
    transaction.on_commit(partial(_send, task_name, args, on_sent))


def _send(task_name: str, args: tuple[Any, ...], on_sent: Callable[[], object] | None) -> None:
    celery_app.signature(task_name, args=args).apply_async()
    if on_sent is not None:
        on_sent()
