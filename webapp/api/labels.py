"""``/api/v1/labels``: labelling queues, a person's items in them, answers given from another
labelling tool, and the labels given.

Answers go through the labelling page's services: each value is checked as the page checks it
(``clean_value``: an option of the question, a rating on its scale, yes or no), is about what
its question is about (a teacher turn, a student turn, the whole dialogue), is a draft until
the item is submitted, and is recorded with its revision. Submitting refuses an item with a
required question unanswered, naming it. Nobody answers somebody else's item."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Prefetch
from django.http import Http404, HttpRequest
from ninja import Router, Schema, Status

from webapp.accounts.models import User
from webapp.annotations import selectors, services
from webapp.annotations.models import Annotation, LabelQuestion, LabelQueue, QueueAssignment
from webapp.api.auth import log_write
from webapp.api.common import After, Id, Offset, Refused, list_page, refused

router = Router(tags=["labels"])


class QuestionOut(Schema):
    """``options``: a choice question's options, or a rating's [lowest, highest]; ``target``:
    teacher_turn, student_turn or dialogue (what an answer is about)."""

    id: int
    key: str
    text: str
    kind: str
    target: str
    options: list[Any]
    optional: bool
    guidelines: str


class QueueOut(Schema):
    """A queue with its questions; ``total``/``done`` count every item (researchers) and
    ``my_total``/``my_done`` the caller's own."""

    id: int
    name: str
    schema_name: str
    guidelines: str
    questions: list[QuestionOut]
    total: int
    done: int
    my_total: int
    my_done: int


class ItemOut(Schema):
    """One of the caller's items: a dialogue to label (``GET /dialogues/{dialogue}`` reads it,
    its turns by ``index``)."""

    id: int
    queue: int
    dialogue: int
    position: int
    status: str
    skip_reason: str
    submitted_at: datetime | None


class AnswerIn(Schema):
    """An answer to the question ``question`` (its key), about the turn ``turn`` (its index in
    the dialogue) or, left out, about the whole dialogue. ``value``: a rating's number, an
    option, a list of options, true or false, or text."""

    question: str
    turn: int | None = None
    value: Any


class AnswersIn(Schema):
    """Answers to save (all or none), then, with ``submit``, the item submitted. ``nonce``: an
    id of this request, so that a retry changes nothing twice."""

    answers: list[AnswerIn] = []
    submit: bool = False
    nonce: str = ""


class SkipIn(Schema):
    reason: str


class LabelOut(Schema):
    id: int
    schema_name: str
    question: str
    dialogue: int
    turn: int | None
    author: str
    value: Any
    is_draft: bool
    source: str
    updated_at: datetime


def _user(request: HttpRequest) -> User:
    return request.user  # type: ignore[return-value]


def _queue_out(queue: Any) -> QueueOut:
    questions = queue.schema.questions.all()  # prefetched in order
    return QueueOut(
        id=queue.pk,
        name=queue.name,
        schema_name=queue.schema.name,
        guidelines=queue.schema.guidelines,
        questions=[QuestionOut.from_orm(question) for question in questions],
        total=queue.total,
        done=queue.done,
        my_total=queue.my_total,
        my_done=queue.my_done,
    )


def _item_out(item: QueueAssignment) -> ItemOut:
    return ItemOut(
        id=item.pk,
        queue=item.queue_id,
        dialogue=item.dialogue_id,
        position=item.position,
        status=item.status,
        skip_reason=item.skip_reason,
        submitted_at=item.submitted_at,
    )


def _own_item(request: HttpRequest, item_id: Id) -> QueueAssignment:
    try:
        return selectors.assignment_for(pk=item_id, user=_user(request))
    except QueueAssignment.DoesNotExist:
        raise Http404("No such item in your queues.") from None


def _raw(value: Any) -> list[str]:
    """An answer as the labelling page's form sends it (``clean_value`` reads that)."""
    if value is None:
        return []
    if isinstance(value, bool):
        return ["yes" if value else "no"]
    if isinstance(value, list):
        return [str(item) for item in value]
    return [str(value)]


@router.get("/queues", response=list[QueueOut], summary="Labelling queues and their questions")
def list_queues(request: HttpRequest) -> list[QueueOut]:
    """A researcher sees every queue; an annotator the queues she has items in."""
    questions = Prefetch(
        "schema__questions", queryset=LabelQuestion.objects.order_by("position", "pk")
    )
    queues = selectors.queue_list(user=_user(request)).prefetch_related(questions)
    return [_queue_out(queue) for queue in queues]


