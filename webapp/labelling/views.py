"""Labelling pages: schemas (researchers), queues, the keyboard-first labelling page, history.

Every view starts from a permission check: ``researcher_required``, or a selector that only
returns what the user may see (an annotator's own items and queues; 404 otherwise).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from webapp.accounts.requests import SignedInRequest
from webapp.annotations import selectors, services
from webapp.annotations.models import LabelQuestion, LabelQueue, LabelSchema, QueueAssignment
from webapp.core.permissions import researcher_required
from webapp.dialogues.models import Dialogue
from webapp.labelling.forms import QuestionForm, QueueForm, SchemaForm
from webapp.transcripts import selectors as dialogue_selectors
from webapp.transcripts.forms import DialogueFilterForm, without_blanks

ITEMS_PER_PAGE = 50


# --- Schemas ---------------------------------------------------------------------------------


@researcher_required
def schema_list(request: SignedInRequest) -> HttpResponse:
    form = SchemaForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        schema = services.schema_save(**form.cleaned_data)
        return redirect("schema_detail", pk=schema.pk)
    context = {"schemas": selectors.schema_list(), "form": form}
    return render(request, "labelling/schema_list.html", context)


def _question_form_save(form: QuestionForm, schema: LabelSchema) -> LabelQuestion | None:
    if not form.is_valid():
        return None
    data = form.cleaned_data
    try:
        return services.question_save(
            schema=schema,
            question=form.instance if form.instance.pk else None,
            **{name: data[name] for name in ("key", "text", "kind", "target", "guidelines")},
            options=data["options"],
            prefill=data["prefill"],
            optional=data["optional"],
        )
    except ValidationError as error:
        form.add_error(None, error)
        return None


@researcher_required
def schema_detail(request: SignedInRequest, pk: int) -> HttpResponse:
    try:
        schema = selectors.schema_with_questions(pk=pk)
    except LabelSchema.DoesNotExist:
        raise Http404("No such schema.") from None
    schema_form = SchemaForm(instance=schema, prefix="schema")
    question_form = QuestionForm(prefix="question", initial={"options_text": ""})
    if request.method == "POST" and "schema-name" in request.POST:
        schema_form = SchemaForm(request.POST, instance=schema, prefix="schema")
        if schema_form.is_valid():
            data = schema_form.cleaned_data
            services.schema_save(name=data["name"], guidelines=data["guidelines"], schema=schema)
            messages.success(request, "Schema saved.")
            return redirect("schema_detail", pk=schema.pk)
    elif request.method == "POST":
        question_form = QuestionForm(request.POST, prefix="question")
        if _question_form_save(question_form, schema):
            return redirect("schema_detail", pk=schema.pk)
    context = {
        "schema": schema,
        "questions": list(schema.questions.all()),
        "schema_form": schema_form,
        "question_form": question_form,
    }
    return render(request, "labelling/schema_detail.html", context)


@researcher_required
def question_edit(request: SignedInRequest, pk: int) -> HttpResponse:
    question = get_object_or_404(LabelQuestion.objects.select_related("schema"), pk=pk)
    form = QuestionForm(request.POST or None, instance=question)
    if request.method == "POST" and _question_form_save(form, question.schema):
        return redirect("schema_detail", pk=question.schema_id)
    return render(request, "labelling/question_form.html", {"form": form, "question": question})


@researcher_required
@require_POST
def question_move(request: SignedInRequest, pk: int) -> HttpResponse:
    question = get_object_or_404(LabelQuestion.objects.select_related("schema"), pk=pk)
    services.question_move(question=question, offset=-1 if request.POST.get("to") == "up" else 1)
    return redirect("schema_detail", pk=question.schema_id)


@researcher_required
@require_POST
def question_delete(request: SignedInRequest, pk: int) -> HttpResponse:
    question = get_object_or_404(LabelQuestion, pk=pk)
    services.question_delete(question=question)
    return redirect("schema_detail", pk=question.schema_id)


# --- Queues ----------------------------------------------------------------------------------


def queue_list(request: SignedInRequest) -> HttpResponse:
    """Researchers: every queue. Annotators: "My queues", with their progress."""
    queues = selectors.queue_list(user=request.user)
    return render(request, "labelling/queue_list.html", {"queues": queues})


def _filtered_dialogue_ids(filter_query: str) -> tuple[DialogueFilterForm, list[int]]:
    form = DialogueFilterForm.from_query(QueryDict(filter_query))
    ids = dialogue_selectors.dialogue_list(filters=form.filters()).values_list("pk", flat=True)
    return form, list(ids)


@researcher_required
def queue_create(request: SignedInRequest) -> HttpResponse:
    """Built from a transcript filter: the /dialogues/ query string travels in ``filter_query``
    (from the "Label these" button), and is resolved by the transcript list's own selector."""
    if request.method == "POST":
        form = QueueForm(request.POST)
        filter_query = request.POST.get("filter_query", "")
    else:
        params = without_blanks(request.GET)
        params.pop("page", None)
        filter_query = params.urlencode()
        form = QueueForm(initial={"filter_query": filter_query, "name": "Labelling queue"})
    filter_form, dialogue_ids = _filtered_dialogue_ids(filter_query)
    if request.method == "POST" and form.is_valid():
        if not dialogue_ids:
            form.add_error(None, "No transcript matches this filter.")
        else:
            data = form.cleaned_data
            queue = services.queue_create(
                name=data["name"],
                schema=data["schema"],
                filter_query=filter_query,
                dialogue_ids=dialogue_ids,
                annotators=list(data["annotators"]),
                annotators_per_item=data["annotators_per_item"],
                created_by=request.user,
            )
            return redirect("queue_detail", pk=queue.pk)
    context = {
        "form": form,
        "filter_query": filter_query,
        "filter_notes": filter_form.notes,
        "filter_chips": filter_form.chips,
        "dialogue_count": len(dialogue_ids),
    }
    return render(request, "labelling/queue_form.html", context)


