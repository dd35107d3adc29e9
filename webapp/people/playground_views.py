"""Playground pages: start a conversation about one task, then wait for the model's turn."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect, HttpResponseStopPolling

from models_gpu.spec.run import RunConfigError
from webapp.accounts.requests import SignedInRequest
from webapp.core.permissions import researcher_required
from webapp.dialogues.models import Dialogue, PendingTurn
from webapp.people.playground import PlaygroundForm, playground_start
from webapp.runs.models import Run
from webapp.tasks.models import Task


@researcher_required
def playground_new(request: SignedInRequest, task_id: int) -> HttpResponse:
    task = get_object_or_404(Task.objects.select_related("task_set"), pk=task_id)
    form = PlaygroundForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            run = playground_start(task=task, user=request.user, **form.cleaned_data)
        except RunConfigError as error:
            for problem in error.problems:
                form.add_error(None, problem.message)
        else:
            return redirect("playground_wait", run_id=run.pk)
    return render(request, "people/playground_new.html", {"form": form, "task": task})


@researcher_required
def playground_wait(request: SignedInRequest, run_id: int) -> HttpResponse:
    """While the model speaks: polls until the person's turn comes (then opens it) or the
    dialogue ends (then links to it)."""
    run = get_object_or_404(Run, pk=run_id, created_by=request.user)
    pending = (
        PendingTurn.objects.filter(run=run, status=PendingTurn.Status.OPEN).order_by("-id").first()
    )
    dialogue = Dialogue.objects.filter(run=run).first()
    if pending is not None:
        url = reverse("people_turn", args=[pending.pk])
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    context = {"run": run, "dialogue": dialogue}
    if request.htmx:
        response = render(request, "people/playground_wait.html#state", context)
        if dialogue is not None or run.is_finished:
            response.status_code = HttpResponseStopPolling.status_code
        return response
    return render(request, "people/playground_wait.html", context)
