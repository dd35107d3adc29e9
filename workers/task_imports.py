"""Celery tasks that import task sets (default queue)."""

from __future__ import annotations

from workers.celery import app


@app.task(name="workers.task_imports.import_tasks")
def import_tasks(import_id: int) -> None:
    # A thin adapter: claim, import all or nothing, and record the outcome all happen in webapp.
    from webapp.tasks.importing import task_import_execute

    task_import_execute(import_id=import_id)
