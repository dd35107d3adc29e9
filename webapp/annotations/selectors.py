"""Reads for labelling. Every page's query count is fixed (no N+1).

Blind labelling lives here: the selectors an annotator's pages use only ever return that
annotator's own answers; ``item_labels`` (everyone's answers) is for researchers' pages.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet

from webapp.accounts.models import User
from webapp.annotations.items import is_answer, prefill_value, slot_id
from webapp.annotations.models import (
    Annotation,
    AnnotationRevision,
    LabelQuestion,
    LabelQueue,
    LabelSchema,
    QueueAssignment,
)
from webapp.dialogues.models import Dialogue, Turn

DONE = QueueAssignment.Status.DONE


def given_labels() -> QuerySet[Annotation]:
    """The labels: submitted answers the annotators gave. Never drafts, nor suggestions that
    item submission stored without anyone confirming them (before migration 0005). Agreement,
    exports and the transcript filters by label (and the training sets they select) all start
    from here."""
    return Annotation.objects.filter(is_draft=False).exclude(
        source=Annotation.Source.UNCONFIRMED_PREFILL
    )


def schema_list() -> QuerySet[LabelSchema]:
    return LabelSchema.objects.annotate(
        question_count=Count("questions", distinct=True), queue_count=Count("queues", distinct=True)
    ).order_by("name")


def schema_with_questions(*, pk: int) -> LabelSchema:
    return LabelSchema.objects.prefetch_related(
        Prefetch("questions", queryset=LabelQuestion.objects.order_by("position", "pk"))
    ).get(pk=pk)


def labellers() -> QuerySet[User]:
    """Everyone who may be given items: annotators, and researchers too."""
    return User.objects.filter(is_active=True).order_by("role", "username")


def queue_list(*, user: User) -> QuerySet[LabelQueue]:
    """Researchers: every queue, with overall progress. Annotators: their queues, with theirs."""
    mine = Q(assignments__annotator=user)
    queues = LabelQueue.objects.select_related("schema", "created_by").annotate(
        total=Count("assignments"),
        done=Count("assignments", filter=Q(assignments__status=DONE)),
        my_total=Count("assignments", filter=mine),
        my_done=Count("assignments", filter=mine & Q(assignments__status=DONE)),
    )
    return queues if user.is_researcher else queues.filter(my_total__gt=0)


def queue_for_user(*, pk: int, user: User) -> LabelQueue:
    """A queue the user may open (researchers: any; annotators: one they have items in)."""
    queues = LabelQueue.objects.select_related("schema", "created_by")
    if not user.is_researcher:
        queues = queues.filter(
            Exists(QueueAssignment.objects.filter(queue=OuterRef("pk"), annotator=user))
        )
    return queues.get(pk=pk)


@dataclass(frozen=True)
class AnnotatorProgress:
    username: str
    total: int
    done: int
    skipped: int


def queue_progress(*, queue: LabelQueue) -> list[AnnotatorProgress]:
    rows = (
        QueueAssignment.objects.filter(queue=queue)
        .values("annotator__username")
        .annotate(
            total=Count("pk"),
            done=Count("pk", filter=Q(status=DONE)),
            skipped=Count("pk", filter=Q(status=QueueAssignment.Status.SKIPPED)),
        )
        .order_by("annotator__username")
    )
    return [
        AnnotatorProgress(row["annotator__username"], row["total"], row["done"], row["skipped"])
        for row in rows
    ]


def my_items(*, queue: LabelQueue, user: User) -> QuerySet[QueueAssignment]:
    return (
        QueueAssignment.objects.filter(queue=queue, annotator=user)
        .select_related("dialogue", "dialogue__task")
        .defer("dialogue__search_document")
        .order_by("position")
    )


def queue_dialogues(*, queue: LabelQueue) -> QuerySet[Dialogue]:
    """The queue's dialogues in order, each with its assignments (and annotators) prefetched."""
    return (
        Dialogue.objects.filter(
            Exists(QueueAssignment.objects.filter(queue=queue, dialogue=OuterRef("pk")))
        )
        .select_related("task", "run")
        .defer("search_document")
        .prefetch_related(
            Prefetch(
                "assignments",
                queryset=QueueAssignment.objects.filter(queue=queue)
                .select_related("annotator")
                .order_by("annotator__username"),
                to_attr="queue_assignments",
            )
        )
        .order_by("pk")
    )


