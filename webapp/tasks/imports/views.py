"""Import pages: choose a source, map columns, watch it run."""

from __future__ import annotations

import json
from typing import Any

from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django_htmx.http import HttpResponseStopPolling

from webapp.accounts.requests import SignedInRequest
from webapp.core.permissions import researcher_required
from webapp.core.workers import interactive_wait
from webapp.tasks.imports import preview, services
from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.imports.forms import ImportStartForm, MappingForm
from webapp.tasks.imports.mapping import FieldMapping, lookup
from webapp.tasks.models import TaskImport

PREVIEW_CELL_CHARS = 80


@researcher_required
def task_import_start(request: SignedInRequest) -> HttpResponse:
    form = ImportStartForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        task_import = services.task_import_create(
            source=data["source"],
            task_set_name=data["task_set_name"],
            created_by=request.user,
            upload=data["file"] if data["source"] in ("upload", "lost_in_conversation") else None,
            file_format=data.get("file_format", ""),
            dataset=data["dataset"],
            split=data["split"],
        )
        if task_import.status == TaskImport.Status.DRAFT:
            return redirect("task_import_map", pk=task_import.pk)
        return redirect("task_import_detail", pk=task_import.pk)
    return render(request, "tasks/import_start.html", {"form": form})


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= PREVIEW_CELL_CHARS else text[: PREVIEW_CELL_CHARS - 1] + "…"


def _starting_mapping(form: MappingForm) -> FieldMapping | None:
    """The mapping the form shows before anything is posted (None when a post came back with
    errors: the form says what is wrong)."""
    if form.is_bound:
        return None
    starting = MappingForm(
        {name: value for name, value in form.initial.items() if value},
        columns=form.columns,
        column_word=form.column_word,
    )
    return starting.mapping() if starting.is_valid() else None


@researcher_required
def task_import_map(request: HttpRequest, pk: int) -> HttpResponse:
    """Map a draft import's columns; or, for a failed import whose upload was kept, map them
    again and rerun it."""
    task_import = get_object_or_404(TaskImport, pk=pk)
    if task_import.status != TaskImport.Status.DRAFT and not task_import.can_change_mapping:
        return redirect("task_import_detail", pk=task_import.pk)
    try:
        shown = preview.import_preview(task_import=task_import)
    except TaskImportError as error:
        context = {"task_import": task_import, "error": str(error)}
        return render(request, "tasks/import_map.html", context, status=400)
    columns, records = shown.columns, shown.records
    column_word = "column" if task_import.file_format == "csv" else "key"
    form = MappingForm(
        request.POST or None,
        columns=columns,
        column_word=column_word,
        initial=preview.mapping_form_initial(task_import, columns, records),
    )
    if request.method == "POST" and form.is_valid():
        mapping = form.mapping()
        services.task_import_confirm(
            task_import=task_import, columns=mapping.columns, defaults=mapping.defaults
        )
        return redirect("task_import_detail", pk=task_import.pk)
    # The previewed records the import would refuse under the mapping shown (a numeric answer
    # that is not a number, say), checked exactly as the worker checks every record.
    shown_mapping = _starting_mapping(form)
    problems = (
        []
        if shown_mapping is None
        else preview.preview_problems(source_preview=shown, mapping=shown_mapping)
    )
    rows = [[_cell(lookup(record, column)) for column in columns] for record in records]
    context = {
        "task_import": task_import,
        "form": form,
        "columns": columns,
        "rows": rows,
        "problems": problems,
    }
    return render(request, "tasks/import_map.html", context)


def _live_context(task_import: TaskImport) -> dict[str, Any]:
    # SQLite imports report progress only at the end (webapp.tasks.imports.services): a busy bar.
    pending = task_import.status == TaskImport.Status.PENDING
    return {
        "task_import": task_import,
        "progress_is_live": connection.vendor != "sqlite",
        "wait": interactive_wait(task_import.created_at) if pending else None,
    }


@researcher_required
def task_import_detail(request: HttpRequest, pk: int) -> HttpResponse:
    task_import = get_object_or_404(TaskImport.objects.select_related("task_set"), pk=pk)
    return render(request, "tasks/import_detail.html", _live_context(task_import))


@researcher_required
def task_import_live(request: HttpRequest, pk: int) -> HttpResponse:
    """The polled fragment; once the import has ended it answers 286 and polling stops."""
    task_import = get_object_or_404(TaskImport.objects.select_related("task_set"), pk=pk)
    response = render(request, "tasks/import_detail.html#live", _live_context(task_import))
    if task_import.is_finished:
        response.status_code = HttpResponseStopPolling.status_code
    return response
