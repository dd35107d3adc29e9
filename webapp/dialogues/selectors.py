"""Reads of dialogues as stored, for any caller: whoever may read them is the caller's
business (the transcript pages scope theirs: ``webapp.transcripts.scope``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from webapp.dialogues.models import Dialogue, Turn


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


def fork_parents(*, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Each parent dialogue's task, seed and turns (as stored, in order), for the forks that
    play on from them."""
    parents: dict[int, dict[str, Any]] = {
        row["pk"]: {**row, "turns": []}
        for row in Dialogue.objects.filter(pk__in=ids).values("pk", "task_id", "seed")
    }
    turn_fields = [f.name for f in Turn._meta.concrete_fields if f.name not in {"id", "dialogue"}]
    for turn in (
        Turn.objects.filter(dialogue_id__in=ids)
        .order_by("dialogue_id", "index")
        .values("dialogue_id", *turn_fields)
    ):
        parents[turn.pop("dialogue_id")]["turns"].append(turn)
    return parents