def next_item(*, queue: LabelQueue, user: User, after: int = -1) -> QueueAssignment | None:
    """The user's next item to label: the first one to do after ``after`` (a position), then
    from the start, then skipped ones."""
    items = QueueAssignment.objects.filter(queue=queue, annotator=user)
    pending = items.filter(status=QueueAssignment.Status.PENDING).order_by("position")
    return (
        pending.filter(position__gt=after).first()
        or pending.first()
        or items.filter(status=QueueAssignment.Status.SKIPPED).order_by("position").first()
    )


def assignment_for(*, pk: int, user: User) -> QueueAssignment:
    """One of the user's own items, with what the labelling page shows; DoesNotExist otherwise
    (nobody opens somebody else's item)."""
    return (
        QueueAssignment.objects.select_related(
            "queue",
            "queue__schema",
            "dialogue",
            "dialogue__task",
            "dialogue__task__task_set",
            "dialogue__run",
            "dialogue__run__student",
            "dialogue__run__teacher",
        )
        .defer("dialogue__search_document")
        .prefetch_related(
            Prefetch("dialogue__turns", queryset=Turn.objects.order_by("index")),
            Prefetch(
                "queue__schema__questions",
                queryset=LabelQuestion.objects.order_by("position", "pk"),
            ),
        )
        .get(pk=pk, annotator=user)
    )


@dataclass(frozen=True)
class AnswerTarget:
    """What saving one answer needs: the user's own item, and the question and turn the request
    names, each None when it is not part of the item. ``dialogue`` and ``turn`` carry just
    the columns a save reads (a primary key, and a turn's role, index and leak flag)."""

    item_done: bool
    dialogue: Dialogue
    question: LabelQuestion | None
    turn: Turn | None


def answer_target(*, pk: int, user: User, question_id: int, turn_id: int | None) -> AnswerTarget:
    """The item ``pk`` if it is the user's (DoesNotExist otherwise), with the question and turn
    a save names, in one query. A save runs once per answer given and its lookups through the
    ORM took a quarter of it (each query's compilation, not the database), so this one is
    written out: the item, its queue's schema's question, its dialogue's turn."""
    item, queue = QueueAssignment._meta.db_table, LabelQueue._meta.db_table
    question, turn_table = LabelQuestion._meta.db_table, Turn._meta.db_table
    rows = list(
        LabelQuestion.objects.raw(
            f"""
            SELECT question.*, item.status AS item_status, item.dialogue_id AS item_dialogue_id,
                   turn.id AS turn_pk, turn.role AS turn_role, turn."index" AS turn_index,
                   turn.leak_flag AS turn_leak_flag
            FROM {item} AS item
            JOIN {queue} AS queue ON queue.id = item.queue_id
            LEFT JOIN {question} AS question
                ON question.schema_id = queue.schema_id AND question.id = %s
            LEFT JOIN {turn_table} AS turn ON turn.dialogue_id = item.dialogue_id AND turn.id = %s
            WHERE item.id = %s AND item.annotator_id = %s
            """,
            [question_id, turn_id, pk, user.pk],
        )
    )
    if not rows:
        raise QueueAssignment.DoesNotExist
    row = rows[0]  # the question, with the other columns as attributes (None: not in the item)
    dialogue_id, turn_pk = row.item_dialogue_id, row.turn_pk  # type: ignore[attr-defined]
    turn: Turn | None = None
    if turn_pk is not None:
        turn = Turn(
            pk=turn_pk,
            dialogue_id=dialogue_id,
            role=row.turn_role,  # type: ignore[attr-defined]
            index=row.turn_index,  # type: ignore[attr-defined]
            leak_flag=bool(row.turn_leak_flag),  # type: ignore[attr-defined]
        )
    return AnswerTarget(
        item_done=row.item_status == DONE,  # type: ignore[attr-defined]
        dialogue=Dialogue(pk=dialogue_id),
        question=row if row.pk is not None else None,
        turn=turn,
    )


