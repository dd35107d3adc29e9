"""Builders for stored dialogues in tests: turns as plain dicts, stored through the real
service, and runs without a worker. Each stored dialogue's seed is its name's index in NAMES,
so tests can find it again by name."""

from __future__ import annotations

from typing import Any

from models_gpu.spec.results import DialogueRow
from tests.factories import ProtocolFactory, StudentFactory, frozen_run
from webapp.runs.models import Protocol, Run
from webapp.runs.services import dialogues_store


def turn(role: str, kind: str, text: str, **fields: Any) -> dict[str, Any]:
    return {
        "role": role, "kind": kind, "text": text, "private_context": {}, "extracted_answer": "",
        "is_correct": None, "score": None, "verdict_details": {}, "leak_flag": False,
        "prompt_tokens": 1, "completion_tokens": 1, "latency_ms": 0.0, **fields,
    }  # fmt: skip


def attempt(text: str, answer: str, correct: bool) -> dict[str, Any]:
    return turn(
        "student", "attempt", text, extracted_answer=answer, is_correct=correct,
        score=float(correct), verdict_details={"expected": "3"},
    )  # fmt: skip


def move(
    answer: str,
    *,
    valid: bool,
    consistent: bool | None = None,
    chance: float | None = None,
    correct: bool = False,
) -> dict[str, Any]:
    """A judged attempt with the engine's feedback-use check of it (consistent: None for a
    dialogue's first move)."""
    return attempt(answer, answer, correct) | {
        "move_valid": valid, "move_consistent": consistent, "move_chance": chance,
    }  # fmt: skip


def feedback(text: str, leak: bool = False) -> dict[str, Any]:
    return turn("teacher", "feedback", text, leak_flag=leak, private_context={"reference": "3"})


def store(run: Run, task_id: int, sample: int, name: str, turns: list[dict[str, Any]]) -> None:
    """Store one dialogue; its seed is its name's index, so tests can find it again."""
    rounds = 0
    for index, item in enumerate(turns):
        if item["role"] == "student":
            rounds += 1
        item.update(index=index, round=max(rounds, 1))
    attempts = [t for t in turns if t["kind"] == "attempt"]
    correct_rounds = [t["round"] for t in attempts if t["is_correct"]]
    dialogues_store(
        run_id=run.pk,
        dialogues=[
            DialogueRow.from_json({
                "task_id": task_id, "sample_index": sample, "seed": NAMES.index(name),
                "outcome": "solved" if correct_rounds else "unsolved",
                "first_correct_turn": correct_rounds[0] if correct_rounds else None,
                "num_turns": rounds,
                "end_reason": "solved" if correct_rounds else "max_turns", "turns": turns,
            })
        ],
    )  # fmt: skip


NAMES = ["a_first", "a_late", "a_question", "b_same", "b_solved"]


def make_run(name: str, task_set: Any, student: Any = None) -> Run:
    return frozen_run(name=name, task_set=task_set, student=student or StudentFactory())


def sharded_run(task_set: Any, max_turns: int = 4) -> Run:
    protocol = ProtocolFactory(mode=Protocol.Mode.SHARDED, max_turns=max_turns)
    return frozen_run(name="sharded", task_set=task_set, protocol=protocol)


def shard(index: int, total: int) -> dict[str, Any]:
    return turn(
        "user", "shard", f"shard {index}", private_context={"shard": index, "shards_total": total}
    )


def store_sharded_pair(run: Run, task_id: int, first_sample: int = 0) -> None:
    """Two dialogues: 4 attempts, 2 of them before the last shard; 1 question in 5 student
    turns."""
    store(run, task_id, first_sample, "a_first", [
        shard(1, 3), attempt("5?", "5", False),  # premature: 1 of 3 shards
        shard(2, 3), turn("student", "question", "Which base?"),
        shard(3, 3), attempt("3", "3", True),  # every shard seen
    ])  # fmt: skip
    store(run, task_id, first_sample + 1, "a_late", [
        shard(1, 2), attempt("4?", "4", False),  # premature
        shard(2, 2), attempt("4", "4", False),
    ])  # fmt: skip
