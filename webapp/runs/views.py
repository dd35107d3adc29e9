from __future__ import annotations

import csv
import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRefresh, HttpResponseStopPolling

from webapp.accounts.requests import SignedInRequest
from webapp.core.figure_export import requested_download
from webapp.core.permissions import researcher_required
from webapp.core.plotly_csp import allows_plotly
from webapp.metrics.export import CSV_COLUMNS, csv_cells, metric_rows
from webapp.metrics.figures import AccuracyCurve, PassAtK, accounting_rows
from webapp.runs import selectors, services, table, waits
from webapp.runs.charts import Curve, accuracy_by_turn_figure, pass_at_k_figure
from webapp.runs.config_view import config_sections
from webapp.runs.forms import (
    EvaluationRunForm,
    ProtocolForm,
    RunFilterForm,
    RunLabelForm,
    parse_tags,
)
from webapp.runs.models import Protocol, Run


@researcher_required
def run_list(request: HttpRequest) -> HttpResponse:
    """Every run with its headline figures: filters, sorting, grouping, and a selection that
    goes to the comparison page (or gets a tag)."""
    form = RunFilterForm(request.GET or None)
    filters = form.filters()
    sort = request.GET.get("sort", table.DEFAULT_SORT)
    page, groups = table.table_page(
        table.filtered_runs(filters),
        sort=sort,
        grouping=form.grouping(),
        page_number=request.GET.get("page"),
    )
    context = {
        "form": form,
        "page": page,
        "groups": groups,
        "sort": sort,
        "sorts": _sort_links(request, sort),
        "filtered": bool(filters),
    }
    return render(request, "runs/run_list.html", context)


def _sort_links(request: HttpRequest, current: str) -> dict[str, str]:
    """For each sortable column, the query that sorts by it (descending first for figures, a
    second click reverses)."""
    links = {}
    for key in [*table.DATABASE_SORTS, *table.FIGURE_SORTS]:
        first = key if key == "name" else f"-{key}"
        target = key if current == f"-{key}" else ("-" + key if current == key else first)
        query = request.GET.copy()
        query["sort"] = target
        query.pop("page", None)
        links[key] = f"?{query.urlencode()}"
    return links


@researcher_required
@require_POST
def runs_tag(request: HttpRequest) -> HttpResponse:
    """Tag the runs selected in the table (htmx: the table reloads)."""
    ids = [int(value) for value in request.POST.getlist("runs") if value.isdigit()]
    try:
        tags = parse_tags(request.POST.get("tag", ""))
    except ValidationError as error:
        messages.error(request, error.messages[0])
        return HttpResponseClientRefresh()
    if not ids or len(tags) != 1:
        messages.error(request, "Select runs and give one tag to add.")
        return HttpResponseClientRefresh()
    count = services.runs_tag(run_ids=ids, tag=tags[0])
    messages.success(request, f"Tagged {count} run{pluralize(count)} “{tags[0]}”.")
    return HttpResponseClientRefresh()


@researcher_required
@require_POST
def run_relabel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=pk)
    form = RunLabelForm(request.POST)
    if form.is_valid():
        services.run_relabel(
            run=run, name=form.cleaned_data["name"], tags=form.cleaned_data["tags"]
        )
        messages.success(request, "Saved the name and tags.")
    else:
        problems = "; ".join(str(error) for errors in form.errors.values() for error in errors)
        messages.error(request, f"Nothing saved: {problems}")
    return redirect("run_detail", pk=run.pk)


@researcher_required
def run_create(request: SignedInRequest) -> HttpResponse:
    form = EvaluationRunForm(request.POST or None, initial=request.GET.dict())
    if request.method == "POST" and form.is_valid():
        run = services.evaluation_run_create(
            name=form.cleaned_data["name"],
            **form.launch_arguments(),
            people=form.chosen_people(),
            created_by=request.user,
        )
        return redirect("run_detail", pk=run.pk)
    return render(request, "runs/run_form.html", {"form": form})


def _requested_ids(request: HttpRequest) -> set[int]:
    """``?compare=3&compare=5``: run ids to overlay; anything that is not an id is ignored."""
    return {int(value) for value in request.GET.getlist("compare") if value.isdigit()}


