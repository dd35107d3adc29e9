"""``/api/v1/runs``: evaluation and training runs, their status and their figures."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status

from models_gpu.spec.online import ONLINE_SETTINGS
from models_gpu.spec.run import RunConfigError
from models_gpu.spec.training import TRAINING_SETTINGS
from webapp.accounts.models import User
from webapp.api.auth import RESEARCHERS, log_write
from webapp.api.common import (
    After,
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
from webapp.metrics.export import metric_rows
from webapp.runs import selectors, services
from webapp.runs.forms import EvaluationRunForm
from webapp.runs.models import Run
from webapp.training.forms import ONLINE_TRAINING_SETTINGS, OnlineTrainingForm, TrainingForm
from webapp.training.launch import online_training_launch, training_launch

router = Router(tags=["runs"], auth=RESEARCHERS)


class RunOut(Schema):
    id: int
    name: str
    kind: str
    status: str
    is_finished: bool
    progress_done: int
    progress_total: int
    error: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class EvaluationLaunch(Schema):
    """An evaluation, as the launch form takes it (ids of the task set, protocol and models;
    ``GET /task-sets``, ``/protocols``, ``/models`` list them)."""

    name: str = ""
    task_set: Id
    protocol: Id
    student: Id
    teacher: Id | None = None
    user_simulator: Id | None = None
    judge: Id | None = None
    samples_per_task: int = 1
    batch_size: int | None = None
    seed: int = 0
    people: list[Id] = []


class FigureRow(Schema):
    """One number of a run's figures, as in its metrics CSV (the run page's download)."""

    metric: str
    k: int | None = None
    group: str = ""
    value: float | str | None = None
    low: float | None = None
    high: float | None = None
    successes: int | None = None
    n: int | None = None


class RunFigures(Schema):
    run: int
    rows: list[FigureRow]


def _run_out(run: Run) -> RunOut:
    return RunOut(
        id=run.pk,
        name=run.name,
        kind=run.kind,
        status=run.status,
        is_finished=run.is_finished,
        progress_done=run.progress_done,
        progress_total=run.progress_total,
        error=run.error,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
    )


@router.get("", response={200: list[RunOut], 422: Refused}, summary="Runs, newest first")
def list_runs(
    request: HttpRequest,
    kind: Run.Kind | None = None,
    status: Run.Status | None = None,
    limit: int = 100,
    offset: Offset = 0,
    after: After = None,
) -> Any:
    """``after``: walk the runs in id order instead, from the first id above it (0 starts;
    the next page goes on after the last id read): each run is read once, whatever is launched
    or deleted meanwhile."""
    runs = selectors.run_list().order_by("-created_at", "-pk")  # one order, page after page
    if kind:
        runs = runs.filter(kind=kind)
    if status:
        runs = runs.filter(status=status)
    page = list_page(runs, limit=limit, offset=offset, after=after)
    return page if isinstance(page, Status) else [_run_out(run) for run in page]


@router.post(
    "/evaluations",
    response={201: RunOut, 422: Refused},
    summary="Launch an evaluation",
)
def launch_evaluation(request: HttpRequest, launch: EvaluationLaunch) -> Status[Any]:
    """Through the launch page's form and service: the same checks (the protocol's roles, the
    models' parameters, the limits), refused field by field; queued, then played by a worker."""
    data = {key: "" if value is None else value for key, value in launch.dict().items()}
    form = EvaluationRunForm(data)
    if not form.is_valid():
        return form_refused(form, "The run was not launched.")
    run = services.evaluation_run_create(
        name=form.cleaned_data["name"],
        **form.launch_arguments(),
        people=form.chosen_people(),
        created_by=request.user,  # type: ignore[arg-type]
    )
    log_write(request, f"launch run {run.pk}")
    return Status(201, _run_out(run))


class HeldOut(Schema):
    """The held-out evaluation every training run ends with: the trained model and its base,
    on ``eval_task_set`` under ``eval_protocol``. A set sharing tasks with the training data is
    refused unless ``evaluate_trained_tasks`` (its results are then marked "not held out")."""

    name: str = ""
    base_model: Id
    eval_task_set: Id
    eval_protocol: Id
    eval_teacher: Id | None = None
    eval_samples: int | None = None
    evaluate_trained_tasks: bool | None = None
    settings: dict[str, Any] = {}


class TrainingLaunch(HeldOut):
    """Offline SML (fine-tuning on dialogues): ``selection`` is the transcript list's filter
    (its query string, ``run=12&outcome=solved``) whose dialogues are frozen into the training
    data at launch; ``settings`` the hyperparameters by name (``GET /runs/training-settings``;
    those left out take the launch form's defaults)."""

    selection: str
    question_writer: Id | None = None


class OnlineTrainingLaunch(HeldOut):
    """Online SML: the base model plays ``task_set``'s dialogues under ``protocol`` (didactic
    or sharded; a teacher for didactic) and learns from its rewards (GRPO). With
    ``single_turn_baseline``, a sibling single-turn RL run on the same generation budget.
    ``priming_selection``: a transcript filter to fine-tune on first, in the same run."""

    task_set: Id
    protocol: Id
    teacher: Id | None = None
    single_turn_baseline: bool | None = None
    priming_selection: str = ""
    priming_method: str | None = None
    priming_epochs: int | None = None
    priming_learning_rate: float | None = None


