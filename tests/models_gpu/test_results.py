"""Finished dialogues as the rows a worker hands to the web side (models_gpu/results.py)."""

from __future__ import annotations

import json
from dataclasses import asdict

from models_gpu.results import dialogue_row
from models_gpu.spec.results import DialogueRow
from models_gpu.types import DialogueResult, MoveCheck, TurnRecord, Verdict

RESULT = DialogueResult(
    task_id=3,
    sample_index=1,
    seed=42,
    turns=(
        TurnRecord(
            index=0, round=1, role="student", kind="answer", text="It is 5\x00.",
            verdict=Verdict(False, 0.0, "5", {"direction": "too_low", "hints": ["a", "b"]}),
            prompt_tokens=30, completion_tokens=6, latency_ms=12.5, token_ids=(4, 5, 6),
            move=MoveCheck(valid=True, consistent=None, chance=0.25),
        ),
        TurnRecord(
            index=1, round=1, role="teacher", kind="feedback", text="Too low.",
            private_context={"reference": {"answer": "7"}},
        ),
        TurnRecord(
            index=2, round=2, role="student", kind="answer", text="7",
            verdict=Verdict(True, 1.0, "7"), move=MoveCheck(True, True, 0.5),
        ),
    ),
    solved=True,
    first_correct_turn=2,
    end_reason="solved",
)  # fmt: skip


def test_a_row_goes_to_json_and_back_unchanged() -> None:
    row = dialogue_row(RESULT)
    data = row.to_json()
    assert data == json.loads(json.dumps(asdict(row)))  # what asdict gave, without its copies
    assert DialogueRow.from_json(json.loads(json.dumps(data))) == row
    assert data["turns"][0]["text"] == "It is 5\ufffd."  # NUL made storable
    assert "token_ids" not in data["turns"][0]  # sampled ids stay with the worker
