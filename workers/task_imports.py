"""Celery tasks that fill task sets: imports and procedural generation (default queue)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from webapp.celery import app

if TYPE_CHECKING:
    from webapp.tasks.imports.sources import ImportSource
    from webapp.tasks.models import TaskImport


@app.task(name="workers.task_imports.import_tasks")
def import_tasks(import_id: int) -> None:
    # A thin adapter: claim, import all or nothing, and record the outcome all happen in webapp.
    from webapp.tasks.imports.services import task_import_execute

    _resumed_if_the_database_is_lost(import_id, partial(task_import_execute, import_id=import_id))


@app.task(name="workers.task_imports.generate_tasks")
def generate_tasks(import_id: int) -> None:
    """Generate a task set: the same all-or-nothing path as imports, fed by a generator."""
    from webapp.tasks.imports.services import task_import_execute

    execute = partial(task_import_execute, import_id=import_id, open_source=generator_source)
    _resumed_if_the_database_is_lost(import_id, execute)


def _resumed_if_the_database_is_lost(import_id: int, execute: Callable[[], None]) -> None:
    """An import cut off by the database committed nothing: it starts again once it answers."""
    from webapp.core.database import DATABASE_LOST
    from webapp.tasks.imports.claims import task_import_release, worker_identity
    from workers.recovery import resume_after_database_loss

    try:
        execute()
    except DATABASE_LOST:
        release = partial(task_import_release, import_id=import_id, worker=worker_identity())
        resume_after_database_loss(f"import {import_id}", release=release)


def generator_source(task_import: TaskImport) -> ImportSource:
    """The tasks a generator makes for a TaskImport's family, count, seed and knobs."""
    parameters = task_import.parameters
    return generated_tasks_source(
        family=task_import.dataset,
        count=parameters["count"],
        seed=parameters["seed"],
        knobs=parameters.get("knobs", {}),
    )


def generated_tasks_source(*, family: str, count: int, seed: int, knobs: dict) -> ImportSource:  # type: ignore[type-arg]
    from models_gpu.generators import generate
    from webapp.tasks.imports.errors import TaskImportError
    from webapp.tasks.imports.mapping import build_dialab_task
    from webapp.tasks.imports.sources import ImportSource

    try:
        tasks = generate(family, count, seed=seed, **knobs)
    except ValueError as error:  # unknown family, a knob out of range: the author's to fix
        raise TaskImportError(f"cannot generate {family!r} tasks: {error}") from None
    return ImportSource(
        records=lambda: enumerate(tasks, start=1),
        build=build_dialab_task,
        unit="task",
        total=count,
    )
