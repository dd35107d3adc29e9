from __future__ import annotations

from typing import Any

import pytest

from models_gpu.leak import LeakReference, judge_request, leak_reference, leaks, parse_judge_reply
from models_gpu.spec.templates import DEFAULT_TEMPLATES
from models_gpu.types import TaskSpec


def reference_of(answer: Any = "85", kind: str = "numeric", **task: Any) -> LeakReference:
    return leak_reference(
        TaskSpec(
            task_id=1,
            prompt=task.pop("prompt", "What is 47 + 38?"),
            reference=task.pop("reference", {"answer": answer}),
            verifier_kind=kind,
            **task,
        )
    )


@pytest.mark.parametrize(
    "text",
    [
        "It is 85.",
        "(85)",
        "the answer: 85!",
        "Close, it should be 85.0",
        "You want 85,",
        "It is 170/2, which you can simplify.",  # numeric match: the fraction equals 85
        "\\boxed{85}",
    ],
)
def test_numeric_answers_are_found(text: str) -> None:
    assert leaks(text, reference_of("85"))
    assert leaks(text, reference_of(85))
    assert leaks(text, reference_of(85.0))


@pytest.mark.parametrize(
    "text",
    [
        "Not 850.",
        "Try 0.85 of it.",
        "It is not 185 either.",
        "Your answer 84 is too low.",
        "Check the carry in the tens column.",
        "8 5",
    ],
)
def test_word_boundaries_keep_near_misses_clean(text: str) -> None:
    assert not leaks(text, reference_of("85"))


def test_numbers_match_in_any_form() -> None:
    assert leaks("Think of 0.75.", reference_of("3/4"))
    assert leaks("It is \\frac{3}{4} of the way.", reference_of(0.75))
    assert leaks("A total of 1,234 apples.", reference_of("1234"))
    assert leaks("Minus 12 is right: \u221212.", reference_of("-12"))
    assert not leaks("Add 12 more.", reference_of("-12"))


def test_text_answers_ignore_case_space_and_punctuation_but_not_word_edges() -> None:
    reference = reference_of("New  York City", "exact")
    assert leaks("it is new york city!", reference)
    assert leaks("The answer is 'New York, City'.", reference)
    assert not leaks("Think of York.", reference)
    paris = reference_of("Paris", "exact")
    assert leaks("PARIS.", paris)
    assert not leaks("The Parisian answer.", paris)


def test_math_expressions_keep_their_operators() -> None:
    reference = reference_of("(x+1)^2", "math")
    assert leaks("Write it as (x + 1)^2.", reference)
    assert not leaks("Set x = 1, then square 2.", reference)


def test_multiple_choice_letters() -> None:
    reference = reference_of("B", "multiple_choice")
    assert leaks("Pick B.", reference)
    assert leaks("It is (B)", reference)
    assert not leaks("Both answers look fine; be careful.", reference)
    assert not leaks("Not option C.", reference)
    a = reference_of("A", "multiple_choice")
    assert leaks("Choose A.", a)
    assert leaks("Option A is the one.", a)
    assert not leaks("A good start. Look again at the question.", a)
    i = reference_of("I", "multiple_choice")
    assert not leaks("I see what you did.", i) and leaks("Option I.", i)


def test_multiple_choice_choice_text() -> None:
    reference = reference_of(
        "B", "multiple_choice", verifier_config={"choices": ["A) Lyon", "B) Paris", "C) Nice"]}
    )
    assert leaks("The capital is paris.", reference)
    assert not leaks("Not Lyon.", reference)


def test_code_guess_digits_are_not_numbers() -> None:
    reference = reference_of("0482", "code_guess")
    assert leaks("Try 0482.", reference)
    assert not leaks("Try 482.", reference)


def test_code_solutions_leak_through_their_non_trivial_lines() -> None:
    solution = (
        "def add_all(values):\n"
        "    # sum every value\n"
        "    total = 0\n"
        "    for value in values:\n"
        "        total = total + value * 2\n"
        "    return total\n"
    )
    reference = reference_of(
        kind="code",
        prompt="Write it.\n```python\ndef add_all(values):\n```",
        reference={"tests": "assert add_all([1]) == 2", "solution": solution},
    )
    assert reference.code_lines == ("for value in values:", "total = total + value * 2")
    assert leaks("Try:\n  total   =  total + value * 2\nthen return.", reference)
    assert not leaks("Start with def add_all(values): and return total.", reference)
    assert not leaks("total = 0 is a fine start; # sum every value", reference)
    assert reference.shown == solution


def test_tasks_without_a_stated_answer_have_nothing_to_leak() -> None:
    maze = reference_of(kind="maze", reference={"grid": ["S.", ".G"]})
    assert maze.empty and maze.shown == ""
    assert not leaks("Go right then down.", maze)
    code_without_solution = reference_of(kind="code", reference={"tests": "assert True"})
    assert code_without_solution.empty


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [("yes", True), ("No.", False), ("**YES**", True), ("'no'", False), ("yes, it does", None),
     ("maybe", None), ("", None)],
)  # fmt: skip
def test_judge_replies_are_parsed_strictly(reply: str, verdict: bool | None) -> None:
    assert parse_judge_reply(reply) is verdict


def test_judge_request_shows_reference_and_message() -> None:
    request = judge_request(reference=reference_of("85"), text="Think about 80 + 5.", seed=9)
    assert request.seed == 9
    assert request.messages[0].content == DEFAULT_TEMPLATES["judge_leak"]
    assert "85" in request.messages[1].content and "80 + 5" in request.messages[1].content
