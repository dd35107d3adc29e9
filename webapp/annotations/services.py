"""Writes for labelling: schemas and questions, queues and their assignments, answers.

Saving an answer is an idempotent upsert keyed by (question, turn or dialogue, author); the
client sends a nonce per answer given, so a retried or duplicated request writes at most one
revision.
"""

from __future__ import annotations

import contextlib
import functools
import json
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from webapp.accounts.models import User
from webapp.annotations.items import (
    SlotKey,
    Unanswered,
    prefill_value,
    refusal_message,
    unanswered,
)
from webapp.annotations.models import (
    Annotation,
    AnnotationRevision,
    LabelQuestion,
    LabelQueue,
    LabelSchema,
    QueueAssignment,
)
from webapp.dialogues.models import Dialogue, Turn

YES = {"yes", "true", "1", "y"}
NO = {"no", "false", "0", "n"}


# --- Schemas and questions -------------------------------------------------------------------


def schema_save(*, name: str, guidelines: str, schema: LabelSchema | None = None) -> LabelSchema:
    schema = schema or LabelSchema()
    schema.name, schema.guidelines = name, guidelines
    schema.full_clean()
    schema.save()
    return schema


def question_save(
    *,
    schema: LabelSchema,
    key: str,
    text: str,
    kind: str,
    target: str,
    options: list[Any],
    guidelines: str = "",
    prefill: str = "",
    optional: bool = False,
    question: LabelQuestion | None = None,
) -> LabelQuestion:
    """Create a question at the end of the schema, or update ``question``. A question is
    required (an item cannot be submitted without its answer) unless ``optional``."""
    if question is None:
        last = schema.questions.aggregate(last=Max("position"))["last"]
        question = LabelQuestion(schema=schema, position=0 if last is None else last + 1)
    question.key, question.text, question.kind, question.target = key, text, kind, target
    question.options, question.guidelines, question.prefill = options, guidelines, prefill
    question.optional = optional
    question.full_clean()
    question.save()
    return question


@transaction.atomic
def question_move(*, question: LabelQuestion, offset: int) -> None:
    """Move a question ``offset`` places up (negative) or down, renumbering 0..n-1."""
    ordered = list(question.schema.questions.select_for_update().order_by("position", "pk"))
    index = next(i for i, item in enumerate(ordered) if item.pk == question.pk)
    target = min(max(index + offset, 0), len(ordered) - 1)
    ordered.insert(target, ordered.pop(index))
    for position, item in enumerate(ordered):
        item.position = position
    LabelQuestion.objects.bulk_update(ordered, ["position"])


def question_delete(*, question: LabelQuestion) -> None:
    question.delete()


# --- Queues ----------------------------------------------------------------------------------


def assign_balanced(
    *, dialogue_ids: Sequence[int], annotator_ids: Sequence[int], per_item: int
) -> list[tuple[int, int]]:
    """(dialogue, annotator) pairs: each dialogue gets ``per_item`` distinct annotators and every
    annotator's load differs from another's by at most one (least loaded first, ties broken in a
    rotating order so the same people do not always pair up)."""
    if not 1 <= per_item <= len(annotator_ids):
        raise ValidationError("Each item needs between 1 and the number of annotators chosen.")
    load = dict.fromkeys(annotator_ids, 0)
    order = {annotator: rank for rank, annotator in enumerate(annotator_ids)}
    pairs = []
    for turn_number, dialogue_id in enumerate(dialogue_ids):
        count = len(annotator_ids)
        chosen = sorted(
            annotator_ids,
            key=lambda a: (load[a], (order[a] - turn_number * per_item) % count),
        )[:per_item]
        for annotator in chosen:
            load[annotator] += 1
            pairs.append((dialogue_id, annotator))
    return pairs


@transaction.atomic
def queue_create(
    *,
    name: str,
    schema: LabelSchema,
    filter_query: str,
    dialogue_ids: Sequence[int],
    annotators: Sequence[User],
    annotators_per_item: int,
    created_by: User,
) -> LabelQueue:
    pairs = assign_balanced(
        dialogue_ids=dialogue_ids,
        annotator_ids=[user.pk for user in annotators],
        per_item=annotators_per_item,
    )
    queue = LabelQueue.objects.create(
        name=name,
        schema=schema,
        filter_query=filter_query,
        annotators_per_item=annotators_per_item,
        created_by=created_by,
    )
    position = {dialogue_id: index for index, dialogue_id in enumerate(dialogue_ids)}
    QueueAssignment.objects.bulk_create(
        QueueAssignment(
            queue=queue,
            dialogue_id=dialogue_id,
            annotator_id=annotator_id,
            position=position[dialogue_id],
        )
        for dialogue_id, annotator_id in pairs
    )
    return queue


