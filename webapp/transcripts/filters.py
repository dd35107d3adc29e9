"""What a transcript list is filtered and sorted by: a plain frozen value, built from the URL by
``forms.DialogueFilterForm`` and read by ``selectors.dialogue_list``.

A new criterion is a field here, a field on the form and one filter step in
``selectors._FILTER_STEPS``; nothing else changes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, replace

from django.db.models import F
from django.db.models.expressions import OrderBy


@dataclass(frozen=True)
class IntRange:
    """An inclusive range of whole numbers; ``None`` leaves that end open."""

    lower: int | None = None
    upper: int | None = None

    def __str__(self) -> str:
        if self.lower is not None and self.lower == self.upper:
            return str(self.lower)
        if self.upper is None:
            return f"{self.lower}+"
        if self.lower is None:
            return f"-{self.upper}"
        return f"{self.lower}-{self.upper}"


@dataclass(frozen=True)
class Sort:
    """One sortable column: its label and the ORM fields it orders by, the sort key first and
    then its tie-breakers (the primary key always comes last, so pages never overlap or skip a
    row). ``models.SORT_INDEXES`` holds an index in that order for each."""

    label: str
    fields: tuple[str, ...]
    # The key has empty values; they come last in both directions.
    nullable: bool = False
    # Descending, the tie-breakers still ascend (newest run first, its tasks in order); other
    # sorts reverse them with the key, so that one index read backwards serves both ways.
    ties_ascending: bool = False


# URL value → the sort; a "-" prefix on the URL value sorts descending.
SORTS: dict[str, Sort] = {
    "run": Sort("run", ("run_id", "task_position", "task_id", "sample_index"), ties_ascending=True),
    "task": Sort("task", ("task_position", "task_id", "run_id", "sample_index")),
    "student": Sort("student model", ("student_name", "run_id", "task_id", "sample_index")),
    "outcome": Sort("outcome", ("outcome", "run_id", "task_id", "sample_index")),
    "first_correct": Sort(
        "first correct turn",
        ("first_correct_turn", "run_id", "task_id", "sample_index"),
        nullable=True,
    ),
    "turns": Sort("number of turns", ("num_turns", "run_id", "task_id", "sample_index")),
    "created": Sort("created", ("created_at",)),
}
DEFAULT_SORT = "-run"


@dataclass(frozen=True)
class LabelMatch:
    """A condition on the submitted labels of a question (its key), by ``op``:

    ``helpfulness=5``, ``reveals_answer=yes``: some label gave it this value;
    ``reveals_answer!=yes``: no label gave it this value (unlabelled dialogues included);
    ``helpfulness>=4`` (also ``>``, ``<=``, ``<``): some label on a rating scale is in range.
    Yes/no are booleans and whole numbers numbers, as labels store them.
    """

    key: str
    value: bool | int | str
    op: str = "="

    def __str__(self) -> str:
        shown = ("yes" if self.value else "no") if isinstance(self.value, bool) else self.value
        return f"{self.key}{self.op}{shown}"

    def accepts(self, number: int) -> bool:
        """For the comparisons: whether a rating of ``number`` meets this condition."""
        assert isinstance(self.value, int) and self.op in COMPARISONS
        return COMPARISONS[self.op](number, self.value)


COMPARISONS: dict[str, Callable[[int, int], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
}
LABEL_OPERATORS = ("!=", *COMPARISONS, "=")  # longest first, as they are read


@dataclass(frozen=True)
class DialogueFilters:
    """Every criterion is optional; the empty value means "any"."""

    run_id: int | None = None
    task_set_id: int | None = None
    task_id: int | None = None
    student_id: int | None = None
    outcome: str = ""
    end_reason: str = ""  # Dialogue.EndReason: "no_answer" (timed out), "ended_by_person", ...
    first_correct_turn: IntRange | None = None
    num_turns: IntRange | None = None
    # Online training's stored rollouts: the optimizer steps they were played at.
    training_step: IntRange | None = None
    # True: some teacher turn was flagged as leaking the answer; False: none was.
    leaked: bool | None = None
    # True: a person played the teacher of the dialogue's run (a fork keeps its parent's
    # turns before the fork point); False: a model did.
    taught_by_person: bool | None = None
    # The dialogue has at least one turn of each of these kinds ("question", "attempt", ...).
    turn_kinds: tuple[str, ...] = ()
    # True: the student's attempts hold at least two distinct non-empty extracted answers, which
    # is exactly "some attempt's answer differs from the previous attempt's" (see summary).
    changed_answer: bool | None = None
    search: str = ""
    # Labels: some submitted label at all; a label question's key and the value it was given;
    # the annotator a queue assigned the dialogue to.
    labelled: bool | None = None
    label: LabelMatch | None = None
    # Annotators' agreement on a question (its key): True, two or more annotators answered it and
    # all gave the same answer (on each turn, for a turn question); False, two or more disagree.
    agreement: tuple[str, bool] | None = None
    annotator_id: int | None = None
    sort: str = DEFAULT_SORT

    @property
    def narrows_dialogues(self) -> bool:
        """Whether a criterion of the dialogues' own is set (their outcome, turns, labels, a
        search...), not only ones a run answers for all its dialogues (the run, its task set and
        student, whether a person teaches): then not every dialogue a matching run still plays
        will match when it ends."""
        runs_only = replace(
            self, run_id=None, task_set_id=None, student_id=None, taught_by_person=None
        )
        return runs_only != DialogueFilters(sort=self.sort)

    @property
    def ordering(self) -> tuple[OrderBy, ...]:
        """The sort key (descending when asked; empty values last both ways), then the
        tie-breakers and the primary key. Written to match ``models.SORT_INDEXES`` exactly: a
        ``NULLS LAST`` on a column without empty values would keep PostgreSQL off the index."""
        descending = self.sort.startswith("-")
        sort = SORTS.get(self.sort.removeprefix("-"), SORTS["run"])
        first, *ties = sort.fields
        nulls_last = True if sort.nullable else None
        key = (
            F(first).desc(nulls_last=nulls_last)
            if descending
            else F(first).asc(nulls_last=nulls_last)
        )
        ties_descending = descending and not sort.ties_ascending
        return (
            key,
            *(F(name).desc() if ties_descending else F(name).asc() for name in (*ties, "pk")),
        )
