"""Reads for the transcript pages and the API: lists, one dialogue's page, comparisons. Each
scopes its dialogues to its reader (``scope``); every list is one query whatever its length
(no N+1)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Count, Exists, F, JSONField, OuterRef, Q, QuerySet, Sum
from django.db.models.expressions import Combinable
from django.db.models.functions import Coalesce, Left

from webapp.accounts.models import User
from webapp.annotations.models import Annotation, LabelQuestion, QueueAssignment
from webapp.annotations.selectors import given_labels
from webapp.core.compiled_sql import (
    READER_MARKER,
    ROW_MARKER,
    bind,
    datetime_value,
    fetch_dicts,
    json_value,
    values_sql,
)
from webapp.dialogues import search
from webapp.dialogues.models import Dialogue, Turn
from webapp.dialogues.summary import kinds_mask, masks_with
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.tasks.models import Task, TaskSet
from webapp.transcripts.filters import DialogueFilters, IntRange, LabelMatch
from webapp.transcripts.scope import bounding_annotator, visible_to


def _turns_of_dialogue() -> QuerySet[Turn]:
    return Turn.objects.filter(dialogue=OuterRef("pk"))


def _range(dialogues: QuerySet[Dialogue], name: str, bounds: IntRange) -> QuerySet[Dialogue]:
    if bounds.lower is not None:
        dialogues = dialogues.filter(**{f"{name}__gte": bounds.lower})
    if bounds.upper is not None:
        dialogues = dialogues.filter(**{f"{name}__lte": bounds.upper})
    return dialogues


def _person_teaches(run: str = "") -> Q:
    """The runs (reached through ``run``) whose teacher is a person."""
    return Q(**{f"{run}teacher__backend": ModelSpec.Backend.HUMAN})


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
    if filters.end_reason:
        dialogues = dialogues.filter(end_reason=filters.end_reason)
    if filters.first_correct_turn is not None:
        dialogues = _range(dialogues, "first_correct_turn", filters.first_correct_turn)
    if filters.num_turns is not None:
        dialogues = _range(dialogues, "num_turns", filters.num_turns)
    if filters.training_step is not None:
        dialogues = _range(dialogues, "training_step", filters.training_step)
    if filters.taught_by_person is not None:
        person = _person_teaches("run__")
        dialogues = dialogues.filter(person if filters.taught_by_person else ~person)
    return dialogues


def _filter_turns(dialogues: QuerySet[Dialogue], filters: DialogueFilters) -> QuerySet[Dialogue]:
    """What the turns say, read from the dialogue's own copies (``summary.turn_summary``)."""
    if filters.leaked is not None:
        dialogues = dialogues.filter(leaked=filters.leaked)
    if filters.changed_answer is not None:
        dialogues = dialogues.filter(changed_answer=filters.changed_answer)
    if filters.turn_kinds:
        # "Has every one of these bits" as the list of masks that do (at most 2**5), so the
        # index on turn_kinds can find the few dialogues with a rare kind of turn.
        dialogues = dialogues.filter(turn_kinds__in=masks_with(kinds_mask(filters.turn_kinds)))
    return dialogues


def _filter_labels(
    dialogues: QuerySet[Dialogue], filters: DialogueFilters, reader: User | None
) -> QuerySet[Dialogue]:
    """Labels only (``given_labels``: no drafts, no suggestion nobody confirmed). An
    annotator's label filters look at their own labels alone, so filtering cannot reveal what
    others answered (blind labelling)."""
    labels = given_labels().filter(dialogue=OuterRef("pk"))
    if (annotator_id := bounding_annotator(reader)) is not None:
        labels = labels.filter(author_id=annotator_id)
    if filters.labelled is not None:
        has_labels = Exists(labels)
        dialogues = dialogues.filter(has_labels if filters.labelled else ~has_labels)
    if filters.label is not None:
        dialogues = dialogues.filter(_label_condition(labels, filters.label))
    if filters.agreement is not None:
        dialogues = dialogues.filter(_agreement_condition(labels, *filters.agreement))
    if filters.annotator_id is not None:
        assigned = QueueAssignment.objects.filter(
            dialogue=OuterRef("pk"), annotator_id=filters.annotator_id
        )
        dialogues = dialogues.filter(Exists(assigned))
    return dialogues


