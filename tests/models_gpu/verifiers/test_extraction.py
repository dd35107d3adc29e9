from __future__ import annotations

from fractions import Fraction

import pytest

from models_gpu.verifiers.extraction import extract_answer, extract_number, parse_number


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is 85.", "85"),
        ("The answer is -1,234.", "-1,234"),
        ("The answer is 3.5.", "3.5"),
        ("The final answer is: 12", "12"),
        ("Answer: $42$.", "42"),
        ("The answer is **7**.", "7"),
        ("The answer is 85. Let me double-check: 40 + 45 = 85", "85"),
        ("First the answer is 3.\nNo wait, the answer is 4.", "4"),
        (r"So $x = \boxed{\frac{1}{2}}$.", r"\frac{1}{2}"),
        (r"\boxed{x^{2} + {y}}", "x^{2} + {y}"),
        (r"\boxed{1} then \boxed{2}", "2"),
        (r"The answer is 5, i.e. \boxed{6}", "6"),  # boxed beats "answer is"
        (r"\boxed{7} and then \boxed{unbalanced", "7"),
        ("Let me think.\n40 + 45 = 85\n\n  ", "40 + 45 = 85"),
        ("", None),
        ("  \n \n", None),
        (r"\boxed{}", None),
    ],
)
def test_extract_answer(text: str, expected: str | None) -> None:
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is -1,234.", "-1234"),
        ("The answer is 12,345,678.", "12345678"),
        ("The answer is 3/4.", "3/4"),
        (r"\boxed{-\frac{3}{4}}", "-3/4"),
        ("The answer is 0.75", "0.75"),
        ("The answer is .5", ".5"),
        ("The answer is \u22127.", "-7"),
        ("Answer: 40 + 45 = 85", "85"),
        ("Answer: 5-3", "3"),  # subtraction, not the number -3
        ("Answer: x = -5", "-5"),
        ("Answer: (-3)", "-3"),
        ("I don't know.", None),
        ("", None),
    ],
)
def test_extract_number(text: str, expected: str | None) -> None:
    assert extract_number(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("85", Fraction(85)),
        (" -1,234 ", Fraction(-1234)),
        ("3/4", Fraction(3, 4)),
        ("0.75", Fraction(3, 4)),
        ("3/0", None),
        ("12 apples", None),
        ("1 2", None),
        ("1e5", Fraction(100000)),
        ("2.5E-3", Fraction(1, 400)),
        ("1e999999", None),  # an exponent past three digits is not read: no number to build
        ("", None),
        ("9" * 5000, None),  # more digits than int() will parse
    ],
)
def test_parse_number(text: str, expected: Fraction | None) -> None:
    assert parse_number(text) == expected
