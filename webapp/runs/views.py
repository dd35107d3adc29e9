from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.core.permissions import researcher_required
from webapp.runs import selectors, services
from webapp.runs.charts import accuracy_by_turn_figure
from webapp.runs.forms import EvaluationRunForm, ProtocolForm
from webapp.runs.models import Run


@researcher_required
def run_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(selectors.run_list(), 25).get_page(request.GET.get("page"))
    return render(request, "runs/run_list.html", {"page": page})


@researcher_required
def run_create(request: HttpRequest) -> HttpResponse:
    form = EvaluationRunForm(request.POST or None, initial=request.GET.dict())
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        run = services.evaluation_run_create(
            name=data["name"],
            task_set=data["task_set"],
            student=data["student"],
            teacher=data["teacher"],
            protocol=data["protocol"],
            samples_per_task=data["samples_per_task"],
            seed=data["seed"],
            created_by=request.user,  # type: ignore[arg-type]
        )
        return redirect("run_detail", pk=run.pk)
    return render(request, "runs/run_form.html", {"form": form})


def _live_context(run: Run) -> dict[str, object]:
    curve = selectors.run_accuracy_by_turn(run=run)
    figure = accuracy_by_turn_figure(curve, label=run.name)
    return {"run": run, "curve": curve, "figure": figure}


@researcher_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(selectors.run_list(), pk=pk)
    return render(request, "runs/run_detail.html", _live_context(run))


@researcher_required
def run_live(request: HttpRequest, pk: int) -> HttpResponse:
    """The polled fragment: progress, status and the chart's data.

    Once the run has ended it answers 286 so htmx swaps the final state in and stops polling.
    """
    run = get_object_or_404(selectors.run_list(), pk=pk)
    response = render(request, "runs/run_detail.html#live", _live_context(run))
    if run.is_finished:
        response.status_code = HttpResponseStopPolling.status_code
    return response


@researcher_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=pk)
    services.run_cancel(run=run)
    return redirect("run_detail", pk=run.pk)


@researcher_required
def protocol_list(request: HttpRequest) -> HttpResponse:
    form = ProtocolForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        form.save()
        return redirect("protocol_list")
    context = {"protocols": selectors.protocol_list(), "form": form}
    return render(request, "runs/protocol_list.html", context)
