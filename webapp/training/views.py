"""Training pages: the launch form (from a transcript filter) and a training run's page."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from models_gpu.spec.reports import PRIMING_PREFIX
from models_gpu.spec.run import RunConfigError
from models_gpu.spec.training_run import TrainingRunConfig
from webapp.accounts.models import User
from webapp.accounts.requests import SignedInRequest
from webapp.core.figure_export import requested_download
from webapp.core.permissions import researcher_required
from webapp.core.plotly_csp import allows_plotly
from webapp.core.workers import job_wait
from webapp.metrics.comparison import Gap
from webapp.metrics.figures import feedback_use_table
from webapp.metrics.stats import Proportion
from webapp.runs import selectors as run_selectors
from webapp.runs.charts import Curve, accuracy_by_turn_figure
from webapp.runs.models import MetricPoint, Run
from webapp.training import launch, services
from webapp.training.charts import training_curves_figure, training_panels
from webapp.training.forms import EVALUATION_FIELDS, OnlineTrainingForm, TrainingForm
from webapp.training.heldout import (
    Overlap,
    overlap,
    task_set_task_keys,
    training_run_task_keys,
)
from webapp.training.models import TrainingPreview
from webapp.training.selectors import training_run_evaluations


@researcher_required
def training_create(request: SignedInRequest) -> HttpResponse:
    """GET ``?<transcript filter>``: the form for training on what that filter selects."""
    initial = {"selection": _selection(request)}
    form = TrainingForm(request.POST or None, initial=initial, reader=request.user)
    return _launch_page(request, form, launch.training_launch, "training/training_form.html")


def _selection(request: HttpRequest) -> str:
    """The transcript filter a link from the transcript list carries (its page is not part of
    the selection)."""
    selection = request.GET.copy()
    selection.pop("page", None)
    return selection.urlencode()


def _launch_page(
    request: SignedInRequest,
    form: Any,
    launch: Callable[[Any, User], Run],
    template: str,
) -> HttpResponse:
    """A launch form's page: on a valid POST, ``launch`` it and go to the run, or show the
    configuration's problems on the fields they are about."""
    if request.method == "POST" and form.is_valid():
        try:
            run = launch(form, request.user)
        except RunConfigError as error:
            for problem in error.problems:
                field = problem.field if problem.field in form.fields else None
                form.add_error(field, problem.message)
        else:
            return redirect("training_run_detail", pk=run.pk)
    return render(request, template, {"form": form})


@researcher_required
@require_POST
def training_preview_create(request: SignedInRequest) -> HttpResponse:
    """The form's "Preview" (htmx): a worker tokenizes a sample of the selection; the answer is
    a fragment that polls the preview until it is done."""
    form = TrainingForm(request.POST, reader=request.user)
    form.is_valid()
    # The held-out evaluation does not change what is trained: it may still be empty.
    blocking = {
        name: errors for name, errors in form.errors.items() if name not in EVALUATION_FIELDS
    }
    if blocking:
        return render(request, "training/training_preview.html", {"errors": blocking})
    preview = services.preview_create(
        selection=form.selection_query,
        base_model=form.cleaned_data["base_model"],
        training=form.training_config(),
        created_by=request.user,
    )
    return render(request, "training/training_preview.html", {"preview": preview})


@researcher_required
def training_preview_detail(request: HttpRequest, pk: int) -> HttpResponse:
    preview = get_object_or_404(TrainingPreview, pk=pk, created_by=request.user)
    context = {"preview": preview, "wait": job_wait(preview)}
    response = render(request, "training/training_preview.html", context)
    if preview.is_done:
        response.status_code = HttpResponseStopPolling.status_code
    return response


@researcher_required
def training_online_create(request: SignedInRequest) -> HttpResponse:
    """The online SML launch form; with the single-turn baseline, two sibling runs. GET
    ``?<transcript filter>`` fills in the priming stage's selection."""
    initial = {"priming_selection": _selection(request)}
    form = OnlineTrainingForm(request.POST or None, initial=initial, reader=request.user)
    return _launch_page(request, form, launch.online_training_launch, "training/online_form.html")


@dataclass(frozen=True)
class EvaluationTurn:
    """The base's and the trained model's accuracy after one turn, and the difference."""

    base: Proportion | None
    trained: Proportion | None
    gap: Gap


