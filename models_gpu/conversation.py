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

from collections.abc import Iterable, Mapping, Sequence
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
    view = [ViewMessage(message) for message in _opening(system, task_prompt, sharded)]
    view.extend(ViewMessage(_shown(turn), index) for index, turn in enumerate(turns))
    view.extend(ViewMessage(message) for message in _closing(instruction))
    return view


class StudentMessages:
    """One dialogue's student view as plain messages (what a student backend is sent), kept as
    its turns are added: the engine asks for the view every round, and each turn's message is
    made once rather than once a round. The same messages as ``student_view``'s."""

    def __init__(self, *, system: str, task_prompt: str, sharded: bool) -> None:
        self._opening = _opening(system, task_prompt, sharded)
        self._turns: list[Message] = []

    def of(self, turns: Sequence[Turn], *, instruction: str = "") -> tuple[Message, ...]:
        """The view of ``turns``: those seen in an earlier call, then any added since (a
        dialogue's turns are only ever appended)."""
        if len(turns) < len(self._turns):
            raise ValueError(
                f"{len(turns)} turns after {len(self._turns)}: a dialogue's turns are only "
                "ever appended"
            )
        self._turns.extend(_shown(turn) for turn in turns[len(self._turns) :])
        return (*self._opening, *self._turns, *_closing(instruction))


def _opening(system: str, task_prompt: str, sharded: bool) -> tuple[Message, ...]:
    """What comes before the turns: the system prompt, then the task (sharded: none)."""
    system_prompt = (Message("system", system),) if system else ()
    return system_prompt if sharded else (*system_prompt, Message("user", task_prompt))


def _shown(turn: Turn) -> Message:
    """A turn as the student sees it: its own replies as "assistant", all else as "user"."""
    speaks_as_student = turn.role == "student" and not is_critique(turn)
    return Message("assistant" if speaks_as_student else "user", turn.text)


def _closing(instruction: str) -> tuple[Message, ...]:
    """What comes after the turns: the instruction for this call, when given."""
    return (Message("user", instruction),) if instruction else ()
