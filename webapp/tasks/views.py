from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render, resolve_url
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect, HttpResponseStopPolling

from webapp.accounts.requests import SignedInRequest
from webapp.core.permissions import researcher_required
from webapp.core.rendering import render_markdown
from webapp.core.workers import job_wait
from webapp.tasks import exporting, selectors, services
from webapp.tasks.forms import ProbeForm, TaskForm, TaskSetForm
from webapp.tasks.generation import GenerationForm, generation_create
from webapp.tasks.models import Task, TaskSet, VerifierProbe

TASK_SETS_PER_PAGE = 25
TASKS_PER_PAGE = 50


def _go(request: SignedInRequest, to: str, **kwargs: object) -> HttpResponse:
    """A redirect that moves the whole page, from an htmx request too: after a change landed in
    a new version, the header, the address and the banners must all say which version it is."""
    url = resolve_url(to, **kwargs)
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _announce(request: HttpRequest, change: services.TaskChange, done: str = "Saved as") -> None:
    """Say where a change went when runs had frozen the version it was made on."""
    if change.new_version and change.task_set.parent is not None:
        frozen = change.task_set.parent
        messages.info(
            request,
            f"{done} v{change.task_set.version}: v{frozen.version} is frozen because runs used "
            f"it. The runs keep v{frozen.version}.",
        )


@dataclass(frozen=True)
class Versions:
    """What the pages say about a set's versions: all of them, whether this one is frozen (runs
    used it: a change makes the next version), and the newest when it is not this one (then
    this one takes no changes)."""

    lineage: list[TaskSet]
    locked: bool
    newest: TaskSet | None


def _versions(task_set: TaskSet) -> Versions:
    lineage = selectors.task_set_lineage(task_set=task_set)
    newest = selectors.task_set_newest_version(task_set=task_set, lineage=lineage)
    return Versions(
        lineage=lineage,
        locked=services.task_set_is_locked(task_set),
        newest=newest if newest.pk != task_set.pk else None,
    )


