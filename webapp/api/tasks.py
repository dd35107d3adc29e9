"""``/api/v1/task-sets``: task sets and their tasks, made as the task pages make them: created,
filled in bulk, imported from a file, generated; read with their versions.

A change to a set that runs used goes to its next version, as on the pages (the answer says
which set it went to). Tasks are validated by the rule of Dialab's own JSONL import
(``webapp.tasks.imports.mapping.build_dialab_task``), all or none; a file import goes through
the import page's form, mapping and worker, and refuses a file whose first records it would
refuse, naming the line."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import transaction
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.utils.datastructures import MultiValueDict
from ninja import File, Form, Router, Schema, Status, UploadedFile

from models_gpu.spec.generators import FAMILIES
from webapp.api.auth import RESEARCHERS, log_write
from webapp.api.common import (
    After,
    AfterPosition,
    Id,
    Offset,
    Refused,
    SettingOut,
    filled_in,
    form_refused,
    list_page,
    refused,
    setting_out,
    unknown_names,
)
from webapp.tasks import selectors, services
from webapp.tasks.forms import TaskSetForm
from webapp.tasks.generation import GenerationForm, generation_create
from webapp.tasks.imports import preview
from webapp.tasks.imports import services as imports
from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.imports.forms import ImportStartForm, MappingForm
from webapp.tasks.imports.mapping import MAPPABLE_FIELDS, build_dialab_task
from webapp.tasks.models import TaskImport, TaskSet

router = Router(tags=["task sets"], auth=RESEARCHERS)
MAX_TASKS_PER_REQUEST = 10_000


class TaskSetOut(Schema):
    id: int
    name: str
    description: str
    version: int
    task_count: int
    created_at: datetime


class VersionOut(Schema):
    id: int
    version: int


class TaskSetDetail(TaskSetOut):
    """A set with its versions: ``locked`` when runs used it (a change then makes the next
    version), ``newest`` the id of its newest version when that is another one (this one then
    takes no changes)."""

    locked: bool
    newest: int | None
    versions: list[VersionOut]
    provenance: dict[str, Any]


class TaskSetIn(Schema):
    name: str
    description: str = ""


class TaskIn(Schema):
    """A task as Dialab's own JSONL holds it (the task set page's export)."""

    prompt: str
    reference: dict[str, Any]
    verifier_kind: str = "exact"
    verifier_config: dict[str, Any] = {}
    domain: str = ""
    difficulty: float | None = None
    tags: list[str] = []
    shards: list[str] = []
    metadata: dict[str, Any] = {}
    external_id: str = ""


class TaskOut(TaskIn):
    id: int
    position: int
    verifier_kind: str


class TasksIn(Schema):
    tasks: list[TaskIn]


class TasksAdded(Schema):
    """Where the tasks went: ``task_set`` is a new version when runs had used the set."""

    task_set: TaskSetOut
    added: int
    new_version: bool


class GenerationIn(Schema):
    """A procedural set: a family (``GET /task-sets/families``), how many tasks, a seed, and
    the family's knobs (those left out take their defaults)."""

    family: str
    count: int | None = None
    seed: int | None = None
    name: str = ""
    knobs: dict[str, Any] = {}


class FamilyOut(Schema):
    name: str
    help: str
    knobs: list[SettingOut]


class ImportOut(Schema):
    """An import or generation job: ``task_set`` is set once it succeeded; ``error`` names the
    line a failed one stopped at."""

    id: int
    status: str
    is_finished: bool
    task_set_name: str
    task_set: int | None
    progress_done: int
    progress_total: int | None
    error: str
    mapping: dict[str, str]
    defaults: dict[str, Any]


def _task_set_out(task_set: TaskSet, task_count: int | None = None) -> TaskSetOut:
    return TaskSetOut(
        id=task_set.pk,
        name=task_set.name,
        description=task_set.description,
        version=task_set.version,
        task_count=task_set.tasks.count() if task_count is None else task_count,
        created_at=task_set.created_at,
    )


def _import_out(task_import: TaskImport) -> ImportOut:
    finished = (TaskImport.Status.SUCCEEDED, TaskImport.Status.FAILED)
    return ImportOut(
        id=task_import.pk,
        status=task_import.status,
        is_finished=task_import.status in finished,
        task_set_name=task_import.task_set_name,
        task_set=task_import.task_set_id,
        progress_done=task_import.progress_done,
        progress_total=task_import.progress_total,
        error=task_import.error,
        mapping=task_import.field_mapping,
        defaults=task_import.defaults,
    )