class TrainingSettings(Schema):
    """The hyperparameters each training launch takes in ``settings``, with their defaults."""

    offline: list[SettingOut]
    online: list[SettingOut]


def _launched(
    request: HttpRequest, form: Any, launch_form: Callable[[Any, User], Run]
) -> Status[Any]:
    """Launch a valid training form as its page does, or refuse with its problems (the form's,
    then the whole configuration's, each on the field it is about)."""
    if not form.is_valid():
        return form_refused(form, "The run was not launched.")
    try:
        run = launch_form(form, request.user)  # type: ignore[arg-type]
    except RunConfigError as error:
        problems: dict[str, list[str]] = {}
        for problem in error.problems:
            field = problem.field if problem.field in form.fields else "__all__"
            problems.setdefault(field, []).append(problem.message)
        return refused("The run was not launched.", problems)
    log_write(request, f"launch run {run.pk}")
    return Status(201, _run_out(run))


@router.get(
    "/training-settings",
    response=TrainingSettings,
    summary="The hyperparameters a training launch takes, with their defaults",
)
def training_settings(request: HttpRequest) -> TrainingSettings:
    reader: User = request.user  # type: ignore[assignment]
    offline, online = TrainingForm(reader=reader), OnlineTrainingForm(reader=reader)
    return TrainingSettings(
        offline=[_with_form_default(s, offline) for s in TRAINING_SETTINGS],
        online=[_with_form_default(s, online) for s in ONLINE_SETTINGS + ONLINE_TRAINING_SETTINGS],
    )


def _with_form_default(setting: Any, form: Any) -> SettingOut:
    """A setting as the launch form offers it: online training starts from other defaults."""
    out = setting_out(setting)
    out.default = form.fields[setting.name].initial
    return out


@router.post(
    "/training",
    response={201: RunOut, 422: Refused},
    summary="Launch offline SML: fine-tune on selected dialogues",
)
def launch_training(request: HttpRequest, body: TrainingLaunch) -> Status[Any]:
    unknown = unknown_names(body.settings, (s.name for s in TRAINING_SETTINGS), "setting")
    if unknown:
        return refused("The run was not launched.", {"settings": unknown})
    reader: User = request.user  # type: ignore[assignment]
    form = TrainingForm(filled_in(TrainingForm(reader=reader), _values(body)), reader=reader)
    return _launched(request, form, training_launch)


@router.post(
    "/online-training",
    response={201: RunOut, 422: Refused},
    summary="Launch online SML: the model plays dialogues and learns from their rewards",
)
def launch_online_training(request: HttpRequest, body: OnlineTrainingLaunch) -> Status[Any]:
    """As the online launch page: the run, and its single-turn sibling when asked (the answer
    is the online run; ``GET /runs?kind=train`` lists both)."""
    known = (s.name for s in ONLINE_SETTINGS + ONLINE_TRAINING_SETTINGS)
    unknown = unknown_names(body.settings, known, "setting")
    if unknown:
        return refused("The run was not launched.", {"settings": unknown})
    reader: User = request.user  # type: ignore[assignment]
    blank = OnlineTrainingForm(reader=reader)
    form = OnlineTrainingForm(filled_in(blank, _values(body)), reader=reader)
    return _launched(request, form, online_training_launch)


def _values(body: HeldOut) -> dict[str, Any]:
    """A launch's fields and settings, as one form's data."""
    return body.dict(exclude={"settings"}) | body.settings


@router.get("/{run_id}", response=RunOut, summary="One run: its status and progress")
def get_run(request: HttpRequest, run_id: Id) -> RunOut:
    return _run_out(get_object_or_404(selectors.run_list(), pk=run_id))


@router.get(
    "/{run_id}/figures",
    response=RunFigures,
    summary="An evaluation's figures: accuracy after turn k with 95% intervals, and the rest",
)
def run_figures(request: HttpRequest, run_id: Id) -> RunFigures:
    """The rows of the run's metrics CSV (``webapp.metrics.export``): the same numbers as its
    page, computed once. While the run plays they cover only the dialogues its page counts."""
    run = get_object_or_404(selectors.run_list().filter(kind=Run.Kind.EVAL), pk=run_id)
    rows = [FigureRow(**row) for row in metric_rows(selectors.run_metrics(run=run))]
    return RunFigures(run=run.pk, rows=rows)


@router.post("/{run_id}/cancel", response=RunOut, summary="Cancel a run")
def cancel_run(request: HttpRequest, run_id: Id) -> RunOut:
    """As the run page's Cancel: a queued run stops at once, a running one within seconds,
    keeping the dialogues that finished."""
    run = get_object_or_404(Run, pk=run_id)
    services.run_cancel(run=run)
    log_write(request, f"cancel run {run.pk}")
    run.refresh_from_db()
    return _run_out(run)
