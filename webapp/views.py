"""Site-wide pages: the home page (recent runs and task sets, a house-model build while one runs,
and the demo's miniature SML button), the health check and /favicon.ico."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.accounts.requests import SignedInRequest
from webapp.core.durations import duration
from webapp.core.permissions import researcher_required
from webapp.demo.services import (
    demo_miniature_launch,
    demo_miniature_ready,
    demo_miniature_relaunchable,
    demo_miniature_run,
    miniature_latest_figure,
    miniature_latest_result,
)
from webapp.metrics.figures import AccuracyCurve, RunSummary
from webapp.metrics.stats import Proportion
from webapp.models_registry.house import HOUSE_MODEL_NAME, house_build_progress_path
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.runs.selectors import run_list, run_summaries, runs_accuracy_by_turn
from webapp.tasks.selectors import task_set_list
from webapp.training.selectors import TrainingEvaluations, training_run_evaluations

HOUSE_BUILD_TARGET = "house-build"
# A build reports at least once a second while it trains; the held-out evaluation after the
# last step reports nothing for a minute or two. Silent for longer, it has stopped (killed).
HOUSE_BUILD_SILENT_SECONDS = 600
HOUSE_BUILD_RUNNING = ("preparing", "training", "finishing")


@dataclass(frozen=True)
class HouseBuild:
    """A house-model build as its progress file last described it."""

    state: str
    step: int
    total: int
    loss: float | None
    eta_seconds: float | None
    elapsed_seconds: float
    silent_seconds: float
    error: str = ""

    @property
    def stopped(self) -> bool:
        """It says it is running but has been silent too long: its process is gone."""
        return self.state in HOUSE_BUILD_RUNNING and (
            self.silent_seconds > HOUSE_BUILD_SILENT_SECONDS
        )

    @property
    def running(self) -> bool:
        return self.state in HOUSE_BUILD_RUNNING and not self.stopped

    @property
    def percent(self) -> int:
        return round(100 * self.step / self.total) if self.total else 0

    @property
    def time_left(self) -> str:
        return duration(self.eta_seconds) if self.eta_seconds is not None else ""

    @property
    def time_taken(self) -> str:
        return duration(self.elapsed_seconds)

    @property
    def time_silent(self) -> str:
        return duration(self.silent_seconds)


def house_build(*, now: float | None = None) -> HouseBuild | None:
    """The last house-model build's progress, or ``None`` when no build has reported (or its
    file cannot be read: a page never fails over it)."""
    try:
        report: dict[str, Any] = json.loads(house_build_progress_path().read_text())
        updated_at = float(report["updated_at"])
        return HouseBuild(
            state=str(report["state"]),
            step=int(report["step"]),
            total=int(report["total"]),
            loss=None if report.get("loss") is None else float(report["loss"]),
            eta_seconds=None if report.get("eta_seconds") is None else float(report["eta_seconds"]),
            elapsed_seconds=float(report.get("elapsed_seconds") or 0),
            silent_seconds=max(0.0, (time.time() if now is None else now) - updated_at),
            error=str(report.get("error") or ""),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class HouseModel:
    """The registered house model, its latest evaluation run and what that run has scored so
    far (accuracy after turn k over the dialogues it has counted)."""

    model: ModelSpec
    run: Run | None
    curve: AccuracyCurve | None

    @property
    def first_turn(self) -> Proportion | None:
        return self.curve.points[0].accuracy if self.curve and self.curve.points else None


def house_model() -> HouseModel | None:
    """The house model once built and registered (None before, or once retired), with its
    evaluation: the first run that plays it as the student with nobody in the dialogue and did
    not fail or stop (the demo's, launched as it was registered). Not the latest: a playground
    chat or a run someone cancelled would then stand for what the model scored."""
    model = ModelSpec.objects.filter(name=HOUSE_MODEL_NAME, retired=False).first()
    if model is None:
        return None
    evaluations = model.student_runs.filter(kind=Run.Kind.EVAL, people__isnull=True)
    lost = (Run.Status.FAILED, Run.Status.CANCELLED)
    run = evaluations.exclude(status__in=lost).order_by("pk").first()
    curve = runs_accuracy_by_turn(runs=[run])[run.pk] if run is not None else None
    return HouseModel(model, run, curve)


def miniature_evaluations(run: Run | None) -> TrainingEvaluations | None:
    """The held-out evaluations a succeeded miniature run still waits for, or None."""
    if run is None or run.status != Run.Status.SUCCEEDED:
        return None
    return training_run_evaluations(run=run, trained_model=run.produced_models.first())


def _house_build_fragment(request: HttpRequest) -> HttpResponse:
    """What the home page's build card polls: the card again, and 286 (htmx stops polling)
    once the build is over."""
    build = house_build()
    response = render(request, "core/partials/_house_build.html", {"house_build": build})
    if build is None or not build.running:
        response.status_code = HttpResponseStopPolling.status_code
    return response


def _with_summaries(runs: list[Run]) -> list[tuple[Run, RunSummary | None]]:
    """Each run with the runs table's figures (None for a training run): the home page shows
    the same accuracy as the runs list and the run's page."""
    summaries = run_summaries(runs=runs)
    return [(run, summaries.get(run.pk)) for run in runs]


def home(request: SignedInRequest) -> HttpResponse:
    if not request.user.is_researcher:
        return redirect("queue_list")  # an annotator's work starts from their queues
    if request.htmx and request.htmx.target == HOUSE_BUILD_TARGET:
        return _house_build_fragment(request)
    build = house_build()
    miniature_run = demo_miniature_run()
    context = {
        "recent_runs": _with_summaries(list(run_list()[:5])),
        "task_sets": task_set_list()[:5],
        # The build's card while it runs, or when it failed or stopped, which needs the
        # researcher's hand.
        "house_build": build if build is not None and build.state != "done" else None,
        # Once built, what it scored and the run that measured it.
        "house_model": house_model() if build is None or build.state == "done" else None,
        "house_build_time": build.time_taken if build is not None else "",
        "miniature_ready": demo_miniature_ready(),
        "miniature_run": miniature_run,
        "miniature_relaunch": demo_miniature_relaunchable(miniature_run),
        "miniature_evaluations": miniature_evaluations(miniature_run),
        "miniature_result": miniature_latest_result(),
    }
    return render(request, "core/home.html", context)


@researcher_required
@require_POST
def demo_miniature(request: SignedInRequest) -> HttpResponse:
    """The home page's miniature button: launch the miniature's online run (once, or again
    after it failed or was cancelled) and open it."""
    run = demo_miniature_launch(user=request.user)
    return redirect("training_run_detail", pk=run.pk)


@researcher_required
def demo_miniature_figure(request: HttpRequest) -> FileResponse:
    """The figure of the latest ``sml_miniature`` report (drawn by Dialab, no script in it)."""
    figure = miniature_latest_figure()
    if figure is None:
        raise Http404("No miniature report yet.")
    response = FileResponse(figure.open("rb"), content_type="image/svg+xml")
    response["Content-Security-Policy"] = "default-src 'none'"  # opened on its own: no script
    return response


@login_not_required
def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers ask for wherever a page names no icon (a JSON or a
    download opened on its own): our SVG icon, the one every page links to. Not permanent, so a
    new static URL (a hashed name, another STATIC_URL) is followed the next day."""
    response = redirect(static("dialab/favicon.svg"))
    response["Cache-Control"] = "public, max-age=86400"
    return response


@login_not_required
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for load balancers and compose: the database answers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok", "database": connection.vendor})
