"""Whose turn it is: what the engine and the web side (forks, people) must agree on about a
dialogue's stored turns.

A round holds the student's reply and whatever answered it. A student turn can also be a
critique of the student's own previous attempt (self-correction): an aside, not a reply, marked
by ``CRITIQUE_INSTRUCTION_KEY`` in its private context (its value is the instruction given).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

CRITIQUE_INSTRUCTION_KEY = "critique_instruction"

Phase = Literal["student", "respond"]


class Turn(Protocol):
    @property
    def role(self) -> str: ...

    @property
    def private_context(self) -> Mapping[str, Any]: ...


def is_critique(turn: Turn) -> bool:
    """A student turn that critiques the student's previous attempt (self-correction)."""
    return turn.role == "student" and CRITIQUE_INSTRUCTION_KEY in (turn.private_context or {})


def is_reply(turn: Turn) -> bool:
    """A student turn that the next speaker answers (a critique aside)."""
    return turn.role == "student" and not is_critique(turn)


def next_turn(turns: Sequence[Turn]) -> tuple[int, Phase]:
    """The round and phase a dialogue with these turns goes on in: after a student reply,
    whoever answers it in that round ("respond"); otherwise the student, in the next round."""
    replies = sum(is_reply(turn) for turn in turns)
    if turns and is_reply(turns[-1]):
        return replies, "respond"
    return replies + 1, "student"


def can_go_on(round_number: int, phase: Phase, max_turns: int) -> bool:
    """Whether a next turn in ``round_number``'s ``phase`` is within ``max_turns`` (an answer
    to the last round's reply is not: that reply ends the dialogue)."""
    return round_number < max_turns or (round_number == max_turns and phase == "student")
