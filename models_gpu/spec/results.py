"""What a worker hands back to the web side: a finished dialogue and its turns, as the
transcript tables store them (``webapp.dialogues.models``: one field per column)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["solved", "unsolved"]


@dataclass(frozen=True)
class TurnRow:
    """One turn. ``round`` is the k of "accuracy after turn k"; the verdict fields are empty
    (``is_correct`` None) on turns nobody verified."""

    index: int
    round: int
    role: str
    kind: str
    text: str
    private_context: Mapping[str, Any] = field(default_factory=dict)
    extracted_answer: str = ""
    is_correct: bool | None = None
    score: float | None = None
    verdict_details: Mapping[str, Any] = field(default_factory=dict)
    leak_flag: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    # Feedback use of a judged student move (``models_gpu.verifiers.feedback_use``); None on
    # other turns, on tasks whose feedback cannot be checked, and (consistent) on first moves.
    move_valid: bool | None = None
    move_consistent: bool | None = None
    move_chance: float | None = None


@dataclass(frozen=True)
class DialogueRow:
    """One finished dialogue of a run: which (task, sample), how it ended, its turns; for a
    fork, its parent dialogue and how many of the parent's turns it kept (its first ones)."""

    task_id: int
    sample_index: int
    seed: int
    outcome: Outcome
    first_correct_turn: int | None
    num_turns: int
    end_reason: str
    turns: tuple[TurnRow, ...]
    parent_id: int | None = None
    fork_turns: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DialogueRow:
        """From plain data with the same keys (turns as a list of mappings)."""
        turns = tuple(TurnRow(**turn) for turn in data["turns"])
        return cls(**{**data, "turns": turns})

    def to_json(self) -> dict[str, Any]:
        """As plain data for ``json.dumps`` (``from_json`` reads it back). A shallow copy:
        ``dataclasses.asdict`` deep-copies every turn's mappings, which cost a batch of
        finished dialogues more than playing their last round's teacher."""
        return {**vars(self), "turns": [dict(vars(turn)) for turn in self.turns]}


@dataclass(frozen=True)
class ParkedRow:
    """A dialogue waiting for a person (``types.ParkedDialogue``) as the web side stores it:
    the turns so far, the role whose turn it is, and what that role sees (``messages`` as
    (chat role, content) pairs, and its private context)."""

    task_id: int
    sample_index: int
    seed: int
    role: str
    round: int
    rounds_played: int
    turns: tuple[TurnRow, ...]
    messages: tuple[tuple[str, str], ...]
    private_context: Mapping[str, Any] = field(default_factory=dict)
