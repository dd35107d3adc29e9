"""Pages of a person in the dialogue: their inbox of waiting turns, and one turn to answer.

A turn page holds the turn for whoever opens it (``services.pending_claim``), so two people
never type the same answer; the database settles races, and the loser is told who won. After
answering, the page polls until the dialogue waits for them again (then it moves there) or ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, HttpResponseStopPolling

from webapp.accounts.models import User
from webapp.accounts.requests import SignedInRequest
from webapp.core.permissions import researcher_required
from webapp.dialogues.models import PendingTurn
from webapp.people import selectors, services
from webapp.people.forms import AnswerForm, EndForm, ReassignForm

TURNS_PER_PAGE = 25
TURN_TEMPLATE = "people/turn.html"


def _pending(request: SignedInRequest, pk: int) -> PendingTurn:
    """The turn, if this user may see it (404 otherwise: its existence is not theirs to know)."""
    try:
        return selectors.pending_for(pk=pk, user=request.user)
    except PendingTurn.DoesNotExist:
        raise Http404("No such turn for you.") from None


def _holder(pending: PendingTurn, user: User) -> User | None:
    """Who else holds the turn now: a hold lapses after the claim time without typing."""
    if pending.claimed_by is None or pending.claimed_by == user or pending.claimed_at is None:
        return None
    lapse = timezone.now() - timedelta(seconds=settings.DIALAB_PERSON_CLAIM_SECONDS)
    return pending.claimed_by if pending.claimed_at >= lapse else None


@require_GET
def inbox(request: SignedInRequest) -> HttpResponse:
    # Time-outs are applied lazily here, so a turn past its deadline is never offered.
    services.pending_expire()
    user = request.user
    page = Paginator(selectors.inbox(user=user), TURNS_PER_PAGE).get_page(request.GET.get("page"))
    rows = [{"pending": pending, "holder": _holder(pending, user)} for pending in page]
    waiting = selectors.runs_playing_my_answers(user=user)
    return render(request, "people/inbox.html", {"page": page, "rows": rows, "waiting": waiting})


def _refusal(pending: PendingTurn, user: User) -> str:
    """Why the claim failed, as the person should be told."""
    if selectors.may_answer_turn(pending=pending, user=user) or pending.claimed_by_id:
        return services.taken_message(pending=pending, user=user)
    return "This turn is not yours to answer: it is for the run's people" + (
        f" (assigned to {pending.assigned_to.username})." if pending.assigned_to else "."
    )


def _outcome(pending: PendingTurn, user: User) -> dict[str, Any]:
    """Where the dialogue went after this turn: parked again for this user, stored, parked
    for someone else, or its run ended without storing it; ``settled`` stops the polling."""
    following = selectors.next_turn_of_dialogue(pending=pending, user=user)
    dialogue = None if following else selectors.stored_dialogue(pending=pending)
    elsewhere = not (following or dialogue) and selectors.waits_for_someone_else(pending=pending)
    run_ended = not (following or dialogue or elsewhere) and pending.run.is_finished
    return {
        "following": following,
        "dialogue": dialogue,
        "elsewhere": elsewhere,
        "run_ended": run_ended,
        "settled": bool(following or dialogue or elsewhere or run_ended),
    }


def _render_turn(
    request: SignedInRequest,
    pending: PendingTurn,
    *,
    composer: AnswerForm | None = None,
    taken: str = "",
    reassign_form: ReassignForm | None = None,
    end_form: EndForm | None = None,
    status: int = 200,
) -> HttpResponse:
    user = request.user
    context: dict[str, Any] = {
        "pending": pending,
        "composer": composer,
        "taken": taken,
        "holder": _holder(pending, user),
        "answered": pending.status in (PendingTurn.Status.ANSWERED, PendingTurn.Status.DONE),
        # A student sees the conversation alone; a teacher and a user simulator also see what
        # the engine gave their role privately (the reference; the shards not revealed yet).
        "private": pending.request.get("private_context", {})
        if pending.role != PendingTurn.Role.STUDENT
        else {},
        "conversation": _conversation(pending),
        "attempts": [turn for turn in pending.turns if turn.get("is_correct") is not None],
    }
    if pending.status != PendingTurn.Status.OPEN:
        context.update(_outcome(pending, user))
    if user.is_researcher and pending.status == PendingTurn.Status.OPEN:
        people = selectors.reassign_choices(pending=pending)
        context["reassign_form"] = reassign_form or ReassignForm(prefix="reassign", people=people)
        context["end_form"] = end_form or EndForm(prefix="end")
    return render(request, TURN_TEMPLATE, context, status=status)


@dataclass(frozen=True)
class ShownMessage:
    speaker: str
    side: str  # "system", "own" (the role's own side) or "other"
    content: str


def _conversation(pending: PendingTurn) -> list[ShownMessage]:
    """The role's conversation as the engine sent it, each message with who the page says
    spoke it. A teacher's opens with the task as its own message (the teacher posed it:
    ``models_gpu.engine``); the page calls that the task, which the person did not write."""
    if pending.role != PendingTurn.Role.STUDENT:
        other = "Student"
    else:
        other = "Teacher" if pending.run.teacher_id else "User"
    task_first = pending.role == PendingTurn.Role.TEACHER  # its first own message is the task
    shown = []
    for message in pending.request.get("messages", []):
        role, content = message["role"], message["content"]
        if role == "system":
            shown.append(ShownMessage("Instructions", "system", content))
        elif role != "assistant":
            shown.append(ShownMessage(other, "other", content))
        elif task_first:
            shown.append(ShownMessage("The task, as you posed it", "own", content))
            task_first = False
        else:
            shown.append(ShownMessage("You", "own", content))
    return shown


@require_http_methods(["GET", "POST"])
def turn(request: SignedInRequest, pk: int) -> HttpResponse:
    """GET: hold the turn and show it; POST: send the answer."""
    pending = _pending(request, pk)
    user = request.user
    if request.method == "POST":
        return _answer(request, pending)
    if pending.status != PendingTurn.Status.OPEN:
        return _render_turn(request, pending)
    if not services.pending_claim(pending=pending, user=user):
        return _render_turn(request, pending, taken=_refusal(pending, user))
    return _render_turn(request, pending, composer=AnswerForm(initial={"text": pending.draft}))


def _answer(request: SignedInRequest, pending: PendingTurn) -> HttpResponse:
    form = AnswerForm(request.POST)
    if not form.is_valid():
        return _render_turn(request, pending, composer=form, status=400)
    try:
        services.pending_answer(pending=pending, user=request.user, text=form.cleaned_data["text"])
    except services.TurnTaken as refused:
        # Their text stays on the page, so nothing they wrote is lost.
        return _render_turn(request, pending, composer=form, taken=str(refused), status=409)
    return redirect("people_turn", pk=pending.pk)


@require_POST
def turn_draft(request: SignedInRequest, pk: int) -> HttpResponse:
    """Autosave of the composer: keeps the draft and renews the hold."""
    pending = _pending(request, pk)
    saved = services.pending_draft_save(
        pending=pending, user=request.user, text=request.POST.get("text", "")
    )
    return render(request, f"{TURN_TEMPLATE}#draft-status", {"saved": saved})


@require_GET
def turn_next(request: SignedInRequest, pk: int) -> HttpResponse:
    """Polled after answering: moves the page to the dialogue's next turn for this person, or
    shows how the dialogue ended and stops the polling."""
    pending = _pending(request, pk)
    outcome = _outcome(pending, request.user)
    if outcome["following"] is not None:
        return HttpResponseClientRedirect(reverse("people_turn", args=[outcome["following"].pk]))
    response = render(request, f"{TURN_TEMPLATE}#outcome", {"pending": pending, **outcome})
    if outcome["settled"]:
        response.status_code = HttpResponseStopPolling.status_code
    return response


@require_POST
@researcher_required
def turn_reassign(request: SignedInRequest, pk: int) -> HttpResponse:
    pending = _pending(request, pk)
    people = selectors.reassign_choices(pending=pending)
    form = ReassignForm(request.POST, prefix="reassign", people=people)
    if not form.is_valid():
        return _render_turn(request, pending, reassign_form=form, status=400)
    to: User | None = form.cleaned_data["to"]
    try:
        services.pending_reassign(
            pending=pending, to=to, reason=form.cleaned_data["reason"], by=request.user
        )
    except services.TurnTaken as refused:
        messages.error(request, str(refused))
        return redirect("people_turn", pk=pending.pk)
    messages.success(request, f"Turn reassigned to {to.username if to else 'any of the people'}.")
    # Not back to the turn page: opening it would hold the turn for the researcher again.
    return redirect("run_detail", pk=pending.run_id)


@require_POST
@researcher_required
def turn_end(request: SignedInRequest, pk: int) -> HttpResponse:
    pending = _pending(request, pk)
    form = EndForm(request.POST, prefix="end")
    if not form.is_valid():
        return _render_turn(request, pending, end_form=form, status=400)
    try:
        services.pending_end(pending=pending, reason=form.cleaned_data["reason"], by=request.user)
    except services.TurnTaken as refused:
        messages.error(request, str(refused))
    else:
        messages.success(request, "The dialogue ended unanswered and was stored.")
    return redirect("people_turn", pk=pending.pk)
