"""The writes of an import: its tasks, all or nothing, and a TaskImport's life.

The tasks are written with ``bulk_create`` in batches inside ONE transaction: a bad record
anywhere rolls back everything, so an import commits all its tasks or none.

Progress while the transaction is open is written through a second, autocommit connection
(``claims.ImportLiveness``, with the worker's heartbeat), so the status page sees it even
though the tasks themselves are not committed yet (and the count stays truthful after a
rollback: the import is then marked failed). On SQLite that connection would wait on the write
lock the import holds, so there progress is recorded only at the end; the status page shows a
busy bar meanwhile. A worker that dies midway commits nothing, and the import is started again
by another claim (``webapp.tasks.imports.claims``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q

from models_gpu.spec.generators import generator_settings
from webapp.accounts.models import User
from webapp.core.database import DATABASE_LOST
from webapp.core.dispatch import enqueue_on_commit
from webapp.tasks.imports.claims import (
    IMPORT_TASK,
    ClaimLost,
    ImportLiveness,
    claim_fail,
    claim_succeed,
    task_import_claim,
    worker_identity,
)
from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.imports.mapping import is_blank
from webapp.tasks.imports.sources import ImportSource, check_size, open_import_source
from webapp.tasks.models import Task, TaskImport, TaskSet

logger = logging.getLogger(__name__)

BATCH_SIZE = 2000


def _insert(batch: list[Task], unit: str, last_number: int) -> None:
    try:
        with transaction.atomic():  # a savepoint, so the error below can still be reported
            Task.objects.bulk_create(batch)
    except IntegrityError:
        raise TaskImportError(
            f"{unit}s {last_number - len(batch) + 1}–{last_number}: two tasks have the same "
            "'position'; positions must be unique within a task set"
        ) from None


def import_into_task_set(
    *,
    source: ImportSource,
    task_set_name: str,
    description: str = "",
    provenance: dict[str, Any] | None = None,
    created_by: User | None = None,
    on_progress: Callable[[int], None] | None = None,
    before_commit: Callable[..., None] | None = None,
    batch_size: int = BATCH_SIZE,
) -> TaskSet:
    """Read, validate and write every task in one transaction; raise TaskImportError (and write
    nothing) on the first bad record. ``before_commit(task_set=, done=)`` runs last inside the
    transaction: what it writes commits with the tasks, and what it raises rolls them back.
    ``provenance`` records on the set what made it (see :func:`task_import_provenance`)."""
    with transaction.atomic():
        task_set = TaskSet.objects.create(
            name=task_set_name,
            description=description,
            provenance=provenance or {},
            created_by=created_by,
        )
        batch: list[Task] = []
        done = 0
        for index, (number, record) in enumerate(source.records()):
            task = source.build(f"{source.unit} {number}", record, index)
            task.task_set = task_set
            batch.append(task)
            if len(batch) >= batch_size:
                _insert(batch, source.unit, number)
                done += len(batch)
                batch = []
                if on_progress is not None:
                    on_progress(done)
        if batch:
            _insert(batch, source.unit, number)
            done += len(batch)
        if done == 0:
            raise TaskImportError(
                f"the source has no records: no tasks to import ({source.unit} 1)"
            )
        if on_progress is not None:
            on_progress(done)
        if before_commit is not None:
            before_commit(task_set=task_set, done=done)
    return task_set


def task_import_create(
    *,
    source: str,
    task_set_name: str,
    created_by: User | None,
    upload: Any = None,
    file_format: str = "",
    dataset: str = "",
    split: str = "",
) -> TaskImport:
    """Record an import. Sources that need no mapping go to a worker at once; the others wait
    (as drafts) for the mapping step."""
    if upload is not None:
        check_size(upload.size)
    task_import = TaskImport(
        source=source,
        task_set_name=task_set_name,
        file_format=file_format,
        dataset=dataset,
        split=split,
        created_by=created_by,
    )
    needs_mapping = task_import.needs_mapping
    task_import.status = TaskImport.Status.DRAFT if needs_mapping else TaskImport.Status.PENDING
    if source == TaskImport.Source.HUMANEVAL:
        task_import.progress_total = 164
    if upload is not None:
        task_import.upload.save(Path(upload.name).name, upload, save=False)
    with transaction.atomic():
        task_import.save()
        if not needs_mapping:
            enqueue_on_commit(IMPORT_TASK, task_import.pk)
    return task_import


def task_import_confirm(
    *, task_import: TaskImport, columns: dict[str, str], defaults: dict[str, Any]
) -> bool:
    """Store the mapping and hand the import to a worker: a draft, or a failed import mapped
    again (its upload was kept for that), which starts over from nothing. False if it was
    neither any more (another tab confirmed it first, say)."""
    mappable = Q(status=TaskImport.Status.DRAFT)
    if task_import.can_change_mapping:
        mappable |= Q(status=TaskImport.Status.FAILED)
    with transaction.atomic():
        confirmed = TaskImport.objects.filter(mappable, pk=task_import.pk).update(
            field_mapping={name: column for name, column in columns.items() if column},
            defaults={name: value for name, value in defaults.items() if not is_blank(value)},
            status=TaskImport.Status.PENDING,
            # What the failed attempt left: its error, progress and claim.
            error="",
            progress_done=0,
            started_at=None,
            finished_at=None,
            worker="",
            heartbeat_at=None,
            attempts=0,
        )
        if confirmed:
            enqueue_on_commit(IMPORT_TASK, task_import.pk)
    return bool(confirmed)


def generator_provenance(
    *, family: str, count: int, seed: int, knobs: Mapping[str, Any]
) -> dict[str, Any]:
    """A generated set's provenance: the family, count, seed and every knob, defaults included,
    which make the same tasks again. ValueError for knobs the family refuses."""
    settings = generator_settings(family, knobs)
    return {"generator": family, "count": count, "seed": seed, "knobs": settings}


def import_provenance(
    *,
    source: str,
    file: str = "",
    file_format: str = "",
    dataset: str = "",
    split: str = "",
    mapping: Mapping[str, str] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An imported set's provenance: the source, the file's name and format or the dataset, and
    the mapping; what is empty is left out."""
    given = {
        "file": file,
        "format": file_format,
        "dataset": dataset,
        "split": split,
        "mapping": dict(mapping or {}),
        "defaults": dict(defaults or {}),
    }
    return {"import": source, **{key: value for key, value in given.items() if value}}