# --- Answers ---------------------------------------------------------------------------------


def clean_value(*, question: LabelQuestion, raw: Sequence[str]) -> Any:
    """The JSON value of an answer from what a form sent (one string, or several for multiple
    choice). Raises ValidationError for a value the question does not allow."""
    first = raw[0].strip() if raw else ""
    kind = question.kind
    if kind == LabelQuestion.Kind.FREE_TEXT:
        return raw[0] if raw else ""
    if kind == LabelQuestion.Kind.MULTIPLE_CHOICE:
        chosen = [item for item in raw if item != ""]
        unknown = [item for item in chosen if item not in question.options]
        if unknown:
            raise ValidationError(f"Not an option: {unknown[0]!r}.")
        return [option for option in question.options if option in chosen]
    if kind == LabelQuestion.Kind.YES_NO:
        if first.lower() in YES:
            return True
        if first.lower() in NO:
            return False
        raise ValidationError("Answer yes or no.")
    if kind == LabelQuestion.Kind.RATING:
        try:
            number = int(first)
        except ValueError:
            raise ValidationError("A rating is a whole number.") from None
        if number not in question.scale:
            raise ValidationError(
                f"A rating is between {question.scale[0]} and {question.scale[-1]}."
            )
        return number
    if first not in question.options:
        raise ValidationError(f"Not an option: {first!r}.")
    return first


def _check_target(*, question: LabelQuestion, dialogue: Dialogue, turn: Turn | None) -> None:
    if question.target == LabelQuestion.Target.DIALOGUE:
        if turn is not None:
            raise ValidationError("This question is about the whole dialogue.")
        return
    if turn is None or turn.dialogue_id != dialogue.pk or turn.role != question.role:
        raise ValidationError(f"This question is about {question.get_target_display().lower()}.")


def annotation_save(
    *,
    question: LabelQuestion,
    dialogue: Dialogue,
    turn: Turn | None,
    author: User,
    value: Any,
    nonce: str = "",
    draft: bool = True,
    confirms_suggestion: bool = False,
) -> int:
    """Upsert one answer and record the change as a revision (who, when, old → new); returns
    the answer's id.

    The answer is the annotator's (``Annotation.Source.PERSON``), or, when they confirmed the
    question's suggestion (``confirms_suggestion``, and ``value`` is that suggestion), a
    confirmed suggestion. Saving the value already stored with another source (confirming an
    answer stored unconfirmed) is a change too, with its revision.

    Idempotent: a request whose ``nonce`` this author already used changes nothing, and so does
    saving the value already stored. Concurrent duplicates are settled by the unique
    constraints (one annotation per item and author, one revision per author and nonce): a
    used nonce makes the revision's insert fail, which rolls the whole write back, instead of
    being looked up before every save.
    """
    _check_target(question=question, dialogue=dialogue, turn=turn)
    write = _write_in_one_statement if connection.vendor == "postgresql" else _write_in_steps
    suggestion = prefill_value(question=question, turn=turn)
    confirmed = confirms_suggestion and suggestion is not None and value is suggestion
    answer = _Answer(
        question_id=question.pk, dialogue_id=dialogue.pk, turn_id=turn.pk if turn else None,
        author_id=author.pk, value=value, nonce=nonce or uuid.uuid4().hex, draft=draft,
        source=Annotation.Source.CONFIRMED_SUGGESTION if confirmed else Annotation.Source.PERSON,
    )  # fmt: skip
    for attempt in range(2):  # a concurrent first save may win the insert: go again, as an update
        try:
            return write(answer)
        except IntegrityError:
            # This request was seen (its nonce has a revision: nothing was written), or a
            # concurrent first save of the same answer won the insert.
            seen = AnnotationRevision.objects.filter(author=author, nonce=answer.nonce).first()
            if seen is not None:
                return seen.annotation_id
            if attempt:
                raise
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class _Answer:
    """One answer to write: its item, its author, the value and the request's nonce."""

    question_id: int
    dialogue_id: int
    turn_id: int | None
    author_id: int
    value: Any
    nonce: str
    draft: bool
    source: str

    def lookup(self) -> dict[str, Any]:
        found = {"question_id": self.question_id, "author_id": self.author_id}
        if self.turn_id is None:
            return {**found, "turn_id": None, "dialogue_id": self.dialogue_id}
        return {**found, "turn_id": self.turn_id}


