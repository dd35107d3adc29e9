"""Celery tasks: thin adapters from a run id to models_gpu and back through webapp services."""

from __future__ import annotations

from workers.celery import app


@app.task(name="workers.tasks.run_evaluation")
def run_evaluation(run_id: int) -> None:
    # Imported here so that loading this module (which the worker does at start) stays cheap.
    from workers.evaluation import execute_evaluation

    execute_evaluation(run_id)