def task_import_provenance(task_import: TaskImport) -> dict[str, Any]:
    """What made an import's task set, recorded on the set (see :func:`generator_provenance`
    and :func:`import_provenance`)."""
    if task_import.is_generation:
        parameters = task_import.parameters
        return generator_provenance(
            family=task_import.dataset,
            count=parameters["count"],
            seed=parameters["seed"],
            knobs=parameters.get("knobs", {}),
        )
    return import_provenance(
        source=task_import.source,
        # The name as stored: the storage may have added a suffix to keep names unique.
        file=Path(task_import.upload.name).name if task_import.upload else "",
        file_format=task_import.file_format,
        dataset=task_import.dataset,
        split=task_import.split,
        mapping=task_import.field_mapping,
        defaults=task_import.defaults,
    )


def task_import_execute(
    *,
    import_id: int,
    open_source: Callable[[TaskImport], ImportSource] = open_import_source,
) -> None:
    """Worker side: claim, import everything or nothing, record the outcome.

    ``open_source`` lets the worker bring sources the web side cannot open itself (the
    procedural generators live in model code). A worker that dies midway commits nothing, and
    a later claim starts the import again (``webapp.tasks.imports.claims``).
    """
    worker = worker_identity()
    if not task_import_claim(import_id=import_id, worker=worker):
        return
    task_import = TaskImport.objects.get(pk=import_id)
    source: ImportSource | None = None
    # Kept for a later claim (another worker's, or ours once the database is back), or for mapping
    # a failed import again.
    keep_upload = False
    try:
        with ImportLiveness(import_id) as liveness:
            source = open_source(task_import)
            if source.total is not None:
                TaskImport.objects.filter(pk=import_id).update(progress_total=source.total)
            import_into_task_set(
                source=source,
                task_set_name=task_import.task_set_name,
                provenance=task_import_provenance(task_import),
                created_by=task_import.created_by,
                on_progress=liveness,
                before_commit=partial(claim_succeed, import_id=import_id, worker=worker),
            )
    except ClaimLost:
        keep_upload = True
        logger.warning("import %s: another worker took it over; this one wrote nothing", import_id)
    except DATABASE_LOST:
        keep_upload = True  # nothing committed, nothing to record: it is resumed (workers)
        raise
    except TaskImportError as error:
        claim_fail(import_id=import_id, worker=worker, error=str(error))
        # A value the mapping cannot convert is fixed by mapping again, not by a new upload.
        keep_upload = task_import.needs_mapping
    except Exception as error:
        claim_fail(import_id=import_id, worker=worker, error=f"internal error: {error}")
        raise
    finally:
        if source is not None:
            source.close()
        if task_import.upload and not keep_upload:
            # The tasks now live in the database (or the import failed beyond what mapping again
            # could fix): the upload is not kept.
            task_import.upload.delete(save=False)
            TaskImport.objects.filter(pk=import_id).update(upload="")