def _label_condition(labels: QuerySet[Annotation], label: LabelMatch) -> Q | Combinable:
    on_question = labels.filter(question__key=label.key)
    if label.op == "=":
        return Exists(on_question.filter(value=label.value))
    if label.op == "!=":
        return ~Exists(on_question.filter(value=label.value))
    # A comparison: the rating values that meet it, on the scales of the questions of this key.
    scales = LabelQuestion.objects.filter(key=label.key, kind=LabelQuestion.Kind.RATING)
    values = sorted({v for question in scales for v in question.scale if label.accepts(v)})
    rated = on_question.filter(question__kind=LabelQuestion.Kind.RATING, value__in=values)
    return Exists(rated) if values else Q(pk__in=[])


def _agreement_condition(labels: QuerySet[Annotation], key: str, agree: bool) -> Q:
    """Each (dialogue, turn) that two or more annotators answered on question ``key`` is a
    group: agreement is a group with one distinct answer and none with more; disagreement, a
    group with more than one."""
    groups = (
        labels.filter(question__key=key)
        .order_by()
        .values("turn_id")
        .annotate(authors=Count("author", distinct=True), answers=Count("value", distinct=True))
        .filter(authors__gte=2)
    )
    disagreeing = Exists(groups.filter(answers__gt=1))
    if not agree:
        return Q(disagreeing)
    return Q(Exists(groups.filter(answers=1))) & ~Q(disagreeing)


FilterStep = Callable[[QuerySet[Dialogue], DialogueFilters], QuerySet[Dialogue]]
_FILTER_STEPS: Sequence[FilterStep] = (_filter_fields, _filter_turns)


def dialogues_in_play(filters: DialogueFilters) -> int:
    """Dialogues that the evaluation runs still playing (queued, running, or waiting for
    people) and matching the criteria of ``filters`` that a run answers for all its dialogues
    (``DialogueFilters.narrows_dialogues``) will store and have not: the list shows a dialogue
    once it ends."""
    playing = Run.objects.filter(kind=Run.Kind.EVAL).exclude(status__in=Run.TERMINAL_STATUSES)
    if filters.run_id is not None:
        playing = playing.filter(pk=filters.run_id)
    if filters.task_set_id is not None:
        playing = playing.filter(task_set_id=filters.task_set_id)
    if filters.student_id is not None:
        playing = playing.filter(student_id=filters.student_id)
    if filters.taught_by_person is not None:
        person = _person_teaches()
        playing = playing.filter(person if filters.taught_by_person else ~person)
    totals = playing.aggregate(total=Sum("progress_total"), done=Sum("progress_done"))
    return max(0, (totals["total"] or 0) - (totals["done"] or 0))


def dialogue_list(
    *, filters: DialogueFilters, reader: User | None = None, searches_turns: bool | None = None
) -> QuerySet[Dialogue]:
    """The transcripts that match ``filters`` (and that ``reader`` may see), in their sort
    order. Filters and sorts read the dialogue's own row (see ``Dialogue``), so the list page
    takes its page of ids from here with the sort's index, and then ``dialogue_rows``.
    ``searches_turns``: ``search.searches_turns(filters.search)``, when the caller has it."""
    dialogues = visible_to(Dialogue.objects.all(), reader=reader)
    for step in _FILTER_STEPS:
        dialogues = step(dialogues, filters)
    if filters.search:  # one turn matches the whole query (see search.py)
        dialogues = search.search(
            dialogues, filters.search, _turns_of_dialogue(), in_turns=searches_turns
        )
    dialogues = _filter_labels(dialogues, filters, reader)
    return dialogues.order_by(*filters.ordering)


# The prompt as far as a list row shows it (truncated to 300 characters, in a tooltip).
PROMPT_HEAD = 301