@dataclass
class QuestionState:
    """A question about one turn (or the dialogue) and this annotator's answer to it, or the
    suggestion it starts from: shown, never stored until the annotator confirms it."""

    question: LabelQuestion
    turn_id: int | None
    value: Any = None  # the annotator's own answer (None: none)
    answered: bool = False
    suggestion: Any = None  # an unconfirmed suggestion (None: none)
    choices: list[Any] = field(default_factory=list)

    @property
    def prefilled(self) -> bool:
        """A suggestion is shown, waiting for the annotator to confirm or change it."""
        return self.suggestion is not None and not self.answered

    @property
    def suggestion_value(self) -> str:
        """The suggestion as the form sends it ("yes"/"no" for a yes/no question)."""
        if isinstance(self.suggestion, bool):
            return "yes" if self.suggestion else "no"
        return "" if self.suggestion is None else str(self.suggestion)

    @property
    def required(self) -> bool:
        return not self.question.optional

    @property
    def form_id(self) -> str:
        return slot_id(self.question.pk, self.turn_id)


@dataclass
class Stop:
    """One place the labelling page stops at: a turn with questions, or the whole dialogue."""

    turn: Turn | None
    questions: list[QuestionState]


@dataclass(frozen=True)
class ItemNeighbours:
    previous_pk: int | None
    next_pk: int | None
    done: int
    total: int


def item_neighbours(*, assignment: QueueAssignment) -> ItemNeighbours:
    """Previous and next item of the same annotator in the queue, and their progress: one
    query."""
    rows = list(
        QueueAssignment.objects.filter(
            queue_id=assignment.queue_id, annotator_id=assignment.annotator_id
        )
        .order_by("position")
        .values_list("pk", "status")
    )
    ids = [pk for pk, _ in rows]
    index = ids.index(assignment.pk)
    return ItemNeighbours(
        previous_pk=ids[index - 1] if index > 0 else None,
        next_pk=ids[index + 1] if index + 1 < len(ids) else None,
        done=sum(1 for _, status in rows if status == DONE),
        total=len(rows),
    )


def labelling_stops(*, assignment: QueueAssignment) -> list[Stop]:
    """The turns and questions of an item with the annotator's own answers (never anybody
    else's: blind labelling), and the suggestion of each unanswered question that has one: one
    query on top of ``assignment_for``'s. An answer stored from a suggestion nobody confirmed
    (before migration 0005) shows as that suggestion, unanswered."""
    dialogue = assignment.dialogue
    questions = list(assignment.queue.schema.questions.all())
    mine = {
        (answer.question_id, answer.turn_id): answer.value
        for answer in Annotation.objects.filter(
            dialogue=dialogue, author_id=assignment.annotator_id, question__in=questions
        )
        .exclude(source=Annotation.Source.UNCONFIRMED_PREFILL)
        .only("question_id", "turn_id", "value")
    }
    by_role: dict[str, list[LabelQuestion]] = defaultdict(list)
    for question in questions:
        by_role[question.role].append(question)

    def states(turn: Turn | None, role: str) -> list[QuestionState]:
        result = []
        for question in by_role.get(role, []):
            turn_id = turn.pk if turn else None
            state = QuestionState(question, turn_id, choices=question.answer_choices)
            if (question.pk, turn_id) in mine:
                state.value = mine[(question.pk, turn_id)]
                state.answered = is_answer(question=question, value=state.value)
            state.suggestion = prefill_value(question=question, turn=turn)
            result.append(state)
        return result

    stops = [Stop(turn, states(turn, turn.role)) for turn in dialogue.turns.all()]
    if by_role.get(""):
        stops.append(Stop(None, states(None, "")))
    return stops


def item_labels(*, queue: LabelQueue, dialogue: Dialogue) -> list[Annotation]:
    """Everyone's answers to the queue's questions about a dialogue, with their revisions
    (researchers only): two queries."""
    return list(
        Annotation.objects.filter(dialogue=dialogue, question__schema_id=queue.schema_id)
        .select_related("question", "turn", "author")
        .prefetch_related(
            Prefetch(
                "revisions",
                queryset=AnnotationRevision.objects.select_related("author").order_by(
                    "created_at", "pk"
                ),
            )
        )
        .order_by("question__position", "turn__index", "author__username")
    )
