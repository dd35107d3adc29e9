"""``code_guess``: a Mastermind-style hidden code ("4821"); the details score a wrong guess.

The guess is the last run of exactly as many digits as the code in the extracted answer. The
details give how many digits are right and in place, and how many are right but misplaced:
enough to solve the task over turns, not in one.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from models_gpu.types import TaskSpec, Verdict
from models_gpu.verifiers.extraction import extract_answer
from models_gpu.verifiers.settings import reference_answer, verifier_settings


def verify_code_guess(task: TaskSpec, response: str) -> Verdict:
    verifier_settings(task)
    code = str(reference_answer(task)).strip()
    if not code.isdigit():
        raise ValueError(f"task {task.task_id}: reference answer must be a string of digits")
    extracted = extract_answer(response)
    guesses = re.findall(rf"(?<!\d)\d{{{len(code)}}}(?!\d)", extracted or "")
    if not guesses:
        details: dict[str, Any] = {"reason": "no_code_found", "in_place": None, "misplaced": None}
        return Verdict(False, 0.0, extracted, details)
    guess = guesses[-1]
    in_place, misplaced = score_guess(guess, code)
    correct = in_place == len(code)
    details = {
        "reason": "correct" if correct else "wrong_code",
        "in_place": in_place,
        "misplaced": misplaced,
    }
    return Verdict(correct, float(correct), guess, details)


def score_guess(guess: str, code: str) -> tuple[int, int]:
    """Mastermind's (right place, right digit wrong place)."""
    in_place = sum(g == c for g, c in zip(guess, code, strict=True))
    common = sum((Counter(guess) & Counter(code)).values())
    return in_place, common - in_place
