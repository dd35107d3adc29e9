"""Comparing two models (two runs, two lines of seeds, parents and their forks): one method,
chosen by what the data allows, and named wherever the result is shown.

- **Paired** (whenever the two share tasks): per shared task, the share of its dialogues solved
  by turn k in each (samples and seeds pooled); the gap is the mean of the per-task differences,
  with a 95% paired bootstrap interval (tasks resampled with replacement) and the p-value of the
  paired sign-flip permutation test of no difference (McNemar's exact test, by simulation, with
  one dialogue a task). Pairing removes the variation between tasks, most of the variation.
- **Unpaired** (only when they share no task): the difference of the two pooled proportions
  with Newcombe's interval, and no test. It treats dialogues as independent, which dialogues of
  one task are not: a caveat the pages state.
- **No information**: when no shared task scored differently in the two (every paired
  difference is zero: both at 0%, both at 100%, or the same tasks solved), or, unpaired, when
  both are at 0% or both at 100%, the comparison cannot tell the two apart in either
  direction: it says so instead of showing an interval. When every shared task differs by the
  same non-zero amount (one shared task, say) there is no spread to draw an interval from:
  the gap and its test are shown without one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from models_gpu.spec.reports import solved_by_turn
from webapp.metrics.stats import (
    BOOTSTRAP_RESAMPLES,
    SEED,
    SIGN_FLIPS,
    bootstrap_means,
    newcombe_difference,
    percentile_interval,
    sign_flip_p_values,
    wilson_interval,
)


class Method(StrEnum):
    PAIRED = "paired"
    UNPAIRED = "unpaired"

    @property
    def description(self) -> str:
        if self is Method.PAIRED:
            return "paired over shared tasks: 95% bootstrap interval, sign-flip test"
        return "unpaired (no shared tasks): Newcombe 95% interval over dialogues, no test"


NO_INFORMATION = "no information"  # how every such note starts


def no_information(unit: str) -> str:
    return f"{NO_INFORMATION}: no shared {unit} scored differently in the two"


def no_spread(unit: str) -> str:
    return f"no interval: every shared {unit} differs by the same amount"


NO_INFORMATION_UNPAIRED = f"{NO_INFORMATION}: both are at the same bound (0% or 100%)"


@dataclass(frozen=True)
class Gap:
    """``other - baseline`` at turn ``turn``: the value, its 95% interval (None when there is
    none, ``note`` says why), the test's p-value (paired only), and what it is over."""

    turn: int
    value: float
    low: float | None
    high: float | None
    p_value: float | None
    method: Method
    tasks: int  # the rows paired (shared tasks, or fork pairs); unpaired: 0
    note: str = ""

    @property
    def informative(self) -> bool:
        """False when the data cannot tell the two apart (``note`` says why)."""
        return not self.note.startswith(NO_INFORMATION)

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def excludes_zero(self) -> bool:
        return self.has_interval and (self.low > 0 or self.high < 0)  # type: ignore[operator]

    # Percentage points, for templates.
    @property
    def points(self) -> float:
        return 100 * self.value

    @property
    def low_points(self) -> float | None:
        return None if self.low is None else 100 * self.low

    @property
    def high_points(self) -> float | None:
        return None if self.high is None else 100 * self.high

    @property
    def method_description(self) -> str:
        return self.method.description


def paired_gaps(
    baseline: np.ndarray,
    other: np.ndarray,
    *,
    unit: str = "task",
    resamples: int = BOOTSTRAP_RESAMPLES,
    flips: int = SIGN_FLIPS,
) -> list[Gap]:
    """``other - baseline`` per column (turn k = column + 1), both rows x columns arrays with
    the same rows in the same order: shared tasks, or another ``unit`` (a fork and its parent
    are a "pair"). Seeded: the same data, the same numbers."""
    if baseline.shape != other.shape:
        raise ValueError(f"need the same rows and turns, got {baseline.shape} and {other.shape}")
    rows, turns = baseline.shape
    if rows == 0:
        return []
    differences = other - baseline
    rng = np.random.default_rng(SEED)
    low, high = percentile_interval(bootstrap_means(differences, resamples, rng))
    p_values = sign_flip_p_values(differences, flips, rng)
    observed = differences.mean(axis=0)
    gaps = []
    for column in range(turns):
        spread = np.ptp(differences[:, column])
        if not np.any(differences[:, column]):
            gap = Gap(column + 1, 0.0, None, None, None, Method.PAIRED, rows, no_information(unit))
        elif spread == 0:
            value, p_value = float(observed[column]), float(p_values[column])
            gap = Gap(column + 1, value, None, None, p_value, Method.PAIRED, rows, no_spread(unit))
        else:
            gap = Gap(
                column + 1,
                float(observed[column]),
                # The mean of the sample is inside its bootstrap interval; rounding at the last
                # bits must not say otherwise.
                min(float(low[column]), float(observed[column])),
                max(float(high[column]), float(observed[column])),
                float(p_values[column]),
                Method.PAIRED,
                rows,
            )
        gaps.append(gap)
    return gaps


