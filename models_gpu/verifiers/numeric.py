"""``numeric``: the last number of the extracted answer equals ``reference["answer"]``.

Numbers compare exactly as fractions (so 3/4 equals 0.75) unless ``rel_tol``/``abs_tol`` allow
slack. The details tell a teacher how the attempt is wrong without stating the reference. The
verdict's ``extracted`` is the number compared ("40" from "I think it is 40"), so what a
transcript or "Try it" shows is what was judged; an answer holding no number is kept as text.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from models_gpu.spec.numbers import reference_number
from models_gpu.types import TaskSpec, Verdict
from models_gpu.verifiers.extraction import extract_answer, find_numbers, parse_number
from models_gpu.verifiers.settings import reference_answer, verifier_settings


def verify_numeric(task: TaskSpec, response: str) -> Verdict:
    settings = verifier_settings(task)
    expected = _reference_number(task)
    extracted = extract_answer(response)
    if extracted is None:
        return Verdict(False, 0.0, None, _details("no_answer_found"))
    numbers = find_numbers(extracted)
    value = parse_number(numbers[-1]) if numbers else None
    if value is None:
        return Verdict(False, 0.0, extracted, _details("not_a_number"))
    judged = numbers[-1]
    relative_error = _relative_error(value, expected)
    if _close(value, expected, float(settings["rel_tol"]), float(settings["abs_tol"])):
        return Verdict(True, 1.0, judged, _details("correct", relative_error=relative_error))
    direction = "too_high" if value > expected else "too_low"
    return Verdict(
        False,
        0.0,
        judged,
        _details("wrong_value", direction=direction, relative_error=relative_error),
    )


def _reference_number(task: TaskSpec) -> Fraction:
    answer = reference_answer(task)
    number = reference_number(answer)
    if number is None:
        raise ValueError(f"task {task.task_id}: reference answer {answer!r} is not a number")
    return number


def _close(value: Fraction, expected: Fraction, rel_tol: float, abs_tol: float) -> bool:
    if value == expected:
        return True
    if rel_tol == 0 and abs_tol == 0:
        return False
    try:
        return math.isclose(float(value), float(expected), rel_tol=rel_tol, abs_tol=abs_tol)
    except OverflowError:
        return False


def _relative_error(value: Fraction, expected: Fraction) -> float | None:
    if expected == 0:
        return None  # undefined; the direction still tells the teacher something
    # |v - e| / |e| over whole numbers: one correctly rounded int division, the float a Fraction
    # would give, without building the three Fractions in between (the verifier's largest cost).
    difference = abs(
        value.numerator * expected.denominator - expected.numerator * value.denominator
    )
    # Three significant digits, not two decimals: 390 against 391 is 0.00256, which two
    # decimals would show a teacher as 0.0, an error of nothing.
    try:
        return float(f"{difference / (value.denominator * abs(expected.numerator)):.3g}")
    except OverflowError:  # a 400-digit answer: no finite float, and JSON has no infinity
        return None


def _details(
    reason: str, *, direction: str | None = None, relative_error: float | None = None
) -> dict[str, Any]:
    return {"reason": reason, "direction": direction, "relative_error": relative_error}
