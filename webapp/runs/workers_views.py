"""The Workers page: each worker online, its queues and what it does now, and each queue's
waiting jobs in order (``webapp.runs.waits``)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.core.permissions import researcher_required
from webapp.core.queues import INTERACTIVE, interactive_jobs_stalled, interactive_jobs_waiting
from webapp.runs import waits


@researcher_required
def workers(request: HttpRequest) -> HttpResponse:
    """The page; its state loads after it (inspection waits for the workers' answers)."""
    return render(request, "runs/workers.html")


@researcher_required
def workers_state(request: HttpRequest) -> HttpResponse:
    """The polled fragment: workers and queues now."""
    workers = waits.worker_states()
    context = {
        "workers": workers,
        "queues": waits.queue_states(workers),
        "jobs_waiting": interactive_jobs_waiting(),
        "jobs_stalled": interactive_jobs_stalled(),
        "interactive": INTERACTIVE,
    }
    return render(request, "runs/workers.html#state", context)