ROW_FIELDS = (
    "pk", "run_id", "task_id", "sample_index", "outcome", "first_correct_turn", "num_turns",
    "end_reason", "leaked", "created_at", "run__name", "student_name",
)  # fmt: skip


@functools.cache
def _rows_sql(vendor: str, count: int) -> tuple[str, tuple[Any, ...], tuple[str, ...]]:
    """``dialogue_rows``'s query for ``count`` ids, compiled once per process (core.compiled_sql):
    the ORM took 1.1 ms to write it, half the rows' time. A page holds at most
    ``DIALOGUES_PER_PAGE`` rows, so a process keeps that many versions at most."""
    markers = [ROW_MARKER + place for place in range(count)]
    return values_sql(
        Dialogue.objects.filter(pk__in=markers)
        .order_by()
        .values(*ROW_FIELDS, prompt_head=Left("task__prompt", PROMPT_HEAD))
    )


def dialogue_rows(pks: Sequence[int]) -> list[dict[str, Any]]:
    """What a transcript-list row shows, for these dialogues in this order, in one query of
    plain values (a page of model instances with their runs and students costs twice the
    time): ``ROW_FIELDS`` and the task's prompt cut to ``PROMPT_HEAD`` characters
    (``prompt_head``)."""
    if not pks:
        return []
    sql, params, names = _rows_sql(connection.vendor, len(pks))
    markers = {ROW_MARKER + place: pk for place, pk in enumerate(pks)}
    rows = {}
    for row in fetch_dicts(sql, bind(params, markers), names):
        row["created_at"] = datetime_value(row["created_at"])
        row["leaked"] = bool(row["leaked"])
        rows[row["pk"]] = row
    return [rows[pk] for pk in pks if pk in rows]


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


# What the dialogue page shows of its dialogue, its task and its run, as plain values (a related
# row read whole costs time in the ORM and in decoding JSON the page never shows: a run's frozen
# configuration grows with its task set). A user simulator's or a judge's name, which few runs
# have, is read on its own when there is one: two more joins here doubled the time PostgreSQL
# spends planning this query (0.65 to 1.4 ms).
DIALOGUE_PAGE_VALUES = (
    "pk", "run_id", "task_id", "sample_index", "seed", "outcome", "first_correct_turn",
    "num_turns", "end_reason", "ended_by", "end_note", "training_step",
    "task__external_id", "task__prompt", "task__reference", "task__verifier_kind",
    "task__verifier_config", "task__task_set__name", "task__task_set__version",
    "run__name", "run__protocol__name", "run__student__name", "run__teacher__name",
    "run__user_simulator_id", "run__judge_id",
)  # fmt: skip
DIALOGUE_PAGE_JSON = ("task__reference", "task__verifier_config")


def _played_protocol(flag: str) -> Coalesce:
    """A flag of the protocol the dialogue was played under (``Run.dialogue_config``): an
    evaluation's own, an online training run's rollouts' (its configuration has no top-level
    protocol)."""
    return Coalesce(
        F(f"run__config__protocol__{flag}"),
        F(f"run__config__rollouts__protocol__{flag}"),
        output_field=JSONField(),
    )


# What the run's frozen protocol said about privacy, read from inside its configuration (the
# protocol row may have been edited since; the whole configuration is too big to read).
FROZEN_PROTOCOL_FLAGS = {
    "protocol_mode": _played_protocol("mode"),
    "teacher_sees_reference": _played_protocol("teacher_sees_reference"),
    "teacher_sees_verifier_details": _played_protocol("teacher_sees_verifier_details"),
}
# An online training run's rollout was played under its rollouts' protocol and teacher, not the
# held-out evaluation's that the run's own columns name (null for an evaluation's dialogue).
ROLLOUT_ROLES = {
    "rollout_protocol_name": F("run__config__rollouts__protocol__name"),
    "rollout_teacher_name": F("run__config__rollouts__teacher__name"),
    "rollout_user_simulator_name": F("run__config__rollouts__user_simulator__name"),
}


_OUTCOMES = dict(Dialogue.Outcome.choices)
_END_REASONS = dict(Dialogue.EndReason.choices)
_VERIFIER_KINDS = dict(Task.VerifierKind.choices)


