from __future__ import annotations

import re
from typing import Any

import pytest

from models_gpu.backends.feedback_teacher import feedback_teacher_reply, leaks_reference
from models_gpu.generators.arithmetic import arithmetic_tasks
from models_gpu.types import GenerationRequest, Message


def feedback(**private_context: Any) -> str:
    # The conversation is deliberately misleading: the teacher must write from its context alone.
    messages = (Message("assistant", "What is 1 + 1?"), Message("user", "The answer is 3."))
    return feedback_teacher_reply(
        GenerationRequest(messages=messages, seed=0, private_context=private_context)
    )


def numeric_details(reason: str, direction: str | None = None) -> dict[str, Any]:
    return {"reason": reason, "direction": direction, "relative_error": None}


def states_answer(text: str, answer: str) -> bool:
    """An independent, simple check: the answer appears as a number/word of its own."""
    return re.search(rf"(?<![\w.]){re.escape(answer)}(?![\w]|\.\d)", text, re.I) is not None


def test_too_high_quotes_the_attempt_and_the_direction() -> None:
    text = feedback(
        extracted="565",
        reference={"answer": "500"},
        verdict_details=numeric_details("wrong_value", "too_high"),
    )
    assert text == "Not quite: 565 is too high. Check each column again, carrying where needed."


@pytest.mark.parametrize(
    ("guess", "direction", "hint"),
    [
        ("70", "too_high", "The hidden number is lower."),
        ("12", "too_low", "The hidden number is higher."),
    ],
)
def test_a_guessing_game_is_told_higher_or_lower_not_to_carry(
    guess: str, direction: str, hint: str
) -> None:
    text = feedback(
        domain="guess_number",
        extracted=guess,
        reference={"answer": "37"},
        verdict_details=numeric_details("wrong_value", direction),
    )
    assert text == f"Not quite: {guess} is {direction.replace('_', ' ')}. {hint}"
    # Without the verifier's details, the reference alone gives the direction.
    assert feedback(domain="guess_number", extracted=guess, reference={"answer": "37"}) == text


def test_a_guessing_game_s_generic_feedback_also_says_higher_or_lower() -> None:
    """When quoting the guess would state the answer ("-37" holds "37"), the vaguer draft keeps
    the family's hint."""
    text = feedback(
        domain="guess_number",
        extracted="-37",
        reference={"answer": "37"},
        verdict_details=numeric_details("wrong_value", "too_low"),
    )
    assert text == "Not quite: your guess is too low. The hidden number is higher."


def test_too_low_quotes_only_the_judged_number() -> None:
    text = feedback(
        extracted="40 + 45 = 84",
        reference={"answer": "85"},
        verdict_details=numeric_details("wrong_value", "too_low"),
    )
    assert text.startswith("Not quite: 84 is too low.")


def test_no_answer_found_asks_for_the_answer_form() -> None:
    text = feedback(extracted=None, verdict_details=numeric_details("no_answer_found"))
    assert text == "I could not find an answer in your reply. End with 'The answer is N.'"


def test_not_a_number() -> None:
    text = feedback(extracted="I don't know", verdict_details=numeric_details("not_a_number"))
    assert text.startswith('Your answer "I don\'t know" is not a number.')


def test_reference_alone_still_gives_a_direction() -> None:
    text = feedback(extracted="70", reference={"answer": "85"})
    assert "70 is too low" in text


def test_neither_reference_nor_details_gives_generic_feedback() -> None:
    assert feedback(extracted="70") == 'Not quite: "70" is not the answer. ' + (
        "Re-read the question and try again."
    )


class TestGuard:
    def test_exact_mismatch_quoting_the_answer_is_replaced(self) -> None:
        text = feedback(
            extracted="Paris, France",
            reference={"answer": "paris"},
            verdict_details={"reason": "mismatch"},
        )
        assert text == "Not quite. Check your work and try again."

    def test_negated_answer_is_replaced_but_direction_kept(self) -> None:
        text = feedback(
            extracted="-85",
            reference={"answer": "85"},
            verdict_details=numeric_details("wrong_value", "too_low"),
        )
        assert text == "Not quite: your answer is too low. Check your work and try again."

    def test_answer_equal_as_a_number_is_replaced(self) -> None:
        text = feedback(
            extracted="1,234 or 1,235",
            reference={"answer": 1234},
            verdict_details={"reason": "mismatch"},
        )
        assert "1,234" not in text and "1234" not in text

    @pytest.mark.parametrize("answer", ["Not", "quite", "check", "try"])
    def test_answer_made_of_feedback_words_still_gets_safe_feedback(self, answer: str) -> None:
        text = feedback(extracted=None, reference={"answer": answer}, verdict_details={})
        assert text and not states_answer(text, answer)

    @pytest.mark.parametrize(
        ("text", "answer", "leaks"),
        [
            ("It is 5.", "5", True),
            ("It is 0.5.", "5", False),
            ("It is 15.", "5", False),
            ("It is 5.5.", "5", False),
            ("It is 1,234.", "1234", True),
            ("It is 3/4.", "0.75", True),
            ("It is 85.0.", "85", True),
            ("It is PARIS.", "paris", True),
            ("It is Parisian.", "paris", False),
            ("Anything.", "  ", False),
        ],
    )
    def test_leaks_reference(self, text: str, answer: str, leaks: bool) -> None:
        assert leaks_reference(text, answer) is leaks


def test_never_states_the_answer_over_many_tasks_and_attempts() -> None:
    """Property-style: for many tasks, any attempt (including ones that contain the answer)
    and any verdict shape, the feedback never states the reference answer."""
    tasks = [
        *arithmetic_tasks(150, seed=11, digits=1),
        *arithmetic_tasks(150, seed=12, digits=2),
        *arithmetic_tasks(100, seed=13, digits=3),
    ]
    for index, task in enumerate(tasks):
        answer = task["answer"]
        value = int(answer)
        attempts = [
            str(value + 1 + index % 5),
            str(value - 2),
            str(-value),
            f"{answer} or {value + 1}",
            f"{value:,}",
            f"{value}.0",
            "no idea",
            None,
        ]
        for attempt in attempts:
            for details in (
                numeric_details("wrong_value", "too_high"),
                numeric_details("wrong_value", "too_low"),
                numeric_details("not_a_number"),
                {"reason": "mismatch"},
                None,
            ):
                context: dict[str, Any] = {"extracted": attempt, "reference": {"answer": answer}}
                if details is not None:
                    context["verdict_details"] = details
                text = feedback(**context)
                assert text, context
                assert not states_answer(text, answer), (context, text)
                assert not states_answer(text, f"{value:,}"), (context, text)


def test_the_answer_revealer_states_the_answer_the_feedback_teacher_never_does() -> None:
    from models_gpu.backends import load_generator
    from models_gpu.spec.run import RoleSpec

    context = {"extracted": "9", "reference": {"answer": "17"},
               "verdict_details": numeric_details("wrong_value", "too_low")}  # fmt: skip
    request = GenerationRequest(messages=(), seed=0, private_context=context)
    revealer = load_generator(RoleSpec("scripted", "answer-revealer"))
    [said] = revealer.generate([request])
    assert said.text == "Not quite. The number is 17." and leaks_reference(said.text, "17")
    assert not leaks_reference(feedback_teacher_reply(request), "17")
