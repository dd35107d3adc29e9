"""``generate(family, n, seed=..., **knobs)``: validated, seeded batches of tasks.

``GENERATOR_KNOBS`` is plain JSON-ready data so the web side can build a form from a copy of it
without importing this package. Task i of a batch depends only on (family, seed, i, knobs), so a
larger ``n`` extends a batch instead of reshuffling it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from models_gpu.generators import families

Family = Callable[[random.Random, Mapping[str, Any]], dict[str, Any]]

GENERATORS: dict[str, Family] = {
    "arithmetic": families.arithmetic,
    "guess_number": families.guess_number,
    "maze": families.maze,
    "code_guess": families.code_guess,
}

GENERATOR_KNOBS: dict[str, dict[str, Any]] = {
    "arithmetic": {
        "help": "One binary operation on two random numbers; numeric verifier.",
        "difficulty": "digits per operand",
        "knobs": [
            {"name": "digits", "type": "int", "default": 2, "min": 1, "max": 12,
             "help": "Digits per operand."},
            {"name": "operations", "type": "str", "default": "+-*", "min": 1, "max": 3,
             "help": "Operations to draw from, any of '+-*' (min/max: length)."},
        ],
    },
    "guess_number": {
        "help": "Guess a hidden integer with higher/lower feedback; numeric verifier. "
        "Single-turn accuracy is about 1/(high-low+1).",
        "difficulty": "log2 of the range size (turns binary search needs)",
        "knobs": [
            {"name": "low", "type": "int", "default": 1, "min": -1_000_000, "max": 1_000_000,
             "help": "Smallest possible hidden number."},
            {"name": "high", "type": "int", "default": 100, "min": -1_000_000,
             "max": 1_000_000, "help": "Largest possible hidden number (more than low)."},
        ],
    },
    "maze": {
        "help": "Find a path from S to G in a text grid; maze verifier. Always solvable.",
        "difficulty": "length of the shortest path",
        "knobs": [
            {"name": "rows", "type": "int", "default": 6, "min": 3, "max": 30,
             "help": "Grid height."},
            {"name": "cols", "type": "int", "default": 6, "min": 3, "max": 30,
             "help": "Grid width."},
            {"name": "wall_density", "type": "float", "default": 0.3, "min": 0.0, "max": 0.7,
             "help": "Chance that a cell off the guaranteed corridor is a wall."},
        ],
    },
    "code_guess": {
        "help": "Mastermind: guess a hidden digit code, told digits right in place and "
        "misplaced; code_guess verifier. Single-turn accuracy is about 1/search space.",
        "difficulty": "log2 of the number of possible codes",
        "knobs": [
            {"name": "length", "type": "int", "default": 4, "min": 2, "max": 8,
             "help": "Digits in the code."},
            {"name": "allow_repeats", "type": "bool", "default": False, "min": None,
             "max": None, "help": "Whether a digit may occur more than once."},
        ],
    },
}  # fmt: skip

_TYPES: dict[str, tuple[type, ...]] = {"int": (int,), "float": (int, float), "str": (str,)}
MAX_TASKS = 100_000


def generate(family: str, n: int, *, seed: int, **knobs: Any) -> list[dict[str, Any]]:
    """``n`` tasks of ``family``; ValueError naming the problem for any bad argument."""
    if family not in GENERATORS:
        raise ValueError(f"unknown task family {family!r}; known: {', '.join(GENERATORS)}")
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_TASKS:
        raise ValueError(f"n must be an integer in [0, {MAX_TASKS}]")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError("seed must be an integer")
    settings = validate_knobs(family, knobs)
    make = GENERATORS[family]
    tasks = []
    for index in range(n):
        # A string seed is hashed with SHA-512 by random: stable across runs and Python versions.
        task = make(random.Random(f"{family}:{seed}:{index}"), settings)
        task["metadata"] = {**task["metadata"], "family": family, "seed": seed, "index": index,
                            "knobs": settings}  # fmt: skip
        tasks.append(task)
    return tasks


def validate_knobs(family: str, knobs: Mapping[str, Any]) -> dict[str, Any]:
    specs = {spec["name"]: spec for spec in GENERATOR_KNOBS[family]["knobs"]}
    unknown = sorted(set(knobs) - set(specs))
    if unknown:
        raise ValueError(f"unknown {family!r} knob(s) {unknown}; known: {sorted(specs)}")
    settings = {name: knobs.get(name, spec["default"]) for name, spec in specs.items()}
    for name, value in settings.items():
        _check(family, specs[name], value)
    _check_family(family, settings)
    return settings


def _check(family: str, spec: Mapping[str, Any], value: Any) -> None:
    name, kind = spec["name"], spec["type"]
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{family} knob {name!r} must be a bool, not {value!r}")
        return
    if isinstance(value, bool) or not isinstance(value, _TYPES[kind]):
        raise ValueError(f"{family} knob {name!r} must be of type {kind}, not {value!r}")
    size = len(value) if isinstance(value, str) else value
    if not spec["min"] <= size <= spec["max"]:
        what = "length" if kind == "str" else "value"
        raise ValueError(
            f"{family} knob {name!r}: {what} {size} is outside [{spec['min']}, {spec['max']}]"
        )


def _check_family(family: str, settings: Mapping[str, Any]) -> None:
    if family == "arithmetic" and (set(settings["operations"]) - set("+-*")):
        raise ValueError("arithmetic knob 'operations' must be drawn from '+-*'")
    if family == "guess_number" and settings["high"] <= settings["low"]:
        raise ValueError("guess_number knob 'high' must be more than 'low'")
