"""Site-wide pages: the home page (recent runs and task sets) and the health check."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render

from webapp.runs.selectors import run_list
from webapp.tasks.selectors import task_set_list


def home(request: HttpRequest) -> HttpResponse:
    if not getattr(request.user, "is_researcher", False):
        return redirect("queue_list")  # an annotator's work starts from their queues
    context = {
        "recent_runs": run_list()[:5],
        "task_sets": task_set_list()[:5],
    }
    return render(request, "core/home.html", context)


@login_not_required
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for load balancers and compose: the database answers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok", "database": connection.vendor})
