from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from models_gpu.backends import load_generator
from models_gpu.backends.arithmetic_student import DONT_KNOW, ArithmeticStudent, solve
from models_gpu.spec.run import RoleSpec
from models_gpu.types import GenerationRequest, Message
from models_gpu.verifiers.extraction import extract_number

REPO_ROOT = Path(__file__).resolve().parents[3]
TASK = "What is 347 + 218?"  # 565


def conversation(*texts: str, seed: int = 0) -> GenerationRequest:
    """Alternating user/assistant messages, starting with the task."""
    messages = tuple(
        Message("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(texts)
    )
    return GenerationRequest(messages=messages, seed=seed)


def answer_of(text: str) -> int:
    number = extract_number(text)
    assert number is not None, text
    return int(number)


@pytest.mark.parametrize(
    ("task", "value"),
    [
        ("What is 347 + 218?", Fraction(565)),
        ("Compute 12 * (3 + 4).", Fraction(84)),
        ("What is (2+3)*4?", Fraction(20)),
        ("What is -5 + 3?", Fraction(-2)),
        ("Round 2: what is 3 + 4?", Fraction(7)),
        ("What is 7 / 2?", Fraction(7, 2)),
        ("Tell me a joke.", None),
        ("What is 2 ** 10?", None),
    ],
)
def test_solve(task: str, value: Fraction | None) -> None:
    assert solve(task) == value


def test_answers_in_the_expected_form() -> None:
    always_right = ArithmeticStudent(first_try_accuracy=1.0)
    assert always_right.reply(conversation(TASK)) == "The answer is 565."
    assert always_right.reply(conversation("What is 7 / 2?")) == "The answer is 7/2."


def test_says_it_does_not_know_without_arithmetic() -> None:
    student = ArithmeticStudent(first_try_accuracy=1.0)
    assert student.reply(conversation("What is 2 ** 10?")) == DONT_KNOW
    system_only = GenerationRequest(messages=(Message("system", "Be brief."),), seed=0)
    assert student.reply(system_only) == DONT_KNOW


def test_always_wrong_student_is_never_right() -> None:
    never_right = ArithmeticStudent(first_try_accuracy=0.0, feedback_gain=0.0)
    answers = {answer_of(never_right.reply(conversation(TASK, seed=seed))) for seed in range(300)}
    assert 565 not in answers
    assert len(answers) > 10


def test_same_seed_same_text_and_seeds_differ_across_a_batch() -> None:
    student = ArithmeticStudent()
    first = [student.reply(conversation(TASK, seed=seed)) for seed in range(50)]
    again = [student.reply(conversation(TASK, seed=seed)) for seed in range(50)]
    assert first == again
    assert len(set(first)) > 5


def test_deterministic_across_processes() -> None:
    """Seeding must not go through hash(), which differs between processes."""
    script = (
        "from models_gpu.backends.arithmetic_student import ArithmeticStudent;"
        "from models_gpu.types import GenerationRequest, Message;"
        "print([ArithmeticStudent().reply(GenerationRequest("
        "(Message('user', 'What is 347 + 218?'),), seed=s)) for s in range(20)])"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        ).stdout
        for hash_seed in ("1", "2")
    }
    assert len(outputs) == 1


def test_accuracy_follows_the_configured_rates() -> None:
    student = ArithmeticStudent(first_try_accuracy=0.35, feedback_gain=0.45)
    seeds = range(2000)
    first_try = [student.reply(conversation(TASK, seed=s)) for s in seeds]
    after_feedback = [
        student.reply(conversation(TASK, "The answer is 1.", "Not quite.", seed=s)) for s in seeds
    ]
    first_rate = sum(text == "The answer is 565." for text in first_try) / len(seeds)
    second_rate = sum(text == "The answer is 565." for text in after_feedback) / len(seeds)
    assert first_rate == pytest.approx(0.35, abs=0.04)
    assert second_rate == pytest.approx(1 - 0.65 * 0.55, abs=0.04)


@pytest.mark.parametrize(
    ("previous", "feedback", "expected_side"),
    [
        (600, "Not quite: 600 is too high.", "below"),
        (566, "Not quite: 566 is too high.", "below"),  # no wrong integer between 566 and 565
        (100, "Not quite: 100 is too low.", "above"),
        (564, "Your answer is too low.", "above"),
        (500, "Not quite: your answer is TOO HIGH.", "below"),  # feedback that points away
    ],
)
def test_wrong_answers_move_the_way_feedback_says(
    previous: int, feedback: str, expected_side: str
) -> None:
    never_right = ArithmeticStudent(first_try_accuracy=0.0, feedback_gain=0.0)
    for seed in range(200):
        request = conversation(TASK, f"The answer is {previous}.", feedback, seed=seed)
        answer = answer_of(never_right.reply(request))
        assert answer != 565
        assert answer < previous if expected_side == "below" else answer > previous


def test_params_are_checked_when_the_policy_loads() -> None:
    def load(params: dict[str, float]) -> object:
        return load_generator(RoleSpec("scripted", "arithmetic-student", params))

    assert load({"feedback_gain": 0.9}).policy.__self__.feedback_gain == 0.9  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="first_try_acuracy"):
        load({"first_try_acuracy": 0.5})
    with pytest.raises(ValueError, match="first_try_accuracy must be at least 0 and at most 1"):
        load({"first_try_accuracy": 1.5})