def _queue_or_404(request: SignedInRequest, pk: int) -> LabelQueue:
    try:
        return selectors.queue_for_user(pk=pk, user=request.user)
    except LabelQueue.DoesNotExist:
        raise Http404("No such queue.") from None


def queue_detail(request: SignedInRequest, pk: int) -> HttpResponse:
    user = request.user
    queue = _queue_or_404(request, pk)
    mine = selectors.my_items(queue=queue, user=user)
    context: dict[str, Any] = {
        "queue": queue,
        "my_page": Paginator(mine, ITEMS_PER_PAGE).get_page(request.GET.get("mine")),
    }
    if user.is_researcher:
        filter_form = DialogueFilterForm.from_query(QueryDict(queue.filter_query), reader=user)
        context["filter_chips"] = filter_form.chips
        context["progress"] = selectors.queue_progress(queue=queue)
        context["page"] = Paginator(
            selectors.queue_dialogues(queue=queue), ITEMS_PER_PAGE
        ).get_page(request.GET.get("page"))
    return render(request, "labelling/queue_detail.html", context)


def queue_next(request: SignedInRequest, pk: int) -> HttpResponse:
    queue = _queue_or_404(request, pk)
    after = request.GET.get("after", "")
    item = selectors.next_item(
        queue=queue, user=request.user, after=int(after) if after.isdigit() else -1
    )
    if item is None:
        messages.success(request, "Every item of this queue is labelled. Thank you!")
        return redirect("queue_detail", pk=queue.pk)
    return redirect("item_label", pk=item.pk)


# --- Labelling -------------------------------------------------------------------------------


def _assignment_or_404(request: SignedInRequest, pk: int) -> QueueAssignment:
    try:
        return selectors.assignment_for(pk=pk, user=request.user)
    except QueueAssignment.DoesNotExist:
        raise Http404("No such item in your queues.") from None


def _item_page(
    request: SignedInRequest,
    assignment: QueueAssignment,
    *,
    refusal: services.ItemIncomplete | None = None,
    skip_error: str = "",
    status: int = 200,
) -> HttpResponse:
    """The labelling page; after a refused submit, with why next to the toolbar and the
    unanswered questions marked (the page then focuses the first of them)."""
    context = {
        "assignment": assignment,
        "queue": assignment.queue,
        "schema": assignment.queue.schema,
        "dialogue": assignment.dialogue,
        "stops": selectors.labelling_stops(assignment=assignment),
        "neighbours": selectors.item_neighbours(assignment=assignment),
        "refusal": refusal.message if refusal else "",
        "unanswered": {item.slot_id for item in refusal.unanswered} if refusal else set(),
        "skip_error": skip_error,
        "skip_reason_max": services.SKIP_REASON_MAX,
    }
    return render(request, "labelling/item_label.html", context, status=status)


def item_label(request: SignedInRequest, pk: int) -> HttpResponse:
    return _item_page(request, _assignment_or_404(request, pk))


