"""Numbers as the numeric verifier reads them, defined once for every side that reads one.

The verifier reads a student's answer and the task's reference with these; the task editor and
imports check a reference with the same reading (``models_gpu.spec.verifiers``), so a
reference the editor or an import accepts is one the verifier can compare against.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction
from typing import Any

_LATEX_FRACTION = re.compile(r"\\[dt]?frac\{\s*(-?\d+)\s*\}\{\s*(-?\d+)\s*\}")
# A minus sign counts only where it cannot be subtraction ("5-3" holds 5 and 3, not -3).
# Thousands groups must be exactly three digits, so "1,2345" is not read as 1,234. Scientific
# notation ("3.91e2", "1E-3") is one number; its exponent has at most three digits, so that a
# model's "1e999999999" is not a number with a billion digits to build (it reads as 1 and a
# separate 999999999).
_EXPONENT = r"(?:[eE][-+]?\d{1,3}(?!\d))?"
NUMBER_PATTERN = re.compile(
    r"(?P<sign>(?<![\w)\]])-)?"
    r"(?P<body>\d+/\d+|\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)"
    rf"|\d+(?:\.\d+)?{_EXPONENT}|\.\d+{_EXPONENT})"
)


def normalise_numbers(text: str) -> str:
    """The Unicode minus made ASCII and LaTeX fractions made ``a/b``, before numbers are found."""
    text = text.replace("\u2212", "-")  # the Unicode minus sign that models like to emit
    return _LATEX_FRACTION.sub(lambda match: f"{match[1]}/{match[2]}", text)


def number_text(match: re.Match[str]) -> str:
    """A :data:`NUMBER_PATTERN` match as plain text: ASCII minus, no thousands separators."""
    return (match["sign"] or "") + match["body"].replace(",", "")


# Cached: the engine reads the same few numbers over and over (a reply's answer in the verdict,
# its feedback check, the teacher's reply and leak check, every later move's check), and
# building a Fraction from text was the largest share of its own time. Fractions are immutable.
@functools.lru_cache(maxsize=4096)
def parse_number(text: str) -> Fraction | None:
    """``text`` as an exact number when it is exactly one number ("-1,234", "0.75", "3/4")."""
    match = NUMBER_PATTERN.fullmatch(normalise_numbers(text.strip()))
    if match is None:
        return None
    try:
        return Fraction(number_text(match))
    except (ValueError, ZeroDivisionError):  # "3/0", or more digits than int() accepts
        return None


def reference_number(answer: Any) -> Fraction | None:
    """A numeric task's reference answer as an exact number, or None when it is not one: an
    int, a finite float (0.1 is exactly 1/10) or a string :func:`parse_number` reads."""
    if isinstance(answer, bool):  # bool is an int subclass; True is not the number 1 here
        return None
    if isinstance(answer, int | Fraction):
        return Fraction(answer)
    if isinstance(answer, float):
        # repr gives the shortest decimal that round-trips, so 0.1 becomes exactly 1/10.
        return Fraction(repr(answer)) if math.isfinite(answer) else None
    if isinstance(answer, str):
        return parse_number(answer)
    return None
