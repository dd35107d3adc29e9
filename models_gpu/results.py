"""Finished dialogues (``types.DialogueResult``) as the rows the web side stores
(``spec.results.DialogueRow``): what the evaluation worker stores, and what an online training
process writes of its rollouts for the worker to store."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models_gpu.spec.results import DialogueRow, ParkedRow, TurnRow
from models_gpu.types import DialogueResult, MoveCheck, ParkedDialogue, TurnRecord, Verdict

_SCALARS = (bool, int, float)


def storable(value: Any) -> Any:
    """``value`` with every NUL character replaced by U+FFFD, through lists and dicts.

    Model output is arbitrary text, and a model (an untrained one readily) can emit NUL, which
    PostgreSQL refuses in text and JSON columns: one such reply would fail the whole run.
    """
    kind = type(value)
    # Exact types first: nearly every value is one, and an isinstance check against the
    # ``Mapping`` ABC costs more than the rest of the walk.
    if kind is str:
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if value is None or kind in _SCALARS:
        return value
    if kind is dict or isinstance(value, Mapping):
        return {storable(key): storable(item) for key, item in value.items()}
    if kind is list or kind is tuple or isinstance(value, list | tuple):
        return [storable(item) for item in value]
    if isinstance(value, str):  # a str subclass
        return storable(str(value))
    return value


def turn_row(turn: TurnRecord) -> TurnRow:
    verdict = turn.verdict
    return TurnRow(
        index=turn.index,
        round=turn.round,
        role=turn.role,
        kind=turn.kind,
        text=storable(turn.text),
        private_context=storable(turn.private_context),
        extracted_answer=storable(verdict.extracted or "") if verdict else "",
        is_correct=verdict.correct if verdict else None,
        score=verdict.score if verdict else None,
        verdict_details=storable(verdict.details) if verdict else {},
        leak_flag=turn.leak_flag,
        prompt_tokens=turn.prompt_tokens,
        completion_tokens=turn.completion_tokens,
        latency_ms=turn.latency_ms,
        move_valid=turn.move.valid if turn.move else None,
        move_consistent=turn.move.consistent if turn.move else None,
        move_chance=turn.move.chance if turn.move else None,
    )


def turn_record(row: TurnRow) -> TurnRecord:
    """A stored turn back as the engine's record (a fork's or a parked dialogue's prefix)."""
    verdict = (
        Verdict(
            correct=row.is_correct,
            score=row.score if row.score is not None else float(row.is_correct),
            extracted=row.extracted_answer or None,
            details=row.verdict_details,
        )
        if row.is_correct is not None
        else None
    )
    return TurnRecord(
        index=row.index,
        round=row.round,
        role=row.role,  # type: ignore[arg-type]  # stored from a TurnRecord's role
        kind=row.kind,  # type: ignore[arg-type]
        text=row.text,
        private_context=row.private_context,
        verdict=verdict,
        leak_flag=row.leak_flag,
        prompt_tokens=row.prompt_tokens,
        completion_tokens=row.completion_tokens,
        latency_ms=row.latency_ms,
        move=(
            MoveCheck(row.move_valid, row.move_consistent, row.move_chance)
            if row.move_valid is not None
            else None
        ),
    )


def parked_row(parked: ParkedDialogue) -> ParkedRow:
    return ParkedRow(
        task_id=parked.job.task.task_id,
        sample_index=parked.job.sample_index,
        seed=parked.job.seed,
        role=parked.role,
        round=parked.round,
        rounds_played=parked.rounds_played,
        turns=tuple(turn_row(turn) for turn in parked.turns),
        messages=tuple(
            (message.role, storable(message.content)) for message in parked.request.messages
        ),
        private_context=storable(parked.request.private_context),
    )


def dialogue_row(result: DialogueResult) -> DialogueRow:
    return DialogueRow(
        task_id=result.task_id,
        sample_index=result.sample_index,
        seed=result.seed,
        outcome="solved" if result.solved else "unsolved",
        first_correct_turn=result.first_correct_turn,
        num_turns=max((t.round for t in result.turns), default=0),
        end_reason=result.end_reason,
        turns=tuple(turn_row(turn) for turn in result.turns),
    )
