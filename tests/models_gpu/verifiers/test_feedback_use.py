"""Feedback use: valid moves and moves consistent with the feedback so far, on the real
verifiers' verdicts."""

from __future__ import annotations

import random

import pytest

from models_gpu.generators.families import code_guess, maze, task_spec
from models_gpu.training.miniature import task as guess_task
from models_gpu.types import MoveCheck, TaskSpec, Verdict
from models_gpu.verifiers import verify
from models_gpu.verifiers.feedback_use import check_move


def _guess_task(hidden: int) -> TaskSpec:
    """Guess a number between 1 and 8, as the miniature words it."""
    return guess_task(1, hidden, 1)


def _checks(task: TaskSpec, replies: list[str | None]) -> list[MoveCheck | None]:
    """Each reply's check, as the engine makes them (None for a turn it does not judge)."""
    checks: list[MoveCheck | None] = []
    earlier: list[Verdict] = []
    for reply in replies:
        verdict = None if reply is None else verify(task, reply)
        checks.append(None if verdict is None else check_move(task, verdict, earlier))
        earlier += [verdict] if verdict is not None else []
    return checks


def test_guess_the_number_moves_inside_the_interval_the_feedback_left_are_consistent() -> None:
    task = _guess_task(5)
    checks = _checks(
        task,
        [
            "The answer is 7.",  # too high: 1..6 left
            "The answer is 2.",  # inside: too low, 3..6 left
            "The answer is 7.",  # repeats a wrong guess: outside
            "The answer is 9.",  # outside the stated range: not valid
            None,  # a turn the verifier did not judge (a question)
            "The answer is 4.",  # inside 3..6
        ],
    )
    assert checks == [
        MoveCheck(True),
        MoveCheck(True, True, 6 / 8),
        MoveCheck(True, False, 4 / 8),
        MoveCheck(False, False, 4 / 8),
        None,
        MoveCheck(True, True, 4 / 8),
    ]


def test_a_reply_with_no_number_or_a_fraction_is_not_a_valid_guess() -> None:
    task = _guess_task(5)
    checks = _checks(task, ["I don't know.", "The answer is 5/2.", "The answer is 5."])
    assert [c.valid for c in checks if c] == [False, False, True]
    # The fraction was still judged "too low", which the next move must respect.
    assert checks[2] == MoveCheck(True, True, 6 / 8)
    assert _checks(task, ["I don't know.", "The answer is 1."])[1] == MoveCheck(True, True, 1.0)


def test_arithmetic_has_no_range_so_no_chance_level() -> None:
    task = TaskSpec(1, "What is 40 + 2?", {"answer": "42"}, "numeric", domain="arithmetic")
    checks = _checks(task, ["The answer is 50.", "The answer is 30.", "The answer is 55."])
    assert checks == [MoveCheck(True), MoveCheck(True, True, None), MoveCheck(True, False, None)]


def test_code_guess_consistency_replays_every_earlier_score() -> None:
    generated = code_guess(random.Random(0), {"length": 3, "allow_repeats": False})
    task = task_spec(generated)
    code = generated["reference"]["answer"]
    wrong = next(c for c in ("012", "345", "678", "901") if c != code and len(set(c)) == 3)
    agreeing = code  # the code itself always agrees with every score it gave
    checks = _checks(task, [f"The answer is {wrong}.", f"The answer is {agreeing}."])
    assert checks[0] == MoveCheck(True)
    assert checks[1] is not None and checks[1].valid and checks[1].consistent
    assert checks[1].chance is not None and 0 < checks[1].chance < 1
    # Repeating the wrong guess is inconsistent (it scored short of the full code).
    again = _checks(task, [f"The answer is {wrong}.", f"The answer is {wrong}."])
    assert again[1] == MoveCheck(True, False, checks[1].chance)


def test_code_guess_with_a_repeated_digit_is_invalid_when_digits_differ() -> None:
    task = task_spec(code_guess(random.Random(0), {"length": 3, "allow_repeats": False}))
    assert _checks(task, ["The answer is 112."]) == [MoveCheck(False)]


def test_maze_a_step_the_feedback_showed_blocked_is_inconsistent() -> None:
    grid = ["S#G", "...", "..."]
    task = TaskSpec(1, "maze", {"grid": grid, "answer": "D R R U"}, "maze", domain="maze")
    checks = _checks(
        task,
        ["The answer is R.", "The answer is R R.", "The answer is D R R U.", "nothing here"],
    )
    assert checks == [
        MoveCheck(True),
        MoveCheck(True, False),  # walks into the wall it was told about
        MoveCheck(True, True),
        MoveCheck(False, False),
    ]


def test_other_tasks_are_not_checked() -> None:
    task = TaskSpec(1, "Say hi", {"answer": "hi"}, "exact")
    assert _checks(task, ["The answer is hi.", "The answer is no."]) == [None, None]


@pytest.mark.parametrize("hidden", [1, 8])
def test_a_random_valid_guesser_is_consistent_about_as_often_as_the_chance_level(
    hidden: int,
) -> None:
    """The chance figure is what uniform guessing inside the range scores, by construction."""
    task = _guess_task(hidden)
    rng = random.Random(hidden)
    consistent = chance = later = 0.0
    for _ in range(400):
        replies = [f"The answer is {rng.randint(1, 8)}." for _ in range(4)]
        for check in _checks(task, replies)[1:]:
            assert check is not None
            later += 1
            consistent += bool(check.consistent)
            chance += check.chance or 0.0
    assert abs(consistent / later - chance / later) < 0.05


def test_a_maze_task_as_generated_is_checkable() -> None:
    task = task_spec(maze(random.Random(3), {"rows": 4, "cols": 4, "wall_density": 0.2}))
    answer = task.reference["answer"]
    assert _checks(task, [f"The answer is {answer}."]) == [MoveCheck(True)]
