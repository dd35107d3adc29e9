"""A programmatic teacher: feedback written only from its private context, never the answer.

It reads ``request.private_context`` (``verdict_details``, ``extracted``, maybe ``reference``
and the task's ``domain``) and ignores the conversation. Its hint after "too high" / "too low"
fits the task family: "The hidden number is lower." in guess-the-number, "Check each column
again, carrying where needed." otherwise (sums). Whatever it writes passes a final guard: a draft
that states the reference answer (as a whole token, or as any number equal to it) is replaced by
a vaguer one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from models_gpu.types import GenerationRequest
from models_gpu.verifiers.extraction import find_numbers, parse_number

ASK_FOR_ANSWER = "End with 'The answer is N.'"
# generators.families.guess_number's domain: the player is told higher or lower, nothing more.
GUESS_NUMBER_DOMAIN = "guess_number"


def feedback_teacher_reply(request: GenerationRequest) -> str:
    context = request.private_context
    details: Mapping[str, Any] = context.get("verdict_details") or {}
    extracted: str | None = context.get("extracted")
    reference = _reference_answer(context)
    direction = details.get("direction") or _direction_from_reference(extracted, reference)
    guessing = context.get("domain") == GUESS_NUMBER_DOMAIN
    drafts = (
        _specific_feedback(details.get("reason"), direction, extracted, guessing=guessing),
        _generic_feedback(direction, guessing=guessing),
        "Not quite.",
        "Try again.",  # shares no word with the one before, so one of the two is always safe
    )
    for draft in drafts:
        if reference is None or not leaks_reference(draft, reference):
            return draft
    return ""


def answer_revealer_reply(request: GenerationRequest) -> str:
    """States the answer outright: the environment of the credit-assignment check
    (``training.credit_check``), where a student that reads the feedback solves turn 2. Not a
    teacher to study: every turn it writes is a leak."""
    reference = _reference_answer(request.private_context)
    if reference is None:
        return "Not quite."
    return f"Not quite. The number is {reference}."


def leaks_reference(text: str, reference_answer: str) -> bool:
    """Whether ``text`` states the answer: as a whole token, or as a number equal to it."""
    answer = reference_answer.strip()
    if not answer:
        return False
    if _whole_token(answer).search(text):
        return True
    expected = parse_number(answer)
    return expected is not None and any(parse_number(n) == expected for n in find_numbers(text))


@functools.lru_cache(maxsize=1024)  # one pattern per task, asked for on every round
def _whole_token(answer: str) -> re.Pattern[str]:
    """``answer`` as a whole token: "5" is in "is 5." but not in "0.5" or "15"; case is ignored,
    as the exact verifier does."""
    return re.compile(rf"(?<![\w.]){re.escape(answer)}(?!\w|\.\d)", re.IGNORECASE)


def _specific_feedback(
    reason: object, direction: str | None, extracted: str | None, *, guessing: bool
) -> str:
    if extracted is None or reason == "no_answer_found":
        return f"I could not find an answer in your reply. {ASK_FOR_ANSWER}"
    if reason == "correct":
        return "That's right. Well done."
    if reason == "not_a_number":
        return f'Your answer "{extracted}" is not a number. {ASK_FOR_ANSWER}'
    if direction is not None:
        numbers = find_numbers(extracted)
        judged = numbers[-1] if numbers else extracted  # the number the verifier compared
        if guessing:
            return f"Not quite: {judged} is {_words(direction)}. {_hidden_number_is(direction)}"
        return (
            f"Not quite: {judged} is {_words(direction)}. "
            "Check each column again, carrying where needed."
        )
    return f'Not quite: "{extracted}" is not the answer. Re-read the question and try again.'


def _generic_feedback(direction: str | None, *, guessing: bool) -> str:
    if direction is None:
        return "Not quite. Check your work and try again."
    if guessing:
        return f"Not quite: your guess is {_words(direction)}. {_hidden_number_is(direction)}"
    return f"Not quite: your answer is {_words(direction)}. Check your work and try again."


def _hidden_number_is(direction: str) -> str:
    return f"The hidden number is {'lower' if direction == 'too_high' else 'higher'}."


def _words(direction: str) -> str:
    return direction.replace("_", " ")


def _reference_answer(context: Mapping[str, Any]) -> str | None:
    reference = context.get("reference")
    if not isinstance(reference, Mapping) or "answer" not in reference:
        return None
    return str(reference["answer"])


def _direction_from_reference(extracted: str | None, reference: str | None) -> str | None:
    """A teacher that knows the answer can tell high from low even without verifier details."""
    if extracted is None or reference is None:
        return None
    numbers = find_numbers(extracted)
    value = parse_number(numbers[-1]) if numbers else None
    expected = parse_number(reference)
    if value is None or expected is None or value == expected:
        return None
    return "too_high" if value > expected else "too_low"
