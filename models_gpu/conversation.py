"""The student's view of a dialogue as chat messages, defined once.

The engine builds every student request with it (``engine._Dialogue.student_request``) and
training builds its examples with it (``models_gpu.training.encode``), so a model is trained on
exactly what the student saw at play time.

The view, in order:
    system     the student's system prompt, when it is not empty;
    user       the task prompt, unless the dialogue is sharded (the shards arrive as user turns);
    one message per turn: the student's own replies as "assistant", everything else (teacher
               feedback, shards, nudges, the student's own critiques) as "user". A critique is
               shown where feedback goes, as the message the student's next attempt answers
               (the self-correction protocol's critique mode), so roles keep alternating;
    user       ``instruction``, when given: a last message for this call only (the request for a
               critique).

Private context (the teacher's reference, verifier details, the critique instruction stored with
a critique) is never shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from models_gpu.spec.turns import is_critique
from models_gpu.types import Message


class Turn(Protocol):
    """What the view reads of a turn (``types.TurnRecord`` and ``spec.results.TurnRow`` both)."""

    @property
    def role(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def private_context(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class ViewMessage:
    """One message of the student's view and the turn it shows (its position in ``turns``;
    None for the system prompt, the task prompt and the instruction)."""

    message: Message
    turn: int | None = None


def student_view(
    *,
    system: str,
    task_prompt: str,
    sharded: bool,
    turns: Iterable[Turn],
    instruction: str = "",
) -> list[ViewMessage]:
    """The student's view of a dialogue (see the module docstring), each message with the turn
    it shows."""
    view = [ViewMessage(Message("system", system))] if system else []
    if not sharded:
        view.append(ViewMessage(Message("user", task_prompt)))
    for index, turn in enumerate(turns):
        speaks_as_student = turn.role == "student" and not is_critique(turn)
        view.append(
            ViewMessage(Message("assistant" if speaks_as_student else "user", turn.text), index)
        )
    if instruction:
        view.append(ViewMessage(Message("user", instruction)))
    return view


def student_messages(
    *,
    system: str,
    task_prompt: str,
    sharded: bool,
    turns: Iterable[Turn],
    instruction: str = "",
) -> tuple[Message, ...]:
    """The student's view as plain messages (what a student backend is sent)."""
    view = student_view(
        system=system,
        task_prompt=task_prompt,
        sharded=sharded,
        turns=turns,
        instruction=instruction,
    )
    return tuple(shown.message for shown in view)
