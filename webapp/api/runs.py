"""``/api/v1/runs``: evaluation and training runs, their status and their figures."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status

from webapp.api.auth import log_write
from webapp.metrics.export import metric_rows
from webapp.runs import selectors, services
from webapp.runs.forms import EvaluationRunForm
from webapp.runs.models import Run

router = Router(tags=["runs"])
MAX_LIMIT = 500


def researcher_only(request: HttpRequest) -> None:
    """Runs are the researchers' pages: an annotator's token may not read them either."""
    if not getattr(request.user, "is_researcher", False):
        raise PermissionDenied("Only researchers can do this.")


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
    task_set: int
    protocol: int
    student: int
    teacher: int | None = None
    user_simulator: int | None = None
    judge: int | None = None
    samples_per_task: int = 1
    batch_size: int | None = None
    seed: int = 0
    people: list[int] = []


class LaunchRefused(Schema):
    """What the launch form would have said: each field's problems."""

    detail: str
    problems: dict[str, list[str]]


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


@router.get("", response=list[RunOut], summary="Runs, newest first")
def list_runs(
    request: HttpRequest,
    kind: Run.Kind | None = None,
    status: Run.Status | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[RunOut]:
    researcher_only(request)
    runs = selectors.run_list()
    if kind:
        runs = runs.filter(kind=kind)
    if status:
        runs = runs.filter(status=status)
    limit = max(1, min(limit, MAX_LIMIT))
    return [_run_out(run) for run in runs[max(offset, 0) : max(offset, 0) + limit]]


@router.post(
    "/evaluations",
    response={201: RunOut, 422: LaunchRefused},
    summary="Launch an evaluation",
)
def launch_evaluation(request: HttpRequest, launch: EvaluationLaunch) -> Status[object]:
    """Through the launch page's form and service: the same checks (the protocol's roles, the
    models' parameters, the limits), refused field by field; queued, then played by a worker."""
    researcher_only(request)
    data = {key: "" if value is None else value for key, value in launch.dict().items()}
    form = EvaluationRunForm(data)
    if not form.is_valid():
        problems = {
            field: [str(message) for message in errors] for field, errors in form.errors.items()
        }
        return Status(422, LaunchRefused(detail="The run was not launched.", problems=problems))
    run = services.evaluation_run_create(
        name=form.cleaned_data["name"],
        **form.launch_arguments(),
        people=form.chosen_people(),
        created_by=request.user,  # type: ignore[arg-type]
    )
    log_write(request, f"launch run {run.pk}")
    return Status(201, _run_out(run))


@router.get("/{run_id}", response=RunOut, summary="One run: its status and progress")
def get_run(request: HttpRequest, run_id: int) -> RunOut:
    researcher_only(request)
    return _run_out(get_object_or_404(selectors.run_list(), pk=run_id))


@router.get(
    "/{run_id}/figures",
    response=RunFigures,
    summary="An evaluation's figures: accuracy after turn k with 95% intervals, and the rest",
)
def run_figures(request: HttpRequest, run_id: int) -> RunFigures:
    """The rows of the run's metrics CSV (``webapp.metrics.export``): the same numbers as its
    page, computed once. While the run plays they cover only the dialogues its page counts."""
    researcher_only(request)
    run = get_object_or_404(selectors.run_list().filter(kind=Run.Kind.EVAL), pk=run_id)
    rows = [FigureRow(**row) for row in metric_rows(selectors.run_metrics(run=run))]
    return RunFigures(run=run.pk, rows=rows)


@router.post("/{run_id}/cancel", response=RunOut, summary="Cancel a run")
def cancel_run(request: HttpRequest, run_id: int) -> RunOut:
    """As the run page's Cancel: a queued run stops at once, a running one within seconds,
    keeping the dialogues that finished."""
    researcher_only(request)
    run = get_object_or_404(Run, pk=run_id)
    services.run_cancel(run=run)
    log_write(request, f"cancel run {run.pk}")
    run.refresh_from_db()
    return _run_out(run)
