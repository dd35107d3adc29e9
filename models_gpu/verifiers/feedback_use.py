"""Feedback use: whether each of a student's moves was valid, and whether a later one agreed with
everything the feedback had told it so far.

Accuracy cannot tell a student who learned to *use* feedback from one who learned to *answer*:
a player who only learned to guess inside the range, at random, gains with every turn without
reading a word. These figures can. For every move (a student turn the verifier judged) of a task
whose feedback can be checked:

- **valid**: the move is one the game allows (a number; inside the stated range for guess the
  number; a code of the right length; a path through the maze's cells).
- **consistent** (moves after the first): the move agrees with the verifier's verdict on every
  earlier move of the dialogue, which is what the feedback reports. Guess the number and
  arithmetic: strictly inside the interval that "too high" / "too low" left (so repeating a wrong
  answer is not consistent). Code guess: every earlier guess would have scored the same against
  this move as it did against the code. Maze: no step the feedback showed to be blocked is taken
  again. An invalid move is not consistent.
- **chance**: the share of valid moves that would have been consistent there, where it can be
  counted (guess the number with a stated range; code guess up to ``MAX_CODES`` codes): what a
  player who moves validly but at random would score.

Consistency is judged against the verifier's verdicts (what the teacher saw), so it measures the
information the feedback carried, whatever words the teacher chose.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from fractions import Fraction

from models_gpu.spec.generators import CODE_NO_REPEATS, stated_range
from models_gpu.spec.reports import MoveCounts
from models_gpu.types import MoveCheck, TaskSpec, TurnRecord, Verdict
from models_gpu.verifiers.code_guess import score_guess
from models_gpu.verifiers.extraction import find_numbers, parse_number
from models_gpu.verifiers.maze import find, parse_grid, parse_path

# A larger code space is not enumerated for the chance level: 4 digits (up to 10,000 codes)
# cost 20-45 ms a move after six guesses; 5 digits would cost ten times as much.
MAX_CODES = 10_000
_BLOCKED = ("not_adjacent", "out_of_bounds", "wall")


def check_move(task: TaskSpec, verdict: Verdict, earlier: Sequence[Verdict]) -> MoveCheck | None:
    """The check of a move judged ``verdict``, after the dialogue's ``earlier`` judged moves (in
    order); None for a task whose verifier's feedback cannot be checked move by move."""
    game = _GAMES.get(task.verifier_kind)
    return game(task).check(verdict, earlier) if game is not None else None


class _Numbers:
    """Numeric answers: arithmetic, and guess the number (whose prompt states a range)."""

    def __init__(self, task: TaskSpec) -> None:
        self.range = stated_range(task.prompt) if task.domain == "guess_number" else None

    def check(self, verdict: Verdict, earlier: Sequence[Verdict]) -> MoveCheck:
        value = self._value(verdict)
        valid = value is not None and self._allowed(value)
        if not earlier:
            return MoveCheck(valid)
        low, high = self._interval(earlier)
        consistent = valid and value is not None and _inside(value, low, high)
        return MoveCheck(valid, consistent, self._chance(low, high))

    def _allowed(self, value: Fraction) -> bool:
        """Any number answers arithmetic; a guess is a whole number inside the stated range."""
        if self.range is None:
            return True
        return value.denominator == 1 and self.range[0] <= value <= self.range[1]

    @staticmethod
    def _value(verdict: Verdict) -> Fraction | None:
        if verdict.details.get("reason") not in ("correct", "wrong_value"):
            return None
        numbers = find_numbers(verdict.extracted or "")
        return parse_number(numbers[-1]) if numbers else None

    def _interval(self, earlier: Sequence[Verdict]) -> tuple[Fraction | None, Fraction | None]:
        """The open interval the feedback left: above every "too low", below every "too high"."""
        low: Fraction | None = None
        high: Fraction | None = None
        for verdict in earlier:
            value = self._value(verdict)
            direction = verdict.details.get("direction")
            if value is None:
                continue
            if direction == "too_low" and (low is None or value > low):
                low = value
            elif direction == "too_high" and (high is None or value < high):
                high = value
        return low, high

    def _chance(self, low: Fraction | None, high: Fraction | None) -> float | None:
        if self.range is None:
            return None
        first, last = self.range
        left = sum(_inside(Fraction(n), low, high) for n in range(first, last + 1))
        return left / (last - first + 1)