@dataclass(frozen=True)
class TaskOutcomes:
    """One task's dialogues in one run, or in one line of runs (its seeds pooled): how many, and
    how many were solved by turn k, for k = 1..T (cumulative, so non-decreasing)."""

    dialogues: int
    solved_by_turn: tuple[int, ...]

    def rates(self, turns: int) -> list[float]:
        """The share solved by turn k for k = 1..``turns``; past its own T a dialogue has ended,
        so it stays as it stood after its last turn."""
        counts = list(self.solved_by_turn) + [self.solved_by_turn[-1]] * (
            turns - len(self.solved_by_turn)
        )
        return [count / self.dialogues for count in counts[:turns]]

    def merged(self, other: TaskOutcomes) -> TaskOutcomes:
        """Both together (the same task in two runs of a line), on the longer horizon."""
        turns = max(len(self.solved_by_turn), len(other.solved_by_turn))
        mine, theirs = _carried(self.solved_by_turn, turns), _carried(other.solved_by_turn, turns)
        return TaskOutcomes(
            self.dialogues + other.dialogues,
            tuple(a + b for a, b in zip(mine, theirs, strict=True)),
        )


def _carried(counts: Sequence[int], turns: int) -> list[int]:
    return list(counts) + [counts[-1]] * (turns - len(counts))


def outcomes_from_histogram(
    first_correct: Mapping[int | None, int], max_turns: int
) -> TaskOutcomes:
    """A task's outcomes from how many of its dialogues were first solved at each turn (None:
    not solved); a turn past ``max_turns`` is not a solve."""
    return TaskOutcomes(sum(first_correct.values()), solved_by_turn(first_correct, max_turns))


def compare_outcomes(
    baseline: Mapping[str, TaskOutcomes], other: Mapping[str, TaskOutcomes], turns: int
) -> list[Gap]:
    """``other`` against ``baseline`` after each turn k = 1..``turns``: paired over the tasks
    they share, unpaired only when they share none (module docstring). Keys name tasks the
    same way on both sides (``task_key``)."""
    if not baseline or not other:
        return []
    shared = sorted(baseline.keys() & other.keys())
    if shared:
        return paired_gaps(
            np.array([baseline[key].rates(turns) for key in shared]),
            np.array([other[key].rates(turns) for key in shared]),
        )
    return unpaired_gaps(_pooled(baseline.values(), turns), _pooled(other.values(), turns))


def _pooled(outcomes: Iterable[TaskOutcomes], turns: int) -> list[tuple[int, int]]:
    """(solved by turn k, dialogues) over every task, k = 1..turns."""
    rows = list(outcomes)
    dialogues = sum(row.dialogues for row in rows)
    return [
        (sum(_carried(row.solved_by_turn, turns)[k] for row in rows), dialogues)
        for k in range(turns)
    ]


def unpaired_gaps(
    baseline: Sequence[tuple[int, int]], other: Sequence[tuple[int, int]]
) -> list[Gap]:
    """Per turn, (solved, dialogues) of each side: Newcombe's interval of the difference."""
    gaps = []
    for turn, ((a_solved, a_total), (b_solved, b_total)) in enumerate(
        zip(baseline, other, strict=True), start=1
    ):
        a, b = wilson_interval(a_solved, a_total), wilson_interval(b_solved, b_total)
        at_same_bound = (a_solved == 0 and b_solved == 0) or (
            a_solved == a_total and b_solved == b_total
        )
        if at_same_bound:
            gaps.append(
                Gap(turn, 0.0, None, None, None, Method.UNPAIRED, 0, NO_INFORMATION_UNPAIRED)
            )
            continue
        difference = newcombe_difference(a, b)
        gaps.append(
            Gap(turn, difference.value, difference.low, difference.high, None, Method.UNPAIRED, 0)
        )
    return gaps
