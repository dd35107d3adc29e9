"""Task generator families and their knobs (``models_gpu.generators`` makes the tasks).

The generation form is built from ``FAMILIES``; ``generator_settings`` is the one check of a
family's knobs, used by the form and by the generator.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from models_gpu.spec.settings import Setting, SettingsError, read_settings

MAX_GENERATED_TASKS = 100_000

# Phrases of the families' prompts that a checker reads back (verifiers.feedback_use).
GUESS_RANGE = "I am thinking of a whole number between {low} and {high} inclusive."
_GUESS_RANGE_PATTERN = re.compile(
    re.escape(GUESS_RANGE).replace(r"\{low\}", r"(-?\d+)").replace(r"\{high\}", r"(-?\d+)")
)
CODE_NO_REPEATS = "All digits are different."


def stated_range(prompt: str) -> tuple[int, int] | None:
    """The ``(low, high)`` a guess-the-number prompt states, or None for another prompt."""
    match = _GUESS_RANGE_PATTERN.search(prompt)
    return (int(match[1]), int(match[2])) if match else None


@dataclass(frozen=True)
class Family:
    help: str
    difficulty: str  # what a generated task's ``difficulty`` number measures
    knobs: tuple[Setting, ...]


FAMILIES: Mapping[str, Family] = {
    "arithmetic": Family(
        help="One binary operation on two random numbers; numeric verifier.",
        difficulty="digits per operand",
        knobs=(
            Setting("digits", "int", "Digits per operand.", 2, low=1, high=12),
            Setting("operations", "str", "Operations to draw from, any of '+-*'.", "+-*",
                    pattern=r"[+*-]{1,3}", pattern_help="one to three of + - *"),
        ),
    ),
    "guess_number": Family(
        help="Guess a hidden integer with higher/lower feedback; numeric verifier. "
        "Single-turn accuracy is about 1/(high-low+1).",
        difficulty="log2 of the range size (turns binary search needs)",
        knobs=(
            Setting("low", "int", "Smallest possible hidden number.", 1, low=-1_000_000,
                    high=1_000_000),
            Setting("high", "int", "Largest possible hidden number (more than low).", 100,
                    low=-1_000_000, high=1_000_000),
        ),
    ),
    "maze": Family(
        help="Find a path from S to G in a text grid; maze verifier. Always solvable.",
        difficulty="length of the shortest path",
        knobs=(
            Setting("rows", "int", "Grid height.", 6, low=3, high=30),
            Setting("cols", "int", "Grid width.", 6, low=3, high=30),
            Setting("wall_density", "float",
                    "Chance that a cell off the guaranteed corridor is a wall.", 0.3, low=0.0,
                    high=0.7),
        ),
    ),
    "code_guess": Family(
        help="Mastermind: guess a hidden digit code, told digits right in place and "
        "misplaced; code_guess verifier. Single-turn accuracy is about 1/search space.",
        difficulty="log2 of the number of possible codes",
        knobs=(
            Setting("length", "int", "Digits in the code.", 4, low=2, high=8),
            Setting("allow_repeats", "bool", "Whether a digit may occur more than once.",
                    False),
        ),
    ),
}  # fmt: skip


def generator_settings(family: str, knobs: Mapping[str, Any]) -> dict[str, Any]:
    """Every knob of ``family``, given or default; ValueError naming each problem."""
    if family not in FAMILIES:
        raise ValueError(f"unknown task family {family!r}; known: {', '.join(FAMILIES)}")
    settings = read_settings(knobs, FAMILIES[family].knobs, owner=f"{family} knobs", noun="knob")
    if family == "guess_number" and settings["high"] <= settings["low"]:
        raise SettingsError(f"{family} knobs", ["high must be more than low"])
    return settings