@researcher_required
def task_set_list(request: SignedInRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()
    page = Paginator(selectors.task_set_list(query=query), TASK_SETS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    domains = selectors.task_set_domain_counts(task_set_ids=[s.pk for s in page])
    context = {"page": page, "query": query, "domains": domains}
    if request.htmx:
        return render(request, "tasks/task_set_list.html#results", context)
    return render(request, "tasks/task_set_list.html", context)


@researcher_required
def task_set_create(request: SignedInRequest) -> HttpResponse:
    form = TaskSetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        task_set = services.task_set_create(
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
            created_by=request.user,
        )
        return redirect("task_set_detail", pk=task_set.pk)
    return render(request, "tasks/task_set_form.html", {"form": form})


@researcher_required
def task_set_detail(request: SignedInRequest, pk: int) -> HttpResponse:
    """The set's tasks, with a quick-add form for short-answer tasks."""
    task_set = get_object_or_404(TaskSet, pk=pk)
    form = TaskForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            change = services.task_add(task_set=task_set, **form.task_fields(), user=request.user)
        except services.OlderVersion as refusal:
            messages.error(request, str(refusal))
            return _go(request, "task_set_detail", pk=task_set.pk)
        if change.new_version:
            _announce(request, change)
            return _go(request, "task_set_detail", pk=change.task_set.pk)
        # Keep the author's choices for the next task; clear what is per task.
        form = TaskForm(
            initial={
                "verifier_kind": form.cleaned_data["verifier_kind"],
                "domain": form.cleaned_data["domain"],
            }
        )
    query = request.GET.get("q", "").strip()
    tasks = selectors.task_list(task_set=task_set, query=query)
    page = Paginator(tasks, TASKS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "task_set": task_set,
        "form": form,
        "page": page,
        "query": query,
        "versions": _versions(task_set),
    }
    if request.htmx:
        return render(request, "tasks/task_set_detail.html#tasks", context)
    return render(request, "tasks/task_set_detail.html", context)


@researcher_required
def task_set_edit(request: HttpRequest, pk: int) -> HttpResponse:
    task_set = get_object_or_404(TaskSet, pk=pk)
    form = TaskSetForm(request.POST or None, instance=task_set)
    if request.method == "POST" and form.is_valid():
        services.task_set_rename(
            task_set=task_set,
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
        )
        return redirect("task_set_detail", pk=task_set.pk)
    return render(request, "tasks/task_set_form.html", {"form": form, "task_set": task_set})


@researcher_required
@require_POST
def task_set_duplicate(request: SignedInRequest, pk: int) -> HttpResponse:
    task_set = get_object_or_404(TaskSet, pk=pk)
    copy = services.task_set_duplicate(task_set=task_set, created_by=request.user)
    messages.success(request, f"Duplicated {task_set} as {copy}.")
    return redirect("task_set_detail", pk=copy.pk)


@researcher_required
def task_set_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks for confirmation; POST deletes, unless runs used the set."""
    task_set = get_object_or_404(selectors.task_set_list(), pk=pk)
    if request.method == "POST":
        try:
            services.task_set_delete(task_set=task_set)
        except services.TaskSetInUse as error:
            messages.error(request, str(error))
            return redirect("task_set_detail", pk=task_set.pk)
        messages.success(request, f"Deleted {task_set}.")
        return redirect("task_set_list")
    return render(request, "tasks/task_set_confirm_delete.html", {"task_set": task_set})


@researcher_required
def task_create(request: SignedInRequest, pk: int) -> HttpResponse:
    task_set = get_object_or_404(TaskSet, pk=pk)
    form = TaskForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            change = services.task_add(task_set=task_set, **form.task_fields(), user=request.user)
        except services.OlderVersion as refusal:
            messages.error(request, str(refusal))
            return redirect("task_set_detail", pk=task_set.pk)
        _announce(request, change)
        assert change.task is not None
        return redirect("task_edit", pk=change.task_set.pk, task_id=change.task.pk)
    context = {"task_set": task_set, "form": form, "versions": _versions(task_set)}
    return render(request, "tasks/task_editor.html", context)


def _same_task_in(task_set: TaskSet | None, task: Task) -> Task | None:
    """The task at the same place in another version of its set (positions identify a task
    across versions); None if it was deleted there."""
    if task_set is None:
        return None
    return task_set.tasks.filter(position=task.position).first()


@researcher_required
def task_edit(request: SignedInRequest, pk: int, task_id: int) -> HttpResponse:
    task = get_object_or_404(Task.objects.select_related("task_set"), pk=task_id, task_set_id=pk)
    form = TaskForm(request.POST or None, initial=TaskForm.initial_from(task))
    if request.method == "POST" and form.is_valid():
        changes = {
            field: value
            for field, value in form.task_fields().items()
            if getattr(task, field) != value
        }
        if not changes:
            messages.info(request, "Nothing changed.")
            return redirect("task_edit", pk=pk, task_id=task.pk)
        try:
            change = services.task_update(task=task, changes=changes, user=request.user)
        except services.OlderVersion as refusal:
            messages.error(request, str(refusal))
            return redirect("task_edit", pk=pk, task_id=task.pk)
        if change.new_version:
            _announce(request, change)
        else:
            messages.success(request, "Saved.")
        assert change.task is not None
        return redirect("task_edit", pk=change.task_set.pk, task_id=change.task.pk)
    versions = _versions(task.task_set)
    context = {
        "task_set": task.task_set,
        "task": task,
        "form": form,
        "probe_form": ProbeForm(),
        "versions": versions,
        "same_task_in_newest": _same_task_in(versions.newest, task),
    }
    return render(request, "tasks/task_editor.html", context)


@researcher_required
@require_POST
def task_delete(request: SignedInRequest, pk: int, task_id: int) -> HttpResponse:
    task = get_object_or_404(Task, pk=task_id, task_set_id=pk)
    try:
        change = services.task_delete(task=task, user=request.user)
    except services.OlderVersion as refusal:
        messages.error(request, str(refusal))
        return redirect("task_edit", pk=pk, task_id=task.pk)
    if change.new_version:
        _announce(request, change, done=f"Deleted task #{task.pk} in")
    else:
        messages.success(request, f"Deleted task #{task.pk}.")
    return redirect("task_set_detail", pk=change.task_set.pk)


@researcher_required
@require_POST
def markdown_preview(request: HttpRequest) -> HttpResponse:
    return HttpResponse(render_markdown(request.POST.get("prompt", "")))


@researcher_required
@require_POST
def probe_create(request: SignedInRequest, pk: int, task_id: int) -> HttpResponse:
    task = get_object_or_404(Task, pk=task_id, task_set_id=pk)
    form = ProbeForm(request.POST)
    if not form.is_valid():
        return render(request, "tasks/partials/_probe.html", {"probe_form": form, "task": task})
    probe = services.probe_create(
        task=task, response=form.cleaned_data["response"], user=request.user
    )
    return render(request, "tasks/partials/_probe.html", {"probe": probe, "task": task})


@researcher_required
def probe_detail(request: HttpRequest, probe_id: int) -> HttpResponse:
    """Polled until the worker has checked the answer; 286 then stops the polling."""
    probe = get_object_or_404(VerifierProbe.objects.select_related("task"), pk=probe_id)
    context = {"probe": probe, "task": probe.task, "wait": job_wait(probe)}
    response = render(request, "tasks/partials/_probe.html", context)
    if probe.is_done:
        response.status_code = HttpResponseStopPolling.status_code
    return response


@researcher_required
def task_set_generate(request: SignedInRequest) -> HttpResponse:
    """Generate a task set procedurally; changing the family (htmx) swaps in its settings."""
    form = GenerationForm(request.POST or None, initial=request.GET.dict())
    if request.method == "POST" and form.is_valid():
        task_import = generation_create(**form.job_fields(), created_by=request.user)
        return redirect("task_import_detail", pk=task_import.pk)
    if request.htmx:
        return render(request, "tasks/task_set_generate.html#form", {"form": form})
    return render(request, "tasks/task_set_generate.html", {"form": form})


@researcher_required
def task_set_export(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    task_set = get_object_or_404(TaskSet, pk=pk)
    response = StreamingHttpResponse(
        exporting.task_set_jsonl_lines(task_set=task_set), content_type="application/x-ndjson"
    )
    filename = exporting.task_set_export_filename(task_set)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