def _inside(value: Fraction, low: Fraction | None, high: Fraction | None) -> bool:
    return (low is None or value > low) and (high is None or value < high)


class _Codes:
    """Code guess: a move is a code of the right length; consistent when every earlier guess
    scores against it as it scored against the hidden code."""

    def __init__(self, task: TaskSpec) -> None:
        self.length = len(str(task.reference.get("answer", "")).strip())
        self.distinct = CODE_NO_REPEATS in task.prompt

    def check(self, verdict: Verdict, earlier: Sequence[Verdict]) -> MoveCheck:
        guess = verdict.extracted if verdict.details.get("reason") != "no_code_found" else None
        valid = guess is not None and self._allowed(guess)
        if not earlier:
            return MoveCheck(valid)
        scored = [
            (str(v.extracted), (v.details["in_place"], v.details["misplaced"]))
            for v in earlier
            if v.details.get("in_place") is not None
        ]
        consistent = valid and guess is not None and _agrees(guess, scored)
        return MoveCheck(valid, consistent, self._chance(scored))

    def _allowed(self, guess: str) -> bool:
        digits_ok = len(guess) == self.length and guess.isdigit()
        return digits_ok and (not self.distinct or len(set(guess)) == len(guess))

    def _chance(self, scored: Sequence[tuple[str, tuple[int, int]]]) -> float | None:
        codes = (
            itertools.permutations("0123456789", self.length)
            if self.distinct
            else itertools.product("0123456789", repeat=self.length)
        )
        space = math.perm(10, self.length) if self.distinct else 10**self.length
        if space > MAX_CODES:
            return None
        agreeing = sum(_agrees("".join(code), scored) for code in codes)
        return agreeing / space


def _agrees(candidate: str, scored: Sequence[tuple[str, tuple[int, int]]]) -> bool:
    return all(score_guess(guess, candidate) == score for guess, score in scored)


class _Maze:
    """Maze: a move is a path of cells from the start; consistent when it takes no step that an
    earlier verdict showed to be blocked (a wall, the grid's edge, a jump)."""

    def __init__(self, task: TaskSpec) -> None:
        self.grid = parse_grid(task)
        self.start = find(self.grid, "S")

    def check(self, verdict: Verdict, earlier: Sequence[Verdict]) -> MoveCheck:
        path = self._path(verdict)
        valid = path is not None
        if not earlier:
            return MoveCheck(valid)
        blocked = {step for v in earlier if (step := self._blocked_step(v)) is not None}
        steps = set(itertools.pairwise(path)) if path is not None else set()
        return MoveCheck(valid, valid and not (steps & blocked))

    def _path(self, verdict: Verdict) -> list[tuple[int, int]] | None:
        if verdict.details.get("reason") == "unparseable" or verdict.extracted is None:
            return None
        return parse_path(verdict.extracted, self.start)

    def _blocked_step(self, verdict: Verdict) -> tuple[tuple[int, int], tuple[int, int]] | None:
        step = verdict.details.get("step")
        path = self._path(verdict)
        if verdict.details.get("reason") not in _BLOCKED or path is None or not step:
            return None
        return path[step - 1], path[step]


_GAMES: dict[str, type[_Numbers | _Codes | _Maze]] = {
    "numeric": _Numbers, "code_guess": _Codes, "maze": _Maze,
}  # fmt: skip


def move_counts(turns: Iterable[TurnRecord]) -> tuple[MoveCounts, dict[int, MoveCounts]]:
    """Feedback use over ``turns`` (of any number of dialogues): in all, and by turn round."""
    total = MoveCounts()
    by_turn: dict[int, MoveCounts] = {}
    for turn in turns:
        if turn.move is not None:
            move = MoveCounts.of_move(turn.move.valid, turn.move.consistent, turn.move.chance)
            total = total.plus(move)
            by_turn[turn.round] = by_turn.get(turn.round, MoveCounts()).plus(move)
    return total, dict(sorted(by_turn.items()))
