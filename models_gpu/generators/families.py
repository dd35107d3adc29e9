"""Task families: one function per family, ``(rng, knobs) -> task dict``.

A task dict is plain JSON-ready data: ``{"prompt", "reference", "verifier_kind",
"verifier_config", "domain", "difficulty", "metadata"}``. ``difficulty`` is a float whose
meaning each family documents (``models_gpu.spec.generators.FAMILIES[family].difficulty``).
"""

from __future__ import annotations

import math
import operator
import random
from collections.abc import Mapping
from typing import Any

from models_gpu.spec.generators import CODE_NO_REPEATS, GUESS_RANGE
from models_gpu.types import TaskSpec
from models_gpu.verifiers.maze import find, shortest_path

Task = dict[str, Any]
_OPERATIONS = {"+": operator.add, "-": operator.sub, "*": operator.mul}
ANSWER_FORMAT = "End your reply with 'The answer is N.'"


def task_spec(task: Mapping[str, Any], task_id: int = 0) -> TaskSpec:
    """A generated task as the engine takes it (its difficulty and metadata stay behind)."""
    return TaskSpec(
        task_id=task_id,
        prompt=task["prompt"],
        reference=task["reference"],
        verifier_kind=task["verifier_kind"],
        verifier_config=task["verifier_config"],
        domain=task["domain"],
    )


def arithmetic(rng: random.Random, knobs: Mapping[str, Any]) -> Task:
    digits, operations = int(knobs["digits"]), str(knobs["operations"])
    low, high = 10 ** (digits - 1), 10**digits - 1
    left, right, symbol = rng.randint(low, high), rng.randint(low, high), rng.choice(operations)
    answer = _OPERATIONS[symbol](left, right)
    return _task(
        prompt=f"What is {left} {symbol} {right}?",
        reference={"answer": str(answer)},
        verifier_kind="numeric",
        domain="arithmetic",
        difficulty=float(digits),
        metadata={"operation": symbol},
    )


def guess_number(rng: random.Random, knobs: Mapping[str, Any]) -> Task:
    low, high = int(knobs["low"]), int(knobs["high"])
    hidden = rng.randint(low, high)
    prompt = (
        GUESS_RANGE.format(low=low, high=high) + " Guess it. "
        "After each guess you will be told whether the hidden number is higher or lower. "
        + ANSWER_FORMAT
    )
    # A single guess is right with probability 1/range; binary search needs log2(range) turns.
    return _task(
        prompt=prompt,
        reference={"answer": str(hidden)},
        verifier_kind="numeric",
        domain="guess_number",
        difficulty=round(math.log2(high - low + 1), 3),
        metadata={"range_size": high - low + 1},
    )


def code_guess(rng: random.Random, knobs: Mapping[str, Any]) -> Task:
    length, repeats = int(knobs["length"]), bool(knobs["allow_repeats"])
    digits = "0123456789"
    code = (
        "".join(rng.choice(digits) for _ in range(length))
        if repeats
        else "".join(rng.sample(digits, length))
    )
    rule = "Digits may repeat." if repeats else CODE_NO_REPEATS
    prompt = (
        f"Guess my secret {length}-digit code (digits 0-9, leading zeros allowed). {rule} "
        "After each guess you will be told how many digits are right and in the right place, "
        "and how many are right but in the wrong place. End your reply with 'The answer is "
        f"{'D' * length}.' where {'D' * length} is your guess."
    )
    space = 10**length if repeats else math.perm(10, length)
    return _task(
        prompt=prompt,
        reference={"answer": code},
        verifier_kind="code_guess",
        domain="code_guess",
        difficulty=round(math.log2(space), 3),
        metadata={"search_space": space},
    )


def maze(rng: random.Random, knobs: Mapping[str, Any]) -> Task:
    rows, cols, density = int(knobs["rows"]), int(knobs["cols"]), float(knobs["wall_density"])
    grid = _solvable_grid(rng, rows, cols, density)
    moves = shortest_path(grid)
    assert moves is not None  # _solvable_grid keeps a carved path open
    picture = "\n".join(grid)
    prompt = (
        f"Find a path through this {rows}x{cols} maze from S to G. '#' is a wall, '.' is open; "
        "you may move up (U), down (D), left (L) or right (R) one cell at a time and may not "
        "leave the grid.\n\n"
        # Fenced so that markdown renderers keep the grid's lines and columns.
        f"```\n{picture}\n```\n\n"
        "End your reply with 'The answer is ' followed by your moves, e.g. 'The answer is R R D.'"
    )
    return _task(
        prompt=prompt,
        reference={"grid": grid, "answer": " ".join(moves)},
        verifier_kind="maze",
        domain="maze",
        difficulty=float(len(moves)),
        metadata={"start": list(find(grid, "S")), "goal": list(find(grid, "G"))},
    )


def _solvable_grid(rng: random.Random, rows: int, cols: int, density: float) -> list[str]:
    """Random walls, with a random monotone corridor from S to G kept open: always solvable."""
    cells = [(r, c) for r in range(rows) for c in range(cols)]
    start, goal = rng.sample(cells, 2)
    while abs(start[0] - goal[0]) + abs(start[1] - goal[1]) < (rows + cols) // 3:
        start, goal = rng.sample(cells, 2)  # not trivially close
    corridor = {start}
    row, col = start
    while (row, col) != goal:
        steps = []
        if row != goal[0]:
            steps.append((row + (1 if goal[0] > row else -1), col))
        if col != goal[1]:
            steps.append((row, col + (1 if goal[1] > col else -1)))
        row, col = rng.choice(steps)
        corridor.add((row, col))
    grid = [
        [("#" if rng.random() < density and (r, c) not in corridor else ".") for c in range(cols)]
        for r in range(rows)
    ]
    grid[start[0]][start[1]], grid[goal[0]][goal[1]] = "S", "G"
    return ["".join(row_cells) for row_cells in grid]


def _task(
    *,
    prompt: str,
    reference: dict[str, Any],
    verifier_kind: str,
    domain: str,
    difficulty: float,
    metadata: dict[str, Any],
    verifier_config: dict[str, Any] | None = None,
) -> Task:
    return {
        "prompt": prompt,
        "reference": reference,
        "verifier_kind": verifier_kind,
        "verifier_config": verifier_config or {},
        "domain": domain,
        "difficulty": difficulty,
        "metadata": metadata,
    }
