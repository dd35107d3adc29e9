from __future__ import annotations

import csv
from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django_htmx.http import HttpResponseStopPolling

from models_gpu.spec.run import RunConfigError
from webapp.accounts.requests import SignedInRequest
from webapp.core.figure_export import requested_download
from webapp.core.permissions import researcher_required
from webapp.core.plotly_csp import allows_plotly
from webapp.experiments import comparison, lic, services, transfer
from webapp.experiments.charts import (
    comparison_figure,
    gap_figure,
    lic_conditions_figure,
    premature_figure,
)
from webapp.experiments.forms import LicExperimentForm
from webapp.experiments.models import LostInConversation


@researcher_required
def experiment_index(request: HttpRequest) -> HttpResponse:
    """What there is to compare: runs side by side, transfer, and Lost-in-Conversation."""
    experiments = Paginator(LostInConversation.objects.select_related("student"), 20)
    return render(
        request, "experiments/index.html", {"page": experiments.get_page(request.GET.get("page"))}
    )


def _ids(values: list[str]) -> list[int]:
    return [int(value) for value in values if value.isdigit()]


@researcher_required
@allows_plotly
def run_compare(request: HttpRequest) -> HttpResponse:
    """``?runs=3&runs=5&baseline=3&seeds=1``: the runs' curves, each line's difference from the
    baseline's, and their configuration differences. The URL is the figure: the same query
    draws it again, and ``&figure=accuracy&download=svg`` gives it as a file."""
    runs = comparison.selected_runs(_ids(request.GET.getlist("runs")))
    if not runs:
        return render(request, "experiments/compare.html", {"result": None})
    baseline_ids = _ids(request.GET.getlist("baseline"))
    by_seed = request.GET.get("seeds", "1") != "0"
    result = comparison.compare(
        runs, baseline_run_id=baseline_ids[0] if baseline_ids else None, by_seed=by_seed
    )
    figures = {"accuracy": comparison_figure(result.lines)}
    if result.gaps:
        figures["difference"] = gap_figure(result.baseline, result.gaps, result.lines)
    download = requested_download(request, figures, "comparison")
    if download:
        return download
    context = {
        "result": result,
        "runs": runs,
        "by_seed": by_seed,
        "accuracy_figure": figures["accuracy"],
        "difference_figure": figures.get("difference"),
    }
    return render(request, "experiments/compare.html", context)


TRANSFER_CSV_COLUMNS = (
    "trained_model", "base_model", "training_domains", "evaluation_domain",
    "gain", "low", "high", "p_value", "tasks", "method", "note", "tasks_trained_on",
)  # fmt: skip


def _rounded(value: float | None) -> float | str:
    return "" if value is None else round(value, 6)


@researcher_required
def transfer_matrix(request: HttpRequest) -> HttpResponse:
    """Training domain x evaluation domain: each trained model's gain over its base at turn T
    (``?download=csv`` for the cells as data)."""
    matrix = transfer.transfer_matrix()
    if request.GET.get("download") == "csv":
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="transfer-matrix.csv"'
        writer = csv.writer(response)
        writer.writerow(TRANSFER_CSV_COLUMNS)
        for row in matrix.rows:
            for domain, cell in zip(matrix.domains, row.cells, strict=True):
                if cell is not None:
                    gap = cell.gap
                    writer.writerow([
                        row.model.name, row.model.base_model, row.label, domain,
                        *(_rounded(v) for v in (gap.value, gap.low, gap.high, gap.p_value)),
                        gap.tasks, gap.method, gap.note, cell.trained_on,
                    ])  # fmt: skip
        return response
    return render(request, "experiments/transfer.html", {"matrix": matrix})


@researcher_required
def lic_create(request: SignedInRequest) -> HttpResponse:
    form = LicExperimentForm(request.POST or None, initial=request.GET.dict())
    if request.method == "POST" and form.is_valid():
        try:
            experiment = services.lic_experiment_create(
                **form.cleaned_data,
                created_by=request.user,
            )
        except RunConfigError as error:
            for problem in error.problems:
                form.add_error(
                    problem.field if problem.field in form.fields else None, problem.message
                )
        else:
            return redirect("lic_detail", pk=experiment.pk)
    return render(request, "experiments/lic_form.html", {"form": form})


def _lic_context(experiment: LostInConversation) -> dict[str, Any]:
    metrics = lic.lic_metrics(experiment)
    runs = list(experiment.runs.values())
    return {
        "experiment": experiment,
        "metrics": metrics,
        "finished": all(run.is_finished for run in runs),
        "conditions_figure": lic_conditions_figure(metrics),
        "premature_figure": premature_figure(metrics),
    }


def _lic(pk: int) -> LostInConversation:
    related = ("full_run", "concat_run", "sharded_run", "student", "user_simulator", "task_set")
    return get_object_or_404(LostInConversation.objects.select_related(*related), pk=pk)


@researcher_required
@allows_plotly
def lic_detail(request: HttpRequest, pk: int) -> HttpResponse:
    experiment = _lic(pk)
    context = _lic_context(experiment)
    figures = {"conditions": context["conditions_figure"], "premature": context["premature_figure"]}
    download = requested_download(request, figures, f"lost-in-conversation-{experiment.pk}")
    if download:
        return download
    return render(request, "experiments/lic_detail.html", context)


@researcher_required
def lic_live(request: HttpRequest, pk: int) -> HttpResponse:
    """The polled fragment; 286 (stop polling) once the three runs have ended."""
    context = _lic_context(_lic(pk))
    response = render(request, "experiments/lic_detail.html#live", context)
    if context["finished"]:
        response.status_code = HttpResponseStopPolling.status_code
    return response
