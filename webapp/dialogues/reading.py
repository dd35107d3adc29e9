"""What the dialogue page says about who saw what: pure functions of the stored turns and the
run's frozen protocol (no queries).

The teacher's private context is stored on each teacher turn as the engine built it
(``models_gpu.engine._Dialogue._teacher_private_context``): the extracted answer always, the
task's reference only when the protocol let the teacher see it (``teacher_sees_reference``),
and the verdict's details of the reply it answers only with ``teacher_sees_verifier_details``.
The verifier sees the reference and makes the details whatever the protocol says. So the page
labels the task's reference and each reply's verifier details by what the teacher turns hold,
not by what a protocol usually allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from webapp.dialogues.models import Turn

TEACHER = Turn.Role.TEACHER
STUDENT = Turn.Role.STUDENT


@dataclass(frozen=True)
class WhoSaw:
    """``has_teacher_turns``: the teacher spoke (the page's private-context switch is about
    it). ``teacher_saw_reference``: some teacher turn was given the reference.
    ``reference_note``: why the teacher did not see the reference ("" when it did).
    ``details_seen_by_teacher``: the turn indexes whose verifier details a teacher turn was
    given."""

    has_teacher_turns: bool
    teacher_saw_reference: bool
    reference_note: str
    details_seen_by_teacher: frozenset[int]


def _reference_note(
    *, saw: bool, has_teacher_turns: bool, protocol_mode: str | None, sees_reference: bool | None
) -> str:
    if saw:
        return ""
    if protocol_mode is not None and protocol_mode != "didactic":
        return "This protocol has no teacher: only the verifier saw the reference."
    if sees_reference is False:
        return "The run's protocol hid the reference from the teacher: only the verifier saw it."
    if not has_teacher_turns:
        return "The teacher never spoke in this dialogue: only the verifier saw the reference."
    return "No teacher turn was given the reference: only the verifier saw it."


def _details_seen_by_teacher(turns: Sequence[Turn]) -> frozenset[int]:
    """A teacher turn answers the student reply before it; it holds that reply's verifier
    details when it was shown them."""
    seen: set[int] = set()
    last_student: int | None = None
    for turn in turns:
        if turn.role == STUDENT:
            last_student = turn.index
        elif (
            turn.role == TEACHER
            and last_student is not None
            and "verdict_details" in (turn.private_context or {})
        ):
            seen.add(last_student)
    return frozenset(seen)


def who_saw(
    turns: Sequence[Turn], *, protocol_mode: str | None, teacher_sees_reference: bool | None
) -> WhoSaw:
    """``protocol_mode`` and ``teacher_sees_reference``: the run's frozen protocol (``None``
    when a configuration lacks them), used only to say why the teacher did not see something."""
    teacher_turns = [turn for turn in turns if turn.role == TEACHER]
    saw = any("reference" in (turn.private_context or {}) for turn in teacher_turns)
    return WhoSaw(
        has_teacher_turns=bool(teacher_turns),
        teacher_saw_reference=saw,
        reference_note=_reference_note(
            saw=saw,
            has_teacher_turns=bool(teacher_turns),
            protocol_mode=protocol_mode,
            sees_reference=teacher_sees_reference,
        ),
        details_seen_by_teacher=_details_seen_by_teacher(turns),
    )
