"""Celery tasks: thin adapters from a run id to models_gpu and back through webapp services."""

from __future__ import annotations

import socket

from celery import Task

from workers.celery import app


@app.task(name="workers.tasks.run_evaluation", bind=True)
def run_evaluation(self: Task, run_id: int) -> None:
    # Imported here so that loading this module (which the worker does at start) stays cheap.
    from workers.evaluation import execute_evaluation

    execute_evaluation(run_id, worker=self.request.hostname or socket.gethostname())
