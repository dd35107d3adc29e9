"""``exact``: the extracted answer equals ``reference["answer"]`` after light normalisation."""

from __future__ import annotations

import re

from models_gpu.types import TaskSpec, Verdict
from models_gpu.verifiers.extraction import extract_answer
from models_gpu.verifiers.settings import reference_answer, verifier_settings


def verify_exact(task: TaskSpec, response: str) -> Verdict:
    settings = verifier_settings(task)
    case_sensitive = bool(settings["case_sensitive"])
    expected = normalise_text(str(reference_answer(task)), case_sensitive=case_sensitive)
    extracted = extract_answer(response)
    if extracted is None:
        return Verdict(False, 0.0, None, {"reason": "no_answer_found"})
    correct = normalise_text(extracted, case_sensitive=case_sensitive) == expected
    return Verdict(
        correct, float(correct), extracted, {"reason": "correct" if correct else "mismatch"}
    )


def normalise_text(text: str, *, case_sensitive: bool) -> str:
    """Whitespace runs as one space, no final full stops or exclamation marks ("Paris!" is
    "Paris"; a final question mark stays: "Paris?" is not an answer given), and, unless
    ``case_sensitive``, case folded. The reference is read the same way."""
    text = _FINAL_STOPS.sub("", re.sub(r"\s+", " ", text).strip()).rstrip()
    return text if case_sensitive else text.casefold()


_FINAL_STOPS = re.compile(r"[.!]+$")