def _chart_curve(run: Run, curve: AccuracyCurve) -> Curve:
    return Curve(f"#{run.pk} {run.name}", curve, selectors.run_max_turns(run))


def _live_context(request: HttpRequest, run: Run) -> dict[str, Any]:
    """Metrics, accounting and the chart (with the overlaid runs) of one run: a fixed number of
    queries whatever the number of dialogues."""
    metrics = selectors.run_metrics(run=run)
    candidates = selectors.run_compare_candidates(run=run)
    requested = _requested_ids(request)
    compared = [other for other in candidates if other.pk in requested]
    other_curves = selectors.runs_accuracy_by_turn(runs=compared)
    curves = [_chart_curve(run, AccuracyCurve(metrics.accuracy_by_turn, metrics.counted))]
    curves += [_chart_curve(other, other_curves[other.pk]) for other in compared]
    accounting, accounting_recorded = accounting_rows(
        metrics.accounting, metrics.turn_counts, elapsed_seconds=run.elapsed_seconds
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
        "people_waiting": selectors.run_people_waiting(run=run),
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
    figures = {"accuracy": context["figure"], "pass-at-k": context["pass_at_k_figure"]}
    download = requested_download(request, figures, f"run-{run.pk}")
    if download:
        return download
    context["config_json"] = json.dumps(run.config, indent=2, ensure_ascii=False)
    context["config_sections"] = config_sections(run.config)
    context["clone_query"] = _clone_query(run)
    tags = ", ".join(tag.name for tag in run.tags.all())
    context["label_form"] = RunLabelForm(initial={"name": run.name, "tags": tags})
    context["config_roles"] = [
        (role.replace("_", " ").capitalize(), role.replace("_", "-"), spec)
        for role, spec in run.frozen_config.roles().items()
        if spec is not None
    ]
    return render(request, "runs/run_detail.html", context)


def _clone_query(run: Run) -> str:
    """The launch form's fields for another run like this one (the run form reads its initial
    values from the query)."""
    config = run.frozen_config
    fields = {
        "name": f"{run.name} (copy)",
        "task_set": run.task_set_id,
        "protocol": run.protocol_id,
        "student": run.student_id,
        "teacher": run.teacher_id,
        "user_simulator": run.user_simulator_id,
        "judge": run.judge_id,
        "samples_per_task": config.samples_per_task,
        "batch_size": config.batch_size,
        "seed": config.seed,
    }
    return urlencode({key: value for key, value in fields.items() if value is not None})


@researcher_required
def run_live(request: HttpRequest, pk: int) -> HttpResponse:
    """The polled fragment: progress, status, metrics and the chart's data.

    Once the run has ended it answers 286 so htmx swaps the final state in and stops polling.
    A training run has its own page and fragment (``training_run_live``).
    """
    run = get_object_or_404(selectors.run_list().filter(kind=Run.Kind.EVAL), pk=pk)
    context = {**_live_context(request, run), "status_out_of_band": True}
    response = render(request, "runs/run_detail.html#live", context)
    if run.is_finished:
        response.status_code = HttpResponseStopPolling.status_code
    return response


def run_wait_note(request: SignedInRequest, pk: int) -> HttpResponse:
    """The polled note by a queued run: what it waits for. Once a worker took the run (or it
    ended) the note goes, and polling stops. For researchers, and for the run's people (on
    their turn page and inbox), who are told what the worker is busy with but not which of
    others' runs."""
    run = get_object_or_404(Run, pk=pk)
    if not (request.user.is_researcher or run.people.filter(pk=request.user.pk).exists()):
        raise PermissionDenied("Only researchers and the run's people can see what it waits for.")
    wait = waits.run_wait(run)
    response = render(request, "runs/partials/_run_wait.html", {"run": run, "wait": wait})
    if wait is None:
        response.status_code = HttpResponseStopPolling.status_code
    return response


@researcher_required
def run_metrics_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """The run's metrics in tidy long form (``export.CSV_COLUMNS``), one row per number (an
    evaluation's: a training run's curves download from its page)."""
    run = get_object_or_404(selectors.run_list().filter(kind=Run.Kind.EVAL), pk=pk)
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