@dataclass(frozen=True)
class DialoguePage:
    """What the dialogue page shows of one dialogue: ``DIALOGUE_PAGE_VALUES`` (named with
    ``_`` for ``__``), the run's frozen protocol flags (``FROZEN_PROTOCOL_FLAGS``), the roles
    an online training run's rollout was played with (``ROLLOUT_ROLES``, ``None`` otherwise),
    and the names of the run's user simulator and judge ("" when it has none)."""

    pk: int
    run_id: int
    task_id: int
    sample_index: int
    seed: int
    outcome: str
    first_correct_turn: int | None
    num_turns: int
    end_reason: str
    ended_by: str
    end_note: str
    training_step: int | None
    task_external_id: str
    task_prompt: str
    task_reference: Any
    task_verifier_kind: str
    task_verifier_config: Any
    task_task_set_name: str
    task_task_set_version: int
    run_name: str
    run_protocol_name: str
    run_student_name: str
    run_teacher_name: str | None
    run_user_simulator_id: int | None
    run_judge_id: int | None
    protocol_mode: str | None
    teacher_sees_reference: bool | None
    teacher_sees_verifier_details: bool | None
    rollout_protocol_name: str | None
    rollout_teacher_name: str | None
    rollout_user_simulator_name: str | None
    user_simulator_name: str = ""
    judge_name: str = ""

    # As the models' get_FOO_display: the choice's label, or the stored value if none.
    @property
    def outcome_label(self) -> str:
        return str(_OUTCOMES.get(self.outcome, self.outcome))

    @property
    def end_reason_label(self) -> str:
        return str(_END_REASONS.get(self.end_reason, self.end_reason))

    @property
    def verifier_kind_label(self) -> str:
        return str(_VERIFIER_KINDS.get(self.task_verifier_kind, self.task_verifier_kind))

    @property
    def task_set_label(self) -> str:
        return str(TaskSet(name=self.task_task_set_name, version=self.task_task_set_version))


@functools.cache
def _dialogue_page_sql(
    vendor: str, *, for_annotator: bool
) -> tuple[str, tuple[Any, ...], tuple[str, ...]]:
    """The dialogue page's query, compiled once per process, kind of database and kind of
    reader (core.compiled_sql): the ORM took longer to write it (about 2.5 ms) than PostgreSQL
    to run it."""
    reader = User(pk=READER_MARKER, role=User.Role.ANNOTATOR) if for_annotator else None
    values = (
        visible_to(Dialogue.objects.filter(pk=ROW_MARKER), reader=reader)
        .order_by()  # one row: the default ordering would only cost planning time
        .values(*DIALOGUE_PAGE_VALUES, **FROZEN_PROTOCOL_FLAGS, **ROLLOUT_ROLES)
    )
    return values_sql(values)


def _model_names(model_ids: list[int]) -> dict[int, str]:
    """The registry names of these models, in one query (none for no models)."""
    if not model_ids:
        return {}
    return dict(ModelSpec.objects.filter(pk__in=model_ids).values_list("pk", "name"))


def dialogue_page(*, pk: int, reader: User | None = None) -> tuple[DialoguePage, list[Turn]]:
    """The dialogue ``pk`` (if ``reader`` may see it) as its page shows it, and its turns in
    order; ``Dialogue.DoesNotExist`` otherwise."""
    annotator_id = bounding_annotator(reader)
    sql, params, names = _dialogue_page_sql(
        connection.vendor, for_annotator=annotator_id is not None
    )
    markers = {ROW_MARKER: pk, READER_MARKER: annotator_id}
    rows = fetch_dicts(sql, bind(params, markers), names)
    if not rows:
        raise Dialogue.DoesNotExist(f"no dialogue {pk} for this reader")
    row = rows[0]
    for name in (*DIALOGUE_PAGE_JSON, *FROZEN_PROTOCOL_FLAGS, *ROLLOUT_ROLES):
        row[name] = json_value(row[name])
    simulator_id, judge_id = row["run__user_simulator_id"], row["run__judge_id"]
    names_of = _model_names([model_id for model_id in (simulator_id, judge_id) if model_id])
    page = DialoguePage(
        **{name.replace("__", "_"): value for name, value in row.items()},
        user_simulator_name=names_of.get(simulator_id, ""),
        judge_name=names_of.get(judge_id, ""),
    )
    # The turns are a query of their own rather than ``prefetch_related``, whose machinery cost
    # more than the query (1.4 ms of a 13 ms page on benchmarks/transcripts.py).
    return page, list(Turn.objects.filter(dialogue_id=pk).order_by("index"))


