"""A scripted student for arithmetic tasks that learns from feedback at a known, tunable rate.

Attempt t (t = the student's earlier replies + 1) is right with probability
``1 - (1 - first_try_accuracy) * (1 - feedback_gain) ** n_feedback``, where ``n_feedback`` counts
the user messages after the task. A wrong answer moves in the direction the last feedback asked
("too high" -> below the previous answer), so transcripts visibly use the feedback. The random
draws are seeded by ``f"{seed}:{t}"`` (never ``hash()``), so a dialogue is the same in any process
and in any batch.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from fractions import Fraction

from models_gpu.backends.safe_arithmetic import UnsupportedExpression, evaluate
from models_gpu.types import GenerationRequest, Message
from models_gpu.verifiers.extraction import extract_number, parse_number

# Runs of arithmetic characters; the longest that evaluates is taken as the task's expression.
_EXPRESSION_CANDIDATE = re.compile(r"[-+(]*\d[\d\s+\-*/%()]*")
DONT_KNOW = "I don't know."
_DIRECTIONS = ("too_high", "too_low")


@dataclass(frozen=True)
class ArithmeticStudent:
    first_try_accuracy: float = 0.35
    feedback_gain: float = 0.45

    def reply(self, request: GenerationRequest) -> str:
        user_messages = [message for message in request.messages if message.role == "user"]
        true_value = solve(user_messages[0].content) if user_messages else None
        if true_value is None:
            return DONT_KNOW
        attempt = 1 + sum(message.role == "assistant" for message in request.messages)
        n_feedback = len(user_messages) - 1
        rng = random.Random(f"{request.seed}:{attempt}")
        p_correct = 1 - (1 - self.first_try_accuracy) * (1 - self.feedback_gain) ** n_feedback
        # str(Fraction) is "565" or "7/2": both forms the numeric verifier reads.
        if rng.random() < p_correct:
            return f"The answer is {true_value}."
        wrong = _wrong_answer(true_value, _feedback_hint(request.messages), rng)
        return f"The answer is {wrong}."


def solve(task_text: str) -> Fraction | None:
    """The value of the longest arithmetic expression in ``task_text`` that evaluates."""
    candidates = sorted(_EXPRESSION_CANDIDATE.findall(task_text), key=len, reverse=True)
    for candidate in candidates:
        try:
            return evaluate(candidate.strip())
        except UnsupportedExpression:
            continue
    return None


@dataclass(frozen=True)
class _FeedbackHint:
    previous_answer: Fraction
    direction: str  # "too_high" or "too_low"


def _feedback_hint(messages: tuple[Message, ...]) -> _FeedbackHint | None:
    """The direction the last feedback gave, with the answer it was about, if both are known."""
    if len(messages) < 2 or messages[-1].role != "user" or messages[-2].role != "assistant":
        return None
    feedback = messages[-1].content.casefold()
    direction = (
        "too_high" if "too high" in feedback else "too_low" if "too low" in feedback else None
    )
    previous_text = extract_number(messages[-2].content)
    previous_answer = parse_number(previous_text) if previous_text else None
    if direction is None or previous_answer is None:
        return None
    return _FeedbackHint(previous_answer, direction)


def _wrong_answer(true_value: Fraction, hint: _FeedbackHint | None, rng: random.Random) -> Fraction:
    if hint is None:
        return true_value + rng.choice((-1, 1)) * _slip(true_value, rng)
    sign = -1 if hint.direction == "too_high" else 1
    previous = hint.previous_answer
    room = math.ceil(abs(previous - true_value)) - 1  # wrong integer steps strictly between
    if sign * (true_value - previous) > 0 and room >= 1:
        return previous + sign * rng.randint(1, room)
    # Nothing wrong lies between: overshoot past the truth, still on the side the feedback asked.
    beyond = min(previous, true_value) if sign < 0 else max(previous, true_value)
    return beyond + sign * _slip(true_value, rng)


def _slip(true_value: Fraction, rng: random.Random) -> int:
    """A nonzero error whose size grows with the answer, like a dropped carry would."""
    return rng.randint(1, max(2, int(abs(true_value)) // 5))
