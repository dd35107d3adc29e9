"""Reads for transcripts. Every list is one query whatever its length (no N+1)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from webapp.accounts.models import User
from webapp.annotations.models import Annotation, QueueAssignment
from webapp.dialogues.filters import DialogueFilters, IntRange
from webapp.dialogues.models import Dialogue, Turn
from webapp.runs.models import Run

# Full-text search on PostgreSQL: the expression must stay identical to the one the GIN index of
# migration 0003 was built on, or the planner cannot use the index.
SEARCH_CONFIG = "english"


def turn_search_vector():  # type: ignore[no-untyped-def]
    from django.contrib.postgres.search import SearchVector

    return SearchVector("text", config=SEARCH_CONFIG)


def _turns_of_dialogue() -> QuerySet[Turn]:
    return Turn.objects.filter(dialogue=OuterRef("pk"))


def _student_attempts() -> QuerySet[Turn]:
    return _turns_of_dialogue().filter(role=Turn.Role.STUDENT, kind=Turn.Kind.ATTEMPT)


def _range(dialogues: QuerySet[Dialogue], name: str, bounds: IntRange) -> QuerySet[Dialogue]:
    if bounds.lower is not None:
        dialogues = dialogues.filter(**{f"{name}__gte": bounds.lower})
    if bounds.upper is not None:
        dialogues = dialogues.filter(**{f"{name}__lte": bounds.upper})
    return dialogues


def _filter_search(dialogues: QuerySet[Dialogue], filters: DialogueFilters) -> QuerySet[Dialogue]:
    """Dialogues with one turn that matches the whole query. PostgreSQL: stemmed full-text
    search (web-search syntax: words, "phrases", -exclusions, or) through the GIN index.
    Elsewhere (SQLite): every word appears, case-insensitively, in the same turn."""
    if not filters.search:
        return dialogues
    turns = _turns_of_dialogue()
    if connection.vendor == "postgresql":
        from django.contrib.postgres.search import SearchQuery

        query = SearchQuery(filters.search, config=SEARCH_CONFIG, search_type="websearch")
        turns = turns.annotate(document=turn_search_vector()).filter(document=query)
    else:
        for word in filters.search.split():
            turns = turns.filter(text__icontains=word.strip('"'))
    return dialogues.filter(Exists(turns))


def _filter_changed_answer(
    dialogues: QuerySet[Dialogue], filters: DialogueFilters
) -> QuerySet[Dialogue]:
    """ "Changed its answer after feedback": the student's attempts hold ≥2 distinct non-empty
    extracted answers. That is exactly "some attempt's answer differs from the previous
    non-empty one" (a sequence with two distinct values has two neighbours that differ), and
    it is one correlated count per dialogue instead of a window over all turns."""
    if filters.changed_answer is None:
        return dialogues
    distinct_answers = Subquery(
        _student_attempts()
        .exclude(extracted_answer="")
        .order_by()
        .values("dialogue")
        .annotate(answers=Count("extracted_answer", distinct=True))
        .values("answers"),
        output_field=IntegerField(),
    )
    dialogues = dialogues.annotate(distinct_answers=Coalesce(distinct_answers, Value(0)))
    if filters.changed_answer:
        return dialogues.filter(distinct_answers__gte=2)
    return dialogues.filter(distinct_answers__lt=2)


def _filter_fields(dialogues: QuerySet[Dialogue], filters: DialogueFilters) -> QuerySet[Dialogue]:
    if filters.run_id is not None:
        dialogues = dialogues.filter(run_id=filters.run_id)
    if filters.task_set_id is not None:
        dialogues = dialogues.filter(task__task_set_id=filters.task_set_id)
    if filters.task_id is not None:
        dialogues = dialogues.filter(task_id=filters.task_id)
    if filters.student_id is not None:
        dialogues = dialogues.filter(run__student_id=filters.student_id)
    if filters.outcome:
        dialogues = dialogues.filter(outcome=filters.outcome)
    if filters.first_correct_turn is not None:
        dialogues = _range(dialogues, "first_correct_turn", filters.first_correct_turn)
    if filters.num_turns is not None:
        dialogues = _range(dialogues, "num_turns", filters.num_turns)
    return dialogues


def _filter_turns(dialogues: QuerySet[Dialogue], filters: DialogueFilters) -> QuerySet[Dialogue]:
    if filters.leaked is not None:  # "leaked" is annotated by dialogue_list
        dialogues = dialogues.filter(leaked=filters.leaked)
    for kind in filters.turn_kinds:
        dialogues = dialogues.filter(Exists(_turns_of_dialogue().filter(kind=kind)))
    return dialogues


def _filter_labels(
    dialogues: QuerySet[Dialogue], filters: DialogueFilters, reader: User | None
) -> QuerySet[Dialogue]:
    """Submitted labels only. An annotator's label filters look at their own labels alone, so
    filtering cannot reveal what others answered (blind labelling)."""
    labels = Annotation.objects.filter(dialogue=OuterRef("pk"), is_draft=False)
    if reader is not None and not reader.is_researcher:
        labels = labels.filter(author=reader)
    if filters.labelled is not None:
        has_labels = Exists(labels)
        dialogues = dialogues.filter(has_labels if filters.labelled else ~has_labels)
    if filters.label is not None:
        match = labels.filter(question__key=filters.label.key, value=filters.label.value)
        dialogues = dialogues.filter(Exists(match))
    if filters.annotator_id is not None:
        assigned = QueueAssignment.objects.filter(
            dialogue=OuterRef("pk"), annotator_id=filters.annotator_id
        )
        dialogues = dialogues.filter(Exists(assigned))
    return dialogues


FilterStep = Callable[[QuerySet[Dialogue], DialogueFilters], QuerySet[Dialogue]]
_FILTER_STEPS: Sequence[FilterStep] = (
    _filter_fields,
    _filter_turns,
    _filter_changed_answer,
    _filter_search,
)


def visible_to(dialogues: QuerySet[Dialogue], *, reader: User | None) -> QuerySet[Dialogue]:
    """Researchers (and internal callers, ``reader=None``) see every dialogue; an annotator
    sees only the dialogues a labelling queue assigns to them."""
    if reader is None or reader.is_researcher:
        return dialogues
    return dialogues.filter(
        Exists(QueueAssignment.objects.filter(dialogue=OuterRef("pk"), annotator=reader))
    )


def dialogue_list(*, filters: DialogueFilters, reader: User | None = None) -> QuerySet[Dialogue]:
    """The transcripts that match ``filters`` (and that ``reader`` may see), in their sort
    order, with what a list row shows (run, task, student model, whether a teacher turn leaked)
    fetched in the same query."""
    dialogues = Dialogue.objects.select_related("task", "run", "run__student").annotate(
        leaked=Exists(_turns_of_dialogue().filter(role=Turn.Role.TEACHER, leak_flag=True))
    )
    dialogues = visible_to(dialogues, reader=reader)
    for step in _FILTER_STEPS:
        dialogues = step(dialogues, filters)
    dialogues = _filter_labels(dialogues, filters, reader)
    return dialogues.order_by(*filters.ordering)


@dataclass(frozen=True)
class Neighbours:
    """The dialogues before and after one in a filtered list, and the list page each is on."""

    previous_pk: int | None = None
    previous_page: int = 1
    next_pk: int | None = None
    next_page: int = 1


def dialogue_neighbours(
    *,
    filters: DialogueFilters,
    pk: int,
    page_number: int,
    per_page: int,
    reader: User | None = None,
) -> Neighbours:
    """Previous and next within the list page the dialogue was opened from (plus one row on
    either side, so the walk crosses page boundaries): one query of at most per_page + 2 ids."""
    start = max(0, (page_number - 1) * per_page - 1)
    stop = page_number * per_page + 1
    window = list(
        dialogue_list(filters=filters, reader=reader).values_list("pk", flat=True)[start:stop]
    )
    if pk not in window:
        return Neighbours()
    position = window.index(pk)
    absolute = start + position

    def page_of(index: int) -> int:
        return index // per_page + 1

    previous_pk = window[position - 1] if position > 0 else None
    next_pk = window[position + 1] if position + 1 < len(window) else None
    return Neighbours(
        previous_pk=previous_pk,
        previous_page=page_of(absolute - 1) if previous_pk else 1,
        next_pk=next_pk,
        next_page=page_of(absolute + 1) if next_pk else 1,
    )


def dialogue_with_turns(*, pk: int, reader: User | None = None) -> Dialogue:
    return (
        visible_to(Dialogue.objects.all(), reader=reader)
        .select_related(
            "task", "task__task_set", "run", "run__student", "run__teacher", "run__protocol"
        )
        .prefetch_related("turns")
        .get(pk=pk)
    )


def runs_with_task(
    *, task_id: int, exclude_run_id: int | None = None, reader: User | None = None
) -> QuerySet[Run]:
    """Runs that hold at least one dialogue of this task (that ``reader`` may see), newest
    first, with how many."""
    of_task = Q(dialogues__task_id=task_id)
    if reader is not None and not reader.is_researcher:
        of_task &= Q(dialogues__assignments__annotator=reader)
    runs = Run.objects.filter(of_task)
    if exclude_run_id is not None:
        runs = runs.exclude(pk=exclude_run_id)
    return (
        runs.select_related("student")
        .annotate(samples=Count("dialogues", filter=of_task, distinct=True))
        .order_by("-created_at", "-pk")
    )


@dataclass(frozen=True)
class AlignedRound:
    """One round k of two dialogues side by side; either side may have no turns in it."""

    round: int
    left: list[Turn] = field(default_factory=list)
    right: list[Turn] = field(default_factory=list)


def align_rounds(*, left: Sequence[Turn], right: Sequence[Turn]) -> list[AlignedRound]:
    """Pair two conversations round by round (round k = the student's k-th reply and what
    answered it), so turn 3 of one run sits next to turn 3 of the other."""
    rounds = sorted({turn.round for turn in (*left, *right)})
    return [
        AlignedRound(
            round=k,
            left=[turn for turn in left if turn.round == k],
            right=[turn for turn in right if turn.round == k],
        )
        for k in rounds
    ]


def compare_dialogue(
    *, task_id: int, run_id: int, sample_index: int, reader: User | None = None
) -> Dialogue | None:
    return (
        visible_to(Dialogue.objects.all(), reader=reader)
        .select_related("run", "run__student", "run__teacher")
        .prefetch_related("turns")
        .filter(task_id=task_id, run_id=run_id, sample_index=sample_index)
        .first()
    )
