"""What a labelling item asks, and what counts as answered (for the page and for submitting).

An item is one dialogue for one annotator. Each question of the queue's schema is asked once
per turn of its role (teacher or student turns), or once for the whole dialogue: each of these
is a *slot*. A slot is answered when the annotator stored an answer in it themselves: a
suggestion (the leak detector's, ``LabelQuestion.prefill``) is only shown until the annotator
confirms it or chooses an answer, and an answer that item submission stored from a suggestion
before confirmation was required (``Annotation.Source.UNCONFIRMED_PREFILL``) is not one either.
Every question is required unless the schema marks it optional.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webapp.annotations.models import LabelQuestion
from webapp.dialogues.models import Turn

SlotKey = tuple[int, int | None]  # (question id, turn id or None for the whole dialogue)


def prefill_value(*, question: LabelQuestion, turn: Turn | None) -> Any:
    """The suggested answer a question starts from, or None. Shown, never stored as is."""
    if question.prefill == LabelQuestion.Prefill.LEAK_FLAG and turn is not None:
        return bool(turn.leak_flag)
    return None


def is_answer(*, question: LabelQuestion, value: Any) -> bool:
    """Whether a stored value answers its question: a cleared text box does not; an empty
    multiple choice does (the annotator unticked every option: none applies)."""
    if value is None:
        return False
    if question.kind == LabelQuestion.Kind.FREE_TEXT:
        return bool(str(value).strip())
    return True


def slot_id(question_id: int, turn_id: int | None) -> str:
    """The id of a slot's form on the labelling page."""
    return f"q-{question_id}-{'d' if turn_id is None else turn_id}"


@dataclass(frozen=True)
class Unanswered:
    """A required slot with no answer from the annotator."""

    question: LabelQuestion
    turn: Turn | None

    @property
    def where(self) -> str:
        """The message as every page names it, or "the whole dialogue"."""
        return self.turn.message_label if self.turn is not None else "the whole dialogue"

    @property
    def slot_id(self) -> str:
        return slot_id(self.question.pk, self.turn.pk if self.turn is not None else None)


def slots(
    *, questions: Sequence[LabelQuestion], turns: Iterable[Turn]
) -> list[tuple[LabelQuestion, Turn | None]]:
    """Every (question, turn) an item asks, in page order: turn by turn, then the dialogue."""
    result: list[tuple[LabelQuestion, Turn | None]] = []
    for turn in turns:
        result.extend((question, turn) for question in questions if question.role == turn.role)
    result.extend((question, None) for question in questions if question.role == "")
    return result


def unanswered(
    *,
    questions: Sequence[LabelQuestion],
    turns: Iterable[Turn],
    answers: Mapping[SlotKey, Any],
) -> list[Unanswered]:
    """The required slots that ``answers`` (the annotator's own, unconfirmed suggestions left
    out) does not answer, in page order."""
    missing = []
    for question, turn in slots(questions=questions, turns=turns):
        if question.optional:
            continue
        key = (question.pk, turn.pk if turn is not None else None)
        if key not in answers or not is_answer(question=question, value=answers[key]):
            missing.append(Unanswered(question, turn))
    return missing


def refusal_message(missing: Sequence[Unanswered], shown: int = 6) -> str:
    """Why an item cannot be submitted, naming the unanswered questions and where they are."""
    count = len(missing)
    named = "; ".join(f"“{item.question.text}” on {item.where}" for item in missing[:shown])
    more = f"; and {count - shown} more" if count > shown else ""
    noun = "question is" if count == 1 else "questions are"
    return (
        f"Not submitted: {count} required {noun} unanswered: {named}{more}. Answer "
        "them (a suggestion counts once you confirm it), or skip the item with a reason."
    )