def _evaluations(run: Run) -> dict[str, Any]:
    """The base and trained models' held-out evaluations, their curves overlaid, and the
    difference per turn: paired over their tasks, as every comparison page computes it; and
    their feedback use (the share of later moves consistent with the feedback so far)."""
    trained_model = run.produced_models.first()
    evaluations = training_run_evaluations(run=run, trained_model=trained_model)
    base_run, trained_run, shown = evaluations.base, evaluations.trained, evaluations.runs
    curves = run_selectors.runs_accuracy_by_turn(runs=shown)
    differences = []
    if base_run is not None and trained_run is not None:
        gaps = run_selectors.runs_compared(baseline=base_run, other=trained_run)
        points = zip(curves[base_run.pk].points, curves[trained_run.pk].points, gaps, strict=False)
        differences = [
            EvaluationTurn(base.accuracy, trained.accuracy, gap) for base, trained, gap in points
        ]
    labels = {base_run: "base", trained_run: "trained"}
    feedback = run_selectors.runs_feedback_use(runs=shown)
    feedback_turns, feedback_rows = feedback_use_table([feedback.get(r.pk, []) for r in shown])
    figure = accuracy_by_turn_figure(
        [
            Curve(f"{labels[r]}: #{r.pk} {r.name}", curves[r.pk], run_selectors.run_max_turns(r))
            for r in shown
        ]
    )
    return {
        "trained_model": trained_model,
        "base_run": base_run,
        "trained_run": trained_run,
        "differences": differences,
        "evaluation_figure": figure,
        # (label, feedback use) of each evaluation: none unless one has checked moves.
        "feedback_turns": feedback_turns,
        "feedback_use": [(labels[r], row) for r, row in zip(shown, feedback_rows, strict=False)],
        "evaluations_finished": all(r.is_finished for r in shown) and len(shown) == 2,
    }


def _live_context(run: Run) -> dict[str, Any]:
    config = TrainingRunConfig.from_json(run.config)
    points: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for name, step, value in MetricPoint.objects.filter(run=run).values_list(
        "name", "step", "value"
    ):
        points[name].append((step, value))
    latest = {name: values[-1][1] for name, values in points.items() if values}
    return {
        "run": run,
        "config": config,
        "stage": _stage(config, points),
        "eta_seconds": run.seconds_left,
        "latest": latest,
        "training_figure": training_curves_figure(points, training_panels(config)),
        "stored_rollouts": run.dialogues.count() if config.is_online else 0,
        **_evaluations(run),
    }


def _stage(config: TrainingRunConfig, points: Mapping[str, Any]) -> str:
    """Which stage of a run with a priming stage is going ("" for a run of one stage): GRPO
    once it has logged anything (the held-out evaluation before its first step included)."""
    if config.priming is None:
        return ""
    if any(not name.startswith(PRIMING_PREFIX) for name in points):
        return "stage 2 of 2: online training"
    return f"stage 1 of 2: priming ({config.priming.method})"


def _training_run(pk: int) -> Run:
    return get_object_or_404(Run.objects.select_related("student"), pk=pk, kind=Run.Kind.TRAIN)


@researcher_required
@allows_plotly
def training_run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _training_run(pk)
    context = _live_context(run)
    figures = {"training": context["training_figure"], "evaluation": context["evaluation_figure"]}
    download = requested_download(request, figures, f"training-run-{run.pk}")
    if download:
        return download
    context["config_json"] = json.dumps(run.config, indent=2, ensure_ascii=False)
    context["held_out"] = _held_out(run, context["config"])
    return render(request, "training/training_run_detail.html", context)


def _held_out(run: Run, config: TrainingRunConfig) -> Overlap | None:
    """How many of the evaluation's tasks the run trains on: fixed at launch, so worked out
    for the page, not on every poll of its live fragment."""
    if config.evaluation is None:
        return None
    evaluated = task_set_task_keys(config.evaluation.task_set.id)
    return overlap(training_run_task_keys(run), evaluated)


@researcher_required
def training_run_live(request: HttpRequest, pk: int) -> HttpResponse:
    """The polled fragment; stops polling once training and both evaluations have ended."""
    run = _training_run(pk)
    context = _live_context(run)
    response = render(request, "training/training_run_detail.html#live", context)
    if run.is_finished and (context["evaluations_finished"] or run.status != Run.Status.SUCCEEDED):
        response.status_code = HttpResponseStopPolling.status_code
    return response
