"""Seeded arithmetic tasks: ``{"prompt": "What is 47 + 38?", "answer": "85"}``."""

from __future__ import annotations

import operator
import random

_OPERATIONS = {"+": operator.add, "-": operator.sub, "*": operator.mul}


def arithmetic_tasks(
    n: int, *, seed: int, digits: int = 2, operations: str = "+-*"
) -> list[dict[str, str]]:
    unknown = set(operations) - set(_OPERATIONS)
    if unknown or not operations:
        raise ValueError(f"operations must be drawn from {''.join(_OPERATIONS)!r}")
    if digits < 1:
        raise ValueError("digits must be at least 1")
    rng = random.Random(seed)
    low, high = 10 ** (digits - 1), 10**digits - 1
    tasks = []
    for _ in range(n):
        left, right, symbol = rng.randint(low, high), rng.randint(low, high), rng.choice(operations)
        answer = _OPERATIONS[symbol](left, right)
        tasks.append({"prompt": f"What is {left} {symbol} {right}?", "answer": str(answer)})
    return tasks
