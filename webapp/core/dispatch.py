"""Enqueue Celery tasks by name, after the surrounding transaction commits.

By name, so the web process never imports workers.tasks (which leads to model code). A worker
that has the task registered runs it; in unit tests that import workers.tasks and turn on eager
mode, the signature resolves to the task itself and runs in-process.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import transaction

from workers.celery import app as celery_app


def enqueue_on_commit(task_name: str, *args: Any) -> None:
    transaction.on_commit(partial(_send, task_name, args))


def _send(task_name: str, args: tuple[Any, ...]) -> None:
    celery_app.signature(task_name, args=args).apply_async()