@dataclass(frozen=True)
class RunOfTask:
    """A run that played a task, with the sample indexes of its dialogues of that task (a run
    need not have them all: fewer samples per task, or a run cancelled midway)."""

    pk: int
    name: str
    student_name: str
    sample_indexes: tuple[int, ...]

    @property
    def sample_count(self) -> int:
        return len(self.sample_indexes)

    def has_sample(self, sample_index: int) -> bool:
        return sample_index in self.sample_indexes

    @property
    def sample_ranges(self) -> str:
        """The sample indexes as runs of consecutive numbers: ``0–3``, ``0–2, 5``."""
        spans: list[list[int]] = []
        for index in self.sample_indexes:
            if spans and index == spans[-1][1] + 1:
                spans[-1][1] = index
            else:
                spans.append([index, index])
        return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in spans)


def runs_of_task(
    *, task_id: int, exclude_run_id: int | None = None, reader: User | None = None
) -> list[RunOfTask]:
    """Runs that hold at least one dialogue of this task (that ``reader`` may see), newest
    first, each with the sample indexes it played: one query of the task's dialogues (a few per
    run: ``samples_per_task`` at most), reading names, never the runs' frozen configurations
    (which grow with the task set)."""
    dialogues = visible_to(Dialogue.objects.filter(task_id=task_id), reader=reader)
    if exclude_run_id is not None:
        dialogues = dialogues.exclude(run_id=exclude_run_id)
    rows = dialogues.order_by("-run__created_at", "-run_id", "sample_index").values_list(
        "run_id", "run__name", "student_name", "sample_index"
    )
    runs: dict[int, tuple[str, str, list[int]]] = {}
    for run_id, name, student_name, sample_index in rows:
        runs.setdefault(run_id, (name, student_name, []))[2].append(sample_index)
    return [
        RunOfTask(pk=pk, name=name, student_name=student, sample_indexes=tuple(samples))
        for pk, (name, student, samples) in runs.items()
    ]


TASK_PROMPT_HEAD = 120  # what a task choice shows of its prompt


def tasks_to_compare(
    *, filters: DialogueFilters, reader: User | None = None, limit: int = 50
) -> list[Task]:
    """The first ``limit`` tasks (in task set order) among the dialogues that ``filters``
    selects, each with ``runs``: how many runs (that ``reader`` may see) played it, so a task
    that only one run played, which has nothing to compare, shows as such."""
    played = dialogue_list(filters=filters, reader=reader).order_by().values("task_id")
    of_run = Q()
    if (annotator_id := bounding_annotator(reader)) is not None:
        of_run = Q(dialogues__assignments__annotator_id=annotator_id)
    return list(
        Task.objects.filter(pk__in=played)
        .select_related("task_set")
        .only("pk", "external_id", "position", "task_set__name", "task_set__version")
        .annotate(
            runs=Count("dialogues__run", filter=of_run, distinct=True),
            prompt_head=Left("prompt", TASK_PROMPT_HEAD),
        )
        .order_by("task_set_id", "position", "pk")[:limit]
    )


def compare_dialogue(
    *, task_id: int, run_id: int, sample_index: int, reader: User | None = None
) -> Dialogue | None:
    return (
        visible_to(Dialogue.objects.defer("search_document"), reader=reader)
        .select_related("run", "run__student", "run__teacher")
        .prefetch_related("turns")
        .filter(task_id=task_id, run_id=run_id, sample_index=sample_index)
        .first()
    )