def _row_id(value: str) -> int | None:
    """A primary key from a form, or None (not a number, or past the database's integers)."""
    return int(value) if value.isdigit() and int(value) < 2**63 else None


@require_POST
def item_answer(request: SignedInRequest, pk: int) -> HttpResponse:
    """Save one answer (a draft until the item is submitted). JavaScript posts here once per
    answer given, with a nonce it reuses on retries; a plain form post works too."""
    question_id, turn_id = request.POST.get("question", ""), request.POST.get("turn", "")
    try:
        target = selectors.answer_target(
            pk=_row_id(str(pk)) or 0,
            user=request.user,
            question_id=_row_id(question_id) or 0,
            turn_id=_row_id(turn_id),
        )
    except QueueAssignment.DoesNotExist:
        raise Http404("No such item in your queues.") from None
    question, turn = target.question, target.turn
    error = ""
    # "confirm" carries the suggestion the annotator confirmed (its button, or the c key):
    # it is the answer, stored as a confirmed suggestion.
    confirm = request.POST.get("confirm", "")
    if question is None or (turn_id and turn is None):
        error = "No such question or turn in this item."
    else:
        try:
            raw = [confirm] if confirm else request.POST.getlist("value")
            value = services.clean_value(question=question, raw=raw)
            services.annotation_save(
                question=question,
                dialogue=target.dialogue,
                turn=turn,
                author=request.user,
                value=value,
                nonce=request.POST.get("nonce", "")[:64],
                draft=not target.item_done,
                confirms_suggestion=bool(confirm),
            )
        except ValidationError as problem:
            error = " ".join(problem.messages)
    if _wants_json(request):
        if error:
            return JsonResponse({"saved": False, "error": error}, status=400)
        return JsonResponse({"saved": True, "value": value})
    if error:
        messages.error(request, error)
    return redirect(
        f"{reverse('item_label', args=[pk])}#{turn.message_anchor if turn else 'dialogue'}"
    )


def _wants_json(request: SignedInRequest) -> bool:
    """The labelling page's script (htmx-style header, or asking for JSON)."""
    return bool(request.htmx) or request.headers.get("accept", "").startswith("application/json")


def _next_item_url(assignment: QueueAssignment) -> str:
    return f"{reverse('queue_next', args=[assignment.queue_id])}?after={assignment.position}"


@require_POST
def item_submit(request: SignedInRequest, pk: int) -> HttpResponse:
    """Submit an item, or refuse with the unanswered questions named: as JSON for the page's
    script (which shows it and focuses the first), as the page itself without JavaScript."""
    assignment = _assignment_or_404(request, pk)
    try:
        services.item_submit(assignment=assignment)
    except services.ItemIncomplete as refusal:
        if _wants_json(request):
            unanswered = [item.slot_id for item in refusal.unanswered]
            body = {"submitted": False, "error": refusal.message, "unanswered": unanswered}
            return JsonResponse(body, status=400)
        return _item_page(request, assignment, refusal=refusal, status=400)
    if _wants_json(request):
        return JsonResponse({"submitted": True, "next": _next_item_url(assignment)})
    return redirect(_next_item_url(assignment))


@require_POST
def item_skip(request: SignedInRequest, pk: int) -> HttpResponse:
    assignment = _assignment_or_404(request, pk)
    try:
        services.item_skip(assignment=assignment, reason=request.POST.get("reason", ""))
    except ValidationError as problem:
        return _item_page(request, assignment, skip_error=" ".join(problem.messages), status=400)
    return redirect(_next_item_url(assignment))


@researcher_required
def item_history(request: SignedInRequest, pk: int, dialogue_pk: int) -> HttpResponse:
    """Everyone's labels for one dialogue of a queue, with every change (researchers only)."""
    queue = get_object_or_404(LabelQueue.objects.select_related("schema"), pk=pk)
    dialogue = get_object_or_404(
        Dialogue.objects.select_related("task", "run")
        .defer("search_document")
        .filter(assignments__queue=queue)
        .distinct(),
        pk=dialogue_pk,
    )
    assignments = (
        QueueAssignment.objects.filter(queue=queue, dialogue=dialogue)
        .select_related("annotator")
        .order_by("annotator__username")
    )
    context = {
        "queue": queue,
        "dialogue": dialogue,
        "assignments": assignments,
        "labels": selectors.item_labels(queue=queue, dialogue=dialogue),
    }
    return render(request, "labelling/item_history.html", context)
