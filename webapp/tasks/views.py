from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from webapp.core.permissions import researcher_required
from webapp.tasks import selectors, services
from webapp.tasks.forms import TaskForm, TaskSetForm
from webapp.tasks.models import TaskSet

TASKS_PER_PAGE = 50


@researcher_required
def task_set_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(selectors.task_set_list(), 25).get_page(request.GET.get("page"))
    return render(request, "tasks/task_set_list.html", {"page": page})


@researcher_required
def task_set_create(request: HttpRequest) -> HttpResponse:
    form = TaskSetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        task_set = services.task_set_create(
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
            created_by=request.user,  # type: ignore[arg-type]
        )
        return redirect("task_set_detail", pk=task_set.pk)
    return render(request, "tasks/task_set_form.html", {"form": form})


@researcher_required
def task_set_detail(request: HttpRequest, pk: int) -> HttpResponse:
    task_set = get_object_or_404(TaskSet, pk=pk)
    form = TaskForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        services.task_add(
            task_set=task_set,
            prompt=data["prompt"],
            reference={"answer": data["answer"].strip()},
            verifier_kind=data["verifier_kind"],
            domain=data["domain"],
            difficulty=data["difficulty"],
        )
        # Keep the author's choices for the next task; clear what is per task.
        form = TaskForm(initial={"verifier_kind": data["verifier_kind"], "domain": data["domain"]})
    tasks = Paginator(selectors.task_list(task_set=task_set), TASKS_PER_PAGE)
    page = tasks.get_page(request.GET.get("page"))
    context = {"task_set": task_set, "form": form, "page": page}
    if request.htmx:
        return render(request, "tasks/task_set_detail.html#tasks", context)
    return render(request, "tasks/task_set_detail.html", context)
