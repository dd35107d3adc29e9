"""Finished dialogues (``types.DialogueResult``) as the rows the web side stores
(``spec.results.DialogueRow``): what the evaluation worker stores, and what an online training
process writes of its rollouts for the worker to store."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models_gpu.spec.results import DialogueRow, TurnRow
from models_gpu.types import DialogueResult, TurnRecord


def storable(value: Any) -> Any:
    """``value`` with every NUL character replaced by U+FFFD, through lists and dicts.

    Model output is arbitrary text, and a model (an untrained one readily) can emit NUL, which
    PostgreSQL refuses in text and JSON columns: one such reply would fail the whole run.
    """
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, Mapping):
        return {storable(key): storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
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
