from __future__ import annotations

import re

import pytest

from models_gpu.backends.safe_arithmetic import evaluate
from models_gpu.generators.arithmetic import arithmetic_tasks

PROMPT = re.compile(r"What is (\d+) ([-+*]) (\d+)\?")


def test_seeded() -> None:
    assert arithmetic_tasks(20, seed=3) == arithmetic_tasks(20, seed=3)
    assert arithmetic_tasks(20, seed=3) != arithmetic_tasks(20, seed=4)


@pytest.mark.parametrize(("digits", "operations"), [(1, "+"), (2, "+-*"), (3, "-*")])
def test_prompts_match_their_answers(digits: int, operations: str) -> None:
    tasks = arithmetic_tasks(100, seed=0, digits=digits, operations=operations)
    assert len(tasks) == 100
    for task in tasks:
        match = PROMPT.fullmatch(task["prompt"])
        assert match is not None, task
        left, symbol, right = match.groups()
        assert len(left) == len(right) == digits
        assert symbol in operations
        assert evaluate(f"{left} {symbol} {right}") == int(task["answer"])
    assert {PROMPT.fullmatch(t["prompt"])[2] for t in tasks} == set(operations)  # type: ignore[index]


@pytest.mark.parametrize(("digits", "operations"), [(0, "+"), (2, "/"), (2, "")])
def test_bad_arguments(digits: int, operations: str) -> None:
    with pytest.raises(ValueError):
        arithmetic_tasks(1, seed=0, digits=digits, operations=operations)