@router.get("", response={200: list[TaskSetOut], 422: Refused}, summary="Task sets, newest first")
def list_task_sets(
    request: HttpRequest, q: str = "", limit: int = 100, offset: Offset = 0, after: After = None
) -> Any:
    """As the task sets page lists them; ``q`` searches their names and descriptions.
    ``after``: walk them in id order instead, from the first id above it (0 starts)."""
    found = selectors.task_set_list(query=q.strip())
    page = list_page(found, limit=limit, offset=offset, after=after)
    if isinstance(page, Status):
        return page
    return [_task_set_out(s, s.task_count) for s in page]


@router.post("", response={201: TaskSetOut, 422: Refused}, summary="Create an empty task set")
def create_task_set(request: HttpRequest, task_set: TaskSetIn) -> Status[Any]:
    form = TaskSetForm(task_set.dict())
    if not form.is_valid():
        return form_refused(form, "The task set was not created.")
    created = services.task_set_create(
        name=form.cleaned_data["name"],
        description=form.cleaned_data["description"],
        created_by=request.user,  # type: ignore[arg-type]
    )
    log_write(request, f"create task set {created.pk}")
    return Status(201, _task_set_out(created, 0))


@router.get("/families", response=list[FamilyOut], summary="Generator families and their knobs")
def list_families(request: HttpRequest) -> list[FamilyOut]:
    return [
        FamilyOut(
            name=name,
            help=family.help,
            knobs=[setting_out(knob) for knob in family.knobs],
        )
        for name, family in FAMILIES.items()
    ]


@router.post(
    "/generate",
    response={202: ImportOut, 422: Refused},
    summary="Generate a task set procedurally (a worker makes it)",
)
def generate_task_set(request: HttpRequest, generation: GenerationIn) -> Status[Any]:
    """Through the generate page's form: the same families, bounds and knob checks. The answer
    is the job; ``GET /task-sets/imports/{id}`` follows it to its task set."""
    family = FAMILIES.get(generation.family)
    if family:
        unknown = unknown_names(generation.knobs, (k.name for k in family.knobs), "knob")
        if unknown:
            return refused("Nothing was generated.", {"knobs": unknown})
    knobs = {f"knob_{name}": value for name, value in generation.knobs.items()}
    blank = GenerationForm(initial={"family": generation.family})
    form = GenerationForm(filled_in(blank, generation.dict(exclude={"knobs"}) | knobs))
    if not form.is_valid():
        problems = {
            field.replace("knob_", "knobs.", 1): [str(message) for message in errors]
            for field, errors in form.errors.items()
        }
        return refused("Nothing was generated.", problems)
    job = generation_create(**form.job_fields(), created_by=request.user)  # type: ignore[arg-type]
    log_write(request, f"generate task set (job {job.pk})")
    return Status(202, _import_out(job))


def _mapping_form(
    task_import: TaskImport, mapping: str, verifier_kind: str, domain: str
) -> MappingForm:
    """The import page's mapping step, filled from the request; without a mapping, with the
    page's own guess (which the answer then shows)."""
    shown = preview.import_preview(task_import=task_import)
    if mapping.strip():
        try:
            columns = json.loads(mapping)
        except json.JSONDecodeError as error:
            raise TaskImportError(f"the mapping is not valid JSON: {error.msg}") from None
        if not isinstance(columns, dict):
            raise TaskImportError('the mapping is a JSON object: {"prompt": "question", ...}')
        unknown = unknown_names(columns, MAPPABLE_FIELDS, "task field")
        if unknown:
            raise TaskImportError(f"the mapping names a field a task does not have. {unknown[0]}")
        data = {f"map_{name}": column for name, column in columns.items()}
        data |= {"default_verifier_kind": verifier_kind, "default_domain": domain}
    else:
        data = preview.mapping_form_initial(task_import, shown.columns, shown.records)
    column_word = "column" if task_import.file_format == "csv" else "key"
    form = MappingForm(data, columns=shown.columns, column_word=column_word)
    if form.is_valid():
        problems = preview.preview_problems(source_preview=shown, mapping=form.mapping())
        for problem in problems:
            form.add_error(None, problem[0].upper() + problem[1:] + ".")
    return form


