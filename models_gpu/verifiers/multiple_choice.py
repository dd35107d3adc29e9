"""``multiple_choice``: the chosen letter equals ``reference["answer"]`` ("B").

The choice is read from the extracted answer: "B", "(B)", "B)", "B. text", "answer: b", "Option
B", or the text of one of ``choices`` itself.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from typing import Any

from models_gpu.types import TaskSpec, Verdict
from models_gpu.verifiers.exact import normalise_text
from models_gpu.verifiers.extraction import extract_answer
from models_gpu.verifiers.settings import reference_answer, verifier_settings

# A lone letter, maybe bracketed, maybe after "option"/"choice"/"answer:", maybe followed by
# its text. Lower case only where nothing else can be meant ("b", "answer: b"): "a" as an
# article in "a cat" must not count as choice A.
_LETTER = re.compile(
    r"^(?:(?:option|choice|answer)\s*[:\-]?\s*)?[(\[]?(?P<letter>[A-Za-z])[)\]]?(?:[.):]\s*.*|\s*)$",
    re.IGNORECASE | re.DOTALL,
)


def verify_multiple_choice(task: TaskSpec, response: str) -> Verdict:
    settings = verifier_settings(task)
    choices = _choices(task, settings["choices"])
    letters = string.ascii_uppercase[: len(choices)] if choices else string.ascii_uppercase
    expected = str(reference_answer(task)).strip().strip("()").upper()
    if expected not in letters:
        raise ValueError(f"task {task.task_id}: reference answer is not one of {letters!r}")
    extracted = extract_answer(response)
    if extracted is None:
        return Verdict(False, 0.0, None, {"reason": "no_choice_found", "chosen": None})
    chosen = parse_choice(extracted, choices)
    if chosen is None:
        return Verdict(False, 0.0, extracted, {"reason": "no_choice_found", "chosen": None})
    if chosen not in letters:
        return Verdict(False, 0.0, extracted, {"reason": "invalid_choice", "chosen": chosen})
    correct = chosen == expected
    reason = "correct" if correct else "wrong_choice"
    return Verdict(correct, float(correct), extracted, {"reason": reason, "chosen": chosen})


def parse_choice(text: str, choices: Sequence[str] = ()) -> str | None:
    """The upper-case letter ``text`` chooses, or None."""
    normalised = normalise_text(text, case_sensitive=False)
    for index, choice in enumerate(choices):
        if normalised == normalise_text(choice, case_sensitive=False):
            return string.ascii_uppercase[index]
    match = _LETTER.match(text.strip())
    if match is None:
        return None
    letter = match["letter"]
    lone = len(text.strip().strip("()[]")) == 1 or ":" in text[: match.start("letter")]
    if letter.islower() and not lone and not text.lower().startswith(("option", "choice")):
        return None
    return letter.upper()


def _choices(task: TaskSpec, choices: Any) -> list[str]:
    if not isinstance(choices, list | tuple) or not all(isinstance(c, str) for c in choices):
        raise ValueError(f"task {task.task_id}: 'choices' must be a list of strings")
    if len(choices) > 26:
        raise ValueError(f"task {task.task_id}: at most 26 choices")
    return list(choices)
