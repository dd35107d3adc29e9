"""Run metrics computed from stored dialogues (pure functions; the selectors feed them)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Proportion:
    successes: int
    total: int
    low: float
    high: float

    @property
    def rate(self) -> float:
        return self.successes / self.total if self.total else 0.0


def wilson_interval(successes: int, total: int, z: float = Z_95) -> Proportion:
    """Wilson score interval: well-behaved at 0%, 100% and small n, unlike the normal one."""
    if total == 0:
        return Proportion(0, 0, 0.0, 0.0)
    p = successes / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    margin = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return Proportion(successes, total, max(0.0, centre - margin), min(1.0, centre + margin))


@dataclass(frozen=True)
class TurnAccuracy:
    turn: int
    accuracy: Proportion


def cumulative_accuracy(
    *, first_correct_counts: Mapping[int, int], total: int, max_turns: int
) -> list[TurnAccuracy]:
    """Accuracy after turn k (solved by turn k) for k = 1..max_turns.

    ``first_correct_counts[k]`` is how many dialogues were first solved at turn k; ``total``
    counts every finished dialogue, solved or not.
    """
    curve = []
    solved = 0
    for turn in range(1, max_turns + 1):
        solved += first_correct_counts.get(turn, 0)
        curve.append(TurnAccuracy(turn, wilson_interval(solved, total)))
    return curve
