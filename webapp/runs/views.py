from __future__ import annotations

import csv
import json
from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.core.permissions import researcher_required
from webapp.core.plotly_csp import allows_plotly
from webapp.runs import selectors, services
from webapp.runs.charts import Curve, accuracy_by_turn_figure, pass_at_k_figure
from webapp.runs.forms import EvaluationRunForm, ProtocolForm
from webapp.runs.metrics import (
    CSV_COLUMNS,
    PassAtK,
    TurnAccuracy,
    accounting_rows,
    csv_cells,
    metric_rows,
)
from webapp.runs.models import Protocol, Run


@researcher_required
def run_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(selectors.run_list(), 25).get_page(request.GET.get("page"))
    return render(request, "runs/run_list.html", {"page": page})


@researcher_required
def run_create(request: HttpRequest) -> HttpResponse:
    form = EvaluationRunForm(request.POST or None, initial=request.GET.dict())
    if request.method == "POST" and form.is_valid():
        run = services.evaluation_run_create(
            name=form.cleaned_data["name"],
            **form.launch_arguments(),
            created_by=request.user,  # type: ignore[arg-type]
        )
        return redirect("run_detail", pk=run.pk)
    return render(request, "runs/run_form.html", {"form": form})


def _requested_ids(request: HttpRequest) -> set[int]:
    """``?compare=3&compare=5``: run ids to overlay; anything that is not an id is ignored."""
    return {int(value) for value in request.GET.getlist("compare") if value.isdigit()}


def _elapsed_seconds(run: Run) -> float | None:
    if run.started_at is None:
        return None
    return ((run.finished_at or timezone.now()) - run.started_at).total_seconds()


def _chart_curve(run: Run, points: list[TurnAccuracy]) -> Curve:
    return Curve(f"#{run.pk} {run.name}", points, selectors.run_max_turns(run), run.is_provisional)


def _live_context(request: HttpRequest, run: Run) -> dict[str, object]:
    """Metrics, accounting and the chart (with the overlaid runs) of one run: a fixed number of
    queries whatever the number of dialogues."""
    metrics = selectors.run_metrics(run=run)
    candidates = selectors.run_compare_candidates(run=run)
    requested = _requested_ids(request)
    compared = [other for other in candidates if other.pk in requested]
    other_curves = selectors.runs_accuracy_by_turn(runs=compared)
    curves = [_chart_curve(run, metrics.accuracy_by_turn)]
    curves += [_chart_curve(other, other_curves[other.pk]) for other in compared]
    accounting, accounting_recorded = accounting_rows(
        metrics.accounting, metrics.turn_counts, elapsed_seconds=_elapsed_seconds(run)
    )
    return {
        "run": run,
        "metrics": metrics,
        "curve": metrics.accuracy_by_turn,
        "figure": accuracy_by_turn_figure(curves),
        "candidates": candidates,
        "compared_ids": {other.pk for other in compared},
        "compare_query": urlencode([("compare", other.pk) for other in compared]),
        "accounting": accounting,
        "accounting_recorded": accounting_recorded,
        "pass_at_k_figure": _pass_at_k_figure(run, metrics.pass_at_k),
    }


def _pass_at_k_figure(run: Run, points: list[PassAtK]) -> dict[str, object] | None:
    """The pass@k curve, for a run that asked for more than one sample per task."""
    samples = run.frozen_config.samples_per_task
    return pass_at_k_figure(points, samples_per_task=samples) if samples > 1 else None


@researcher_required
@allows_plotly
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(selectors.run_list(), pk=pk)
    if run.kind == Run.Kind.TRAIN:  # its page draws curves by step, not dialogues
        return redirect("training_run_detail", pk=run.pk)
    context = _live_context(request, run)
    context["config_json"] = json.dumps(run.config, indent=2, ensure_ascii=False)
    context["config_roles"] = [
        (role.replace("_", " ").capitalize(), role.replace("_", "-"), spec)
        for role, spec in run.frozen_config.roles().items()
        if spec is not None
    ]
    return render(request, "runs/run_detail.html", context)