def _write_in_steps(answer: _Answer) -> int:
    """The save as one short transaction of ORM statements: lock the answer, write it, write
    its revision (SQLite, where the transaction holds the database's write lock)."""
    with transaction.atomic():
        stored = Annotation.objects.select_for_update().filter(**answer.lookup()).first()
        if stored is None:
            stored = Annotation.objects.create(
                question_id=answer.question_id, dialogue_id=answer.dialogue_id,
                turn_id=answer.turn_id, author_id=answer.author_id, value=answer.value,
                is_draft=answer.draft, source=answer.source,
            )  # fmt: skip
            old_value = None
        elif stored.value == answer.value and stored.source == answer.source:
            # The one write without a revision (a draft becoming final, its value unchanged),
            # so a seen nonce is looked up.
            if answer.draft or not stored.is_draft or _nonce_used(answer):
                return stored.pk  # nothing to change, or this request was seen
            stored.is_draft = False
            stored.save(update_fields=["is_draft", "updated_at"])
            return stored.pk
        else:
            old_value = stored.value
            stored.value, stored.source = answer.value, answer.source
            stored.is_draft = answer.draft and stored.is_draft
            stored.save(update_fields=["value", "source", "is_draft", "updated_at"])
        AnnotationRevision.objects.create(
            annotation=stored, author_id=answer.author_id, old_value=old_value,
            new_value=answer.value, nonce=answer.nonce,
        )  # fmt: skip
        return stored.pk


def _nonce_used(answer: _Answer) -> bool:
    return AnnotationRevision.objects.filter(
        author_id=answer.author_id, nonce=answer.nonce
    ).exists()


# The same save in one PostgreSQL statement, its own transaction. Saves are the labelling
# page's most frequent request; the five round trips of the transaction above (begin, lock,
# write, revision, commit) and the ORM's compiling of each statement were half of a save's
# CPU time (benchmarks/transcripts.py, label save). The row lock queues concurrent saves of
# one answer, and a save that waited for it reads the row as the other save committed it, so
# each revision's old value is the value it replaced.
_SAVE_IN_ONE_STATEMENT = """
WITH stored AS (
    SELECT id, value, source, is_draft FROM {answers}
    WHERE question_id = %(question_id)s AND author_id = %(author_id)s AND {item}
    FOR UPDATE
), inserted AS (
    INSERT INTO {answers}
        (question_id, dialogue_id, turn_id, author_id, value, source, is_draft, created_at,
         updated_at)
    SELECT %(question_id)s, %(dialogue_id)s, %(turn_id)s, %(author_id)s, %(value)s::jsonb,
           %(source)s, %(draft)s, %(now)s, %(now)s
    WHERE NOT EXISTS (SELECT FROM stored)
    RETURNING id
), updated AS (
    UPDATE {answers} AS answer
    SET value = %(value)s::jsonb, source = %(source)s,
        is_draft = answer.is_draft AND %(draft)s, updated_at = %(now)s
    FROM stored
    WHERE answer.id = stored.id AND (
        stored.value <> %(value)s::jsonb OR stored.source <> %(source)s
        -- the one write without a revision, so a seen nonce is looked up
        OR (stored.is_draft AND NOT %(draft)s AND NOT EXISTS (
            SELECT FROM {revisions} WHERE author_id = %(author_id)s AND nonce = %(nonce)s))
    )
    RETURNING answer.id, stored.value AS old_value,
              (stored.value <> %(value)s::jsonb OR stored.source <> %(source)s) AS changed
), revised AS (
    INSERT INTO {revisions} (annotation_id, author_id, old_value, new_value, nonce, created_at)
    SELECT id, %(author_id)s, NULL, %(value)s::jsonb, %(nonce)s, %(now)s FROM inserted
    UNION ALL
    SELECT id, %(author_id)s, old_value, %(value)s::jsonb, %(nonce)s, %(now)s
    FROM updated WHERE changed
)
SELECT id FROM inserted UNION ALL SELECT id FROM stored
"""


