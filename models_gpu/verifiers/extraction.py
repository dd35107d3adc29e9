"""Find the final answer in free-form model output.

Precedence: the last ``\\boxed{...}`` > the last "The answer is X" / "Answer: X" > the last
non-empty line. Real model output reasons first and answers last, so "last" wins everywhere.
"""

from __future__ import annotations

import functools
import re

from models_gpu.spec.numbers import (
    NUMBER_PATTERN,
    normalise_numbers,
    number_text,
    parse_number,
)

__all__ = ["extract_answer", "extract_code", "extract_number", "find_numbers", "parse_number"]

_BOXED_OPENER = "\\boxed{"
_ANSWER_PHRASE = re.compile(
    r"(?:\bthe\s+(?:final\s+)?answer\s+is\b|\banswer\s*:)[ \t:]*(?P<rest>[^\n]*)",
    re.IGNORECASE,
)
# A period followed by whitespace or the end ends the answer sentence; "3.5" keeps its point.
_SENTENCE_END = re.compile(r"\.(?=\s|$)")
_EDGE_JUNK = " \t\r\n$*"


def extract_answer(text: str) -> str | None:
    """The final answer in ``text`` as a short string, or None when there is none."""
    candidate = _last_boxed(text)
    if candidate is None:
        candidate = _last_answer_phrase(text)
    if candidate is None:
        lines = [line for line in text.splitlines() if line.strip()]
        candidate = lines[-1] if lines else None
    if candidate is None:
        return None
    cleaned = _clean(candidate)
    return cleaned or None


@functools.lru_cache(maxsize=1024)  # one text is read several times a turn (parse_number's note)
def find_numbers(text: str) -> tuple[str, ...]:
    """Every number in ``text``, normalised: no thousands separators, ASCII minus, ``a/b``."""
    return tuple(number_text(match) for match in NUMBER_PATTERN.finditer(normalise_numbers(text)))


def extract_number(text: str) -> str | None:
    """The last number in the extracted answer of ``text`` (see ``find_numbers``), or None."""
    answer = extract_answer(text)
    if answer is None:
        return None
    numbers = find_numbers(answer)
    return numbers[-1] if numbers else None


def _last_boxed(text: str) -> str | None:
    start = text.rfind(_BOXED_OPENER)
    while start != -1:
        content = _balanced_content(text, start + len(_BOXED_OPENER))
        if content is not None:
            return content
        start = text.rfind(_BOXED_OPENER, 0, start)
    return None


def _balanced_content(text: str, content_start: int) -> str | None:
    """The text up to the brace that closes the one just before ``content_start``."""
    depth = 1
    for position in range(content_start, len(text)):
        if text[position] == "{":
            depth += 1
        elif text[position] == "}":
            depth -= 1
            if depth == 0:
                return text[content_start:position]
    return None


def _last_answer_phrase(text: str) -> str | None:
    matches = list(_ANSWER_PHRASE.finditer(text))
    if not matches:
        return None
    rest = matches[-1]["rest"]
    sentence_end = _SENTENCE_END.search(rest)
    return rest[: sentence_end.start()] if sentence_end else rest


def _clean(answer: str) -> str:
    """Drop what wraps an answer without being part of it: ``$``, ``**``, a final period."""
    previous = None
    while previous != answer:
        previous = answer
        answer = answer.strip(_EDGE_JUNK).removesuffix(".")
    return answer


_CODE_FENCE = re.compile(r"```[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)```", re.DOTALL)


def extract_code(text: str) -> str:
    """The last fenced ```python block (``py``/``python3`` too), else the last fenced block of no
    stated language, else the whole text: models usually end with their final version."""
    blocks = [(m["lang"].lower(), m["body"]) for m in _CODE_FENCE.finditer(text)]
    for wanted in (("python", "py", "python3"), ("",)):
        chosen = [body for lang, body in blocks if lang in wanted]
        if chosen:
            return chosen[-1]
    return text