@router.post(
    "/import",
    response={202: ImportOut, 422: Refused},
    summary="Import a file into a new task set (a worker reads it)",
)
def import_task_set(
    request: HttpRequest,
    file: File[UploadedFile],
    name: Form[str],
    file_format: Form[str] = "",
    mapping: Form[str] = "",
    verifier_kind: Form[str] = "",
    domain: Form[str] = "",
) -> Status[Any]:
    """The import page, in one request: a JSONL, JSON or CSV file, or Dialab's own JSONL
    (``file_format=dialab``, no mapping). ``mapping`` is a JSON object from task field to the
    file's key or column (``{"prompt": "question", "answer": "solution"}``); without it, the
    mapping page's guess is used. ``verifier_kind`` and ``domain`` are defaults for tasks whose
    record has none. A file whose first records the mapping cannot make into tasks is refused
    with their lines, and nothing is imported."""
    form = ImportStartForm(
        {"task_set_name": name, "source": TaskImport.Source.UPLOAD, "file_format": file_format},
        MultiValueDict({"file": [file]}),
    )
    if not form.is_valid():
        return form_refused(form, "Nothing was imported.")
    with transaction.atomic():
        job = imports.task_import_create(
            source=TaskImport.Source.UPLOAD,
            task_set_name=form.cleaned_data["task_set_name"],
            created_by=request.user,  # type: ignore[arg-type]
            upload=form.cleaned_data["file"],
            file_format=form.cleaned_data["file_format"],
        )
        if job.status == TaskImport.Status.DRAFT:
            try:
                mapped = _mapping_form(job, mapping, verifier_kind, domain)
            except TaskImportError as error:
                job.upload.delete(save=False)
                transaction.set_rollback(True)
                return refused("Nothing was imported.", {"file": [str(error)]})
            if not mapped.is_valid():
                job.upload.delete(save=False)
                transaction.set_rollback(True)
                return form_refused(mapped, "Nothing was imported.")
            chosen = mapped.mapping()
            imports.task_import_confirm(
                task_import=job, columns=chosen.columns, defaults=chosen.defaults
            )
            job.refresh_from_db()
    log_write(request, f"import task set (job {job.pk})")
    return Status(202, _import_out(job))


@router.get("/imports/{import_id}", response=ImportOut, summary="An import or generation job")
def get_import(request: HttpRequest, import_id: Id) -> ImportOut:
    return _import_out(get_object_or_404(TaskImport, pk=import_id))


@router.get("/{task_set_id}", response=TaskSetDetail, summary="A task set with its versions")
def get_task_set(request: HttpRequest, task_set_id: Id) -> TaskSetDetail:
    task_set = get_object_or_404(TaskSet, pk=task_set_id)
    lineage = selectors.task_set_lineage(task_set=task_set)
    newest = selectors.task_set_newest_version(task_set=task_set, lineage=lineage)
    return TaskSetDetail(
        **_task_set_out(task_set).dict(),
        locked=services.task_set_is_locked(task_set),
        newest=newest.pk if newest.pk != task_set.pk else None,
        versions=[VersionOut(id=s.pk, version=s.version) for s in lineage],
        provenance=task_set.provenance,
    )


@router.get(
    "/{task_set_id}/tasks",
    response={200: list[TaskOut], 422: Refused},
    summary="A task set's tasks, in order",
)
def list_tasks(
    request: HttpRequest,
    task_set_id: Id,
    q: str = "",
    limit: int = 100,
    offset: Offset = 0,
    after_position: AfterPosition = None,
) -> Any:
    """With their private references: the task pages show them to researchers.
    ``after_position``: walk the tasks instead, from the first position above it (-1 starts;
    positions are unique in a set, so the next page goes on after the last position read)."""
    task_set = get_object_or_404(TaskSet, pk=task_set_id)
    tasks = selectors.task_list(task_set=task_set, query=q.strip())
    page = list_page(tasks, limit=limit, offset=offset, after=after_position, key="position")
    return page if isinstance(page, Status) else list(page)


@router.post(
    "/{task_set_id}/tasks",
    response={201: TasksAdded, 409: Refused, 422: Refused},
    summary="Add tasks at the end of a set, all or none",
)
def add_tasks(request: HttpRequest, task_set_id: Id, body: TasksIn) -> Status[Any]:
    """Each task is checked as a line of Dialab's own JSONL import (its verifier can check its
    reference, its fields are within bounds); one bad task refuses them all, named by its place
    in the list (``task 3``). A set that runs used takes them in its next version (409 when a
    newer version replaced it)."""
    task_set = get_object_or_404(TaskSet, pk=task_set_id)
    if not body.tasks or len(body.tasks) > MAX_TASKS_PER_REQUEST:
        problem = f"Send between 1 and {MAX_TASKS_PER_REQUEST:,} tasks."
        return refused("No task was added.", {"tasks": [problem]})
    built, problems = [], []
    for number, task in enumerate(body.tasks, start=1):
        try:
            built.append(build_dialab_task(f"task {number}", task.dict(), number - 1))
        except TaskImportError as error:
            problems.append(str(error))
    if problems:
        return refused("No task was added.", {"tasks": problems})
    try:
        change = services.tasks_add_many(task_set=task_set, tasks=built, user=request.user)  # type: ignore[arg-type]
    except services.OlderVersion as error:
        return Status(409, Refused(detail=str(error), problems={}))
    log_write(request, f"add {len(built)} tasks to task set {change.task_set.pk}")
    added = TasksAdded(
        task_set=_task_set_out(change.task_set), added=len(built), new_version=change.new_version
    )
    return Status(201, added)