@functools.cache
def _save_statement(about_a_turn: bool) -> str:
    item = (
        "turn_id = %(turn_id)s"
        if about_a_turn
        else "turn_id IS NULL AND dialogue_id = %(dialogue_id)s"
    )
    return _SAVE_IN_ONE_STATEMENT.format(
        answers=Annotation._meta.db_table, revisions=AnnotationRevision._meta.db_table, item=item
    )


def _write_in_one_statement(answer: _Answer) -> int:
    params = {
        **asdict(answer),
        "value": json.dumps(answer.value),
        "now": timezone.now(),
    }
    # In a caller's transaction, a failed statement rolls back to a savepoint, not the caller's
    # work; on its own, the statement is its own transaction.
    savepoint = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
    with savepoint, connection.cursor() as cursor:
        cursor.execute(_save_statement(answer.turn_id is not None), params)
        (pk,) = cursor.fetchone()
    return int(pk)


class ItemIncomplete(ValidationError):
    """An item submitted with required questions unanswered; ``unanswered`` names them."""

    def __init__(self, unanswered: list[Unanswered]) -> None:
        self.unanswered = unanswered
        super().__init__(refusal_message(unanswered), code="unanswered")


def item_unanswered(*, assignment: QueueAssignment) -> list[Unanswered]:
    """The item's required questions its annotator has not answered, in page order: three
    queries (the questions, the dialogue's turns and the annotator's answers)."""
    questions = list(assignment.queue.schema.questions.order_by("position", "pk"))
    turns = list(
        Turn.objects.filter(dialogue_id=assignment.dialogue_id)
        .order_by("index")
        .only("pk", "dialogue_id", "index", "round", "role")
    )
    rows = (
        Annotation.objects.filter(
            dialogue_id=assignment.dialogue_id,
            author_id=assignment.annotator_id,
            question__in=questions,
        )
        .exclude(source=Annotation.Source.UNCONFIRMED_PREFILL)
        .values_list("question_id", "turn_id", "value")
    )
    answers: dict[SlotKey, Any] = {
        (question_id, turn_id): value for question_id, turn_id, value in rows
    }
    return unanswered(questions=questions, turns=turns, answers=answers)


@transaction.atomic
def item_submit(*, assignment: QueueAssignment) -> QueueAssignment:
    """Mark an item done, its drafts final. Refused (``ItemIncomplete``, nothing written) while
    a required question is unanswered: a suggestion the annotator did not confirm is no
    answer, and is never stored as one. Submitting a done item changes nothing."""
    assignment = QueueAssignment.objects.select_for_update().get(pk=assignment.pk)
    if assignment.status == QueueAssignment.Status.DONE:
        return assignment
    missing = item_unanswered(assignment=assignment)
    if missing:
        raise ItemIncomplete(missing)
    Annotation.objects.filter(
        dialogue_id=assignment.dialogue_id,
        author_id=assignment.annotator_id,
        question__schema_id=assignment.queue.schema_id,
        is_draft=True,
    ).update(is_draft=False, updated_at=timezone.now())
    assignment.status = QueueAssignment.Status.DONE
    assignment.submitted_at = timezone.now()
    assignment.save(update_fields=["status", "submitted_at", "updated_at"])
    return assignment


SKIP_REASON_MAX = QueueAssignment._meta.get_field("skip_reason").max_length or 500


def item_skip(*, assignment: QueueAssignment, reason: str) -> None:
    """Put an item aside, saying why (required; a skipped item may be skipped again with a new
    reason). A done item stays done."""
    reason = " ".join(reason.split())
    if not reason:
        raise ValidationError("Say why you skip this item.", code="reason")
    if len(reason) > SKIP_REASON_MAX:
        raise ValidationError(f"A reason is at most {SKIP_REASON_MAX} characters.", code="reason")
    QueueAssignment.objects.filter(
        pk=assignment.pk,
        status__in=[QueueAssignment.Status.PENDING, QueueAssignment.Status.SKIPPED],
    ).update(status=QueueAssignment.Status.SKIPPED, skip_reason=reason, updated_at=timezone.now())
