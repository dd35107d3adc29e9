from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.dialogues import selectors
from webapp.dialogues.models import Dialogue
from webapp.runs.models import Run

DIALOGUES_PER_PAGE = 50


def dialogue_list(request: HttpRequest) -> HttpResponse:
    run_id = request.GET.get("run", "")
    outcome = request.GET.get("outcome", "")
    if outcome not in Dialogue.Outcome.values:
        outcome = ""
    run_pk = int(run_id) if run_id.isdigit() else None
    run = Run.objects.filter(pk=run_pk).first() if run_pk else None
    dialogues = selectors.dialogue_list(run_id=run_pk, outcome=outcome)
    page = Paginator(dialogues, DIALOGUES_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "run": run,
        "run_pk": run_pk,
        "outcome": outcome,
        "outcomes": Dialogue.Outcome.choices,
    }
    if request.htmx:
        return render(request, "dialogues/dialogue_list.html#rows", context)
    return render(request, "dialogues/dialogue_list.html", context)


def dialogue_detail(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        dialogue = selectors.dialogue_with_turns(pk=pk)
    except Dialogue.DoesNotExist:
        raise Http404("No such dialogue.") from None
    return render(request, "dialogues/dialogue_detail.html", {"dialogue": dialogue})
