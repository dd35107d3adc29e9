"""``regex``: the extracted answer (or the whole response) matches a regular expression."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from models_gpu.types import TaskSpec, Verdict
from models_gpu.verifiers.extraction import extract_answer
from models_gpu.verifiers.settings import verifier_settings

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


def verify_regex(task: TaskSpec, response: str) -> Verdict:
    settings = verifier_settings(task)
    compiled = _compile(task, settings)
    if settings["search_whole_response"]:
        extracted: str | None = response.strip()
    else:
        extracted = extract_answer(response)
    if not extracted:
        return Verdict(False, 0.0, None, {"reason": "no_answer_found"})
    match = compiled.fullmatch(extracted) if settings["full_match"] else compiled.search(extracted)
    correct = match is not None
    # The pattern is the reference: only the verdict goes into the details.
    return Verdict(
        correct, float(correct), extracted, {"reason": "correct" if correct else "no_match"}
    )


def _compile(task: TaskSpec, settings: Mapping[str, Any]) -> re.Pattern[str]:
    pattern = (
        settings["pattern"] if settings["pattern"] is not None else task.reference.get("pattern")
    )
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(
            f"task {task.task_id}: regex needs verifier_config['pattern'] or reference['pattern']"
        )
    flags = 0
    for letter in settings["flags"]:  # letters of _FLAGS (the spec checked them)
        flags |= _FLAGS[letter]
    try:
        return re.compile(pattern, flags)
    except re.error as error:
        raise ValueError(f"task {task.task_id}: invalid regex pattern: {error}") from error