@router.get("/queues/{queue_id}/items", response=list[ItemOut], summary="My items in a queue")
def list_items(
    request: HttpRequest, queue_id: Id, status: QueueAssignment.Status | None = None
) -> list[ItemOut]:
    try:
        queue = selectors.queue_for_user(pk=queue_id, user=_user(request))
    except LabelQueue.DoesNotExist:
        raise Http404("No such queue among yours.") from None
    items = selectors.my_items(queue=queue, user=_user(request))
    if status:
        items = items.filter(status=status)
    return [_item_out(item) for item in items]


@router.post(
    "/items/{item_id}/answers",
    response={200: ItemOut, 422: Refused},
    summary="Answer an item's questions, and submit it",
)
def answer_item(request: HttpRequest, item_id: Id, body: AnswersIn) -> Status[Any]:
    """One refused answer refuses the request (nothing saved), its problem under
    ``answers.N``; a refused submission too, naming the unanswered questions."""
    item = _own_item(request, item_id)
    questions = {question.key: question for question in item.queue.schema.questions.all()}
    turns = {turn.index: turn for turn in item.dialogue.turns.all()}
    problems: dict[str, list[str]] = {}
    with transaction.atomic():
        for number, answer in enumerate(body.answers):
            where = f"answers.{number}"
            question = questions.get(answer.question)
            turn = None if answer.turn is None else turns.get(answer.turn)
            if question is None:
                keys = ", ".join(questions)
                problems[where] = [f"No question {answer.question!r}; this queue's: {keys}."]
                continue
            if answer.turn is not None and turn is None:
                problems[where] = [f"The dialogue has no turn {answer.turn}."]
                continue
            nonce = f"{body.nonce}:{number}"[:64] if body.nonce else ""
            try:
                services.annotation_save(
                    question=question,
                    dialogue=item.dialogue,
                    turn=turn,
                    author=_user(request),
                    value=services.clean_value(question=question, raw=_raw(answer.value)),
                    nonce=nonce,
                    draft=item.status != QueueAssignment.Status.DONE,
                )
            except ValidationError as problem:
                problems[where] = problem.messages
        if body.submit and not problems:
            try:
                item = services.item_submit(assignment=item)
            except services.ItemIncomplete as refusal:
                problems["submit"] = [str(refusal.message)]
        if problems:
            transaction.set_rollback(True)
            return refused("Nothing was saved.", problems)
    saved = f"{len(body.answers)} answers{' and submit' if body.submit else ''}"
    log_write(request, f"{saved} item {item.pk}")
    return Status(200, _item_out(item))


@router.post("/items/{item_id}/skip", response={200: ItemOut, 422: Refused}, summary="Skip an item")
def skip_item(request: HttpRequest, item_id: Id, body: SkipIn) -> Status[Any]:
    """As the page's Skip: a reason is required; a done item stays done."""
    item = _own_item(request, item_id)
    try:
        services.item_skip(assignment=item, reason=body.reason)
    except ValidationError as problem:
        return refused("The item was not skipped.", {"reason": problem.messages})
    log_write(request, f"skip item {item.pk}")
    item.refresh_from_db()
    return Status(200, _item_out(item))


@router.get("", response={200: list[LabelOut], 422: Refused}, summary="Labels given")
def list_labels(
    request: HttpRequest,
    queue: Id | None = None,
    dialogue: Id | None = None,
    limit: int = 100,
    offset: Offset = 0,
    after: After = None,
) -> Any:
    """A researcher reads the labels annotators gave (submitted answers, as agreement and the
    exports count them); an annotator her own answers, drafts included (``is_draft``). In id
    order; ``after``: the next page of a walk, from the first id above it (0 starts), which
    reads each label once even while others are deleted."""
    user = _user(request)
    labels = (
        selectors.given_labels() if user.is_researcher else Annotation.objects.filter(author=user)
    )
    if queue is not None:
        labels = labels.filter(
            question__schema__queues=queue, dialogue__assignments__queue=queue
        ).distinct()
    if dialogue is not None:
        labels = labels.filter(dialogue_id=dialogue)
    labels = labels.select_related("question__schema", "author", "turn").order_by("pk")
    page = list_page(labels, limit=limit, offset=offset, after=after)
    if isinstance(page, Status):
        return page
    return [
        LabelOut(
            id=label.pk,
            schema_name=label.question.schema.name,
            question=label.question.key,
            dialogue=label.dialogue_id,
            turn=label.turn.index if label.turn else None,
            author=label.author.get_username(),
            value=label.value,
            is_draft=label.is_draft,
            source=label.source,
            updated_at=label.updated_at,
        )
        for label in page
    ]
