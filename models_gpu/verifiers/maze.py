"""``maze``: the response's path leads from S to G on ``reference["grid"]`` without hitting walls.

The grid is a list of equal-length strings of ``S`` (start), ``G`` (goal), ``#`` (wall) and
``.`` (open). A path is moves ("R R D D L", "RRDDL", "right, down", "U/D/L/R", also N/S/E/W) or
coordinates "(row, col)" from the start, zero-based. The details say where and why a path went
wrong, never a correct path.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from models_gpu.types import TaskSpec, Verdict
from models_gpu.verifiers.extraction import extract_answer
from models_gpu.verifiers.settings import verifier_settings

Cell = tuple[int, int]
MOVES: Mapping[str, Cell] = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
_WORDS = {
    "UP": "U", "DOWN": "D", "LEFT": "L", "RIGHT": "R",
    "NORTH": "U", "SOUTH": "D", "WEST": "L", "EAST": "R",
    "N": "U", "S": "D", "W": "L", "E": "R", "U": "U", "D": "D", "L": "L", "R": "R",
}  # fmt: skip
_COORDINATE = re.compile(r"\(\s*(-?\d+)\s*,\s*(-?\d+)\s*\)")
_MOVE_RUN = re.compile(r"^[UDLR]+$")


def verify_maze(task: TaskSpec, response: str) -> Verdict:
    verifier_settings(task)
    grid = parse_grid(task)
    extracted = extract_answer(response)
    path = None if extracted is None else parse_path(extracted, find(grid, "S"))
    if path is None:  # the final answer line may say "Path:" while the moves sit above it
        path = parse_path(response, find(grid, "S"))
    if path is None:
        return Verdict(False, 0.0, extracted, {"reason": "unparseable", "step": None})
    reason, step, position = walk(grid, path)
    correct = reason == "correct"
    details: dict[str, Any] = {"reason": reason, "step": step, "steps_taken": len(path) - 1}
    details["position"] = list(position)
    details["distance_to_goal"] = _manhattan(position, find(grid, "G"))
    return Verdict(correct, float(correct), extracted, details)


def parse_grid(task: TaskSpec) -> list[str]:
    grid = task.reference.get("grid")
    if (
        not isinstance(grid, list | tuple)
        or not grid
        or not all(isinstance(row, str) and len(row) == len(grid[0]) for row in grid)
    ):
        raise ValueError(f"task {task.task_id}: reference['grid'] must be equal-length strings")
    rows = list(grid)
    if sum(row.count("S") for row in rows) != 1 or sum(row.count("G") for row in rows) != 1:
        raise ValueError(f"task {task.task_id}: the grid needs exactly one S and one G")
    return rows


def find(grid: Sequence[str], mark: str) -> Cell:
    for row_index, row in enumerate(grid):
        if mark in row:
            return row_index, row.index(mark)
    raise ValueError(f"no {mark!r} in the grid")


def parse_path(text: str, start: Cell) -> list[Cell] | None:
    """The cells visited, start first; None when ``text`` holds no path."""
    coordinates = [(int(r), int(c)) for r, c in _COORDINATE.findall(text)]
    if len(coordinates) >= 2:
        return coordinates if coordinates[0] == start else [start, *coordinates]
    moves = _moves(text)
    if moves is None:
        return None
    path = [start]
    for move in moves:
        row, col = path[-1]
        delta_row, delta_col = MOVES[move]
        path.append((row + delta_row, col + delta_col))
    return path


def _moves(text: str) -> list[str] | None:
    tokens = re.findall(r"[A-Za-z]+", text.upper())
    if not tokens:
        return None
    if len(tokens) == 1 and _MOVE_RUN.match(tokens[0]):
        return list(tokens[0])  # "RRDDL"
    # "R R D D L", "right, down": every word a move, else this is prose, not a path.
    moves = [_WORDS.get(token) for token in tokens]
    if all(move is not None for move in moves):
        return [move for move in moves if move is not None]
    # "Moves: RRDD" / "Path: R R D": drop one leading label word.
    if len(tokens) >= 2 and all(_WORDS.get(t) or _MOVE_RUN.match(t) for t in tokens[1:]):
        return _moves(" ".join(tokens[1:]))
    return None


def walk(grid: Sequence[str], path: Sequence[Cell]) -> tuple[str, int | None, Cell]:
    """(reason, 1-based step of the first bad move or None, last good cell)."""
    if path[0] != find(grid, "S"):
        return "does_not_start_at_start", 0, find(grid, "S")
    position = path[0]
    for step, cell in enumerate(path[1:], start=1):
        if _manhattan(position, cell) != 1:
            return "not_adjacent", step, position
        row, col = cell
        if not (0 <= row < len(grid) and 0 <= col < len(grid[0])):
            return "out_of_bounds", step, position
        if grid[row][col] == "#":
            return "wall", step, position
        position = cell
    if grid[position[0]][position[1]] != "G":
        return "does_not_reach_goal", None, position
    return "correct", None, position


def shortest_path(grid: Sequence[str]) -> list[str] | None:
    """Moves of one shortest path from S to G (breadth-first search), or None."""
    start, goal = find(grid, "S"), find(grid, "G")
    came_from: dict[Cell, tuple[Cell, str] | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            moves: list[str] = []
            while (link := came_from[cell]) is not None:
                cell, move = link
                moves.append(move)
            return moves[::-1]
        for move, (delta_row, delta_col) in MOVES.items():
            row, col = cell[0] + delta_row, cell[1] + delta_col
            inside = 0 <= row < len(grid) and 0 <= col < len(grid[0])
            if inside and grid[row][col] != "#" and (row, col) not in came_from:
                came_from[(row, col)] = (cell, move)
                queue.append((row, col))
    return None


def _manhattan(a: Cell, b: Cell) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])