@researcher_required
def run_live(request: HttpRequest, pk: int) -> HttpResponse:
    """The polled fragment: progress, status, metrics and the chart's data.

    Once the run has ended it answers 286 so htmx swaps the final state in and stops polling.
    """
    run = get_object_or_404(selectors.run_list(), pk=pk)
    response = render(request, "runs/run_detail.html#live", _live_context(request, run))
    if run.is_finished:
        response.status_code = HttpResponseStopPolling.status_code
    return response


@researcher_required
def run_metrics_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """The run's metrics in tidy long form (``metrics.CSV_COLUMNS``), one row per number."""
    run = get_object_or_404(selectors.run_list(), pk=pk)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-metrics.csv"'
    writer = csv.writer(response)
    writer.writerow(CSV_COLUMNS)
    for row in metric_rows(selectors.run_metrics(run=run)):
        writer.writerow(csv_cells(row))
    return response


@researcher_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=pk)
    services.run_cancel(run=run)
    return redirect("run_detail", pk=run.pk)


@researcher_required
def protocol_list(request: HttpRequest) -> HttpResponse:
    """The protocols (retired ones with ``?retired=1``) and the form that adds one."""
    form = ProtocolForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        services.protocol_create(name=form.cleaned_data["name"], spec=form.protocol_spec())
        return redirect("protocol_list")
    show_retired = request.GET.get("retired") == "1"
    context = {
        "protocols": selectors.protocol_list(include_retired=show_retired),
        "show_retired": show_retired,
        "retired_count": selectors.retired_protocol_count(),
        "form": form,
    }
    return render(request, "runs/protocol_list.html", context)


@researcher_required
def protocol_edit(request: HttpRequest, pk: int) -> HttpResponse:
    protocol = get_object_or_404(Protocol, pk=pk)
    form = ProtocolForm(request.POST or None, instance=protocol)
    if request.method == "POST" and form.is_valid():
        services.protocol_update(
            protocol=protocol, name=form.cleaned_data["name"], spec=form.protocol_spec()
        )
        messages.success(request, f"Saved {protocol}.")
        return redirect("protocol_list")
    context = {"form": form, "protocol": protocol, "editing": True}
    return render(request, "runs/protocol_form.html", context)


@researcher_required
def protocol_clone(request: HttpRequest, pk: int) -> HttpResponse:
    """The add form pre-filled with a protocol's settings and templates, under a new name."""
    source = get_object_or_404(Protocol, pk=pk)
    copy = Protocol(
        name=f"{source.name} (copy)",
        prompt_templates=source.prompt_templates,
        **{field: getattr(source, field) for field in services.PROTOCOL_SETTINGS},
    )
    form = ProtocolForm(request.POST or None, instance=copy)
    if request.method == "POST" and form.is_valid():
        protocol = services.protocol_create(
            name=form.cleaned_data["name"], spec=form.protocol_spec()
        )
        messages.success(request, f"Added {protocol}.")
        return redirect("protocol_list")
    context = {"form": form, "protocol": source, "editing": False}
    return render(request, "runs/protocol_form.html", context)


@researcher_required
@require_POST
def protocol_retire(request: HttpRequest, pk: int) -> HttpResponse:
    """Retire (``retired=1``) or restore (``retired=0``) a protocol."""
    protocol = get_object_or_404(Protocol, pk=pk)
    retired = request.POST.get("retired") == "1"
    services.protocol_set_retired(protocol=protocol, retired=retired)
    if retired:
        messages.success(request, f"Retired {protocol}: the run form no longer offers it.")
        return redirect("protocol_list")
    messages.success(request, f"Restored {protocol}.")
    return redirect(f"{reverse('protocol_list')}?retired=1")
