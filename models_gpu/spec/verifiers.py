"""Verifier kinds and their options (``models_gpu.verifiers`` describes what each one checks
and the details it reports). Task forms and imports offer these kinds and validate a task's
``verifier_config`` through ``verifier_config_problems`` and its private reference through
``reference_problems`` (the same rules for a task typed in and a row imported); each verifier
reads its options with ``read_verifier_settings``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from models_gpu.spec.numbers import reference_number
from models_gpu.spec.settings import Setting, read_settings, settings_problems


@dataclass(frozen=True)
class VerifierKind:
    """``reference_fields``: what a task's private reference must hold for this verifier (the
    task editor and imports ask for them, see ``reference_problems``; the verifier has the last
    word)."""

    label: str
    settings: tuple[Setting, ...] = ()
    reference_fields: tuple[str, ...] = ()


_ANSWER = ("answer",)


_TOLERANCES = (
    Setting("rel_tol", "float", "accept a relative error up to this", 0.0, low=0),
    Setting("abs_tol", "float", "accept an absolute error up to this", 0.0, low=0),
)

VERIFIERS: Mapping[str, VerifierKind] = {
    "exact": VerifierKind(
        "Exact / normalized string",
        (Setting("case_sensitive", "bool", "compare letter case too", False),),
        _ANSWER,
    ),
    "numeric": VerifierKind("Numeric", _TOLERANCES, _ANSWER),
    "math": VerifierKind(
        "Math expression",
        (
            *_TOLERANCES,
            Setting("timeout_seconds", "int", "parsing time limit (0: none)", 5, low=0),
            Setting("max_answer_chars", "int", "longer answers are refused unparsed", 400, low=1),
        ),
        _ANSWER,
    ),
    "regex": VerifierKind(
        "Regular expression",
        (
            Setting("pattern", "str", "the pattern (else the reference's)", None, optional=True),
            Setting("full_match", "bool", "the whole answer must match (else: search)", True),
            Setting("flags", "str", "any of i, m, s, x", "", pattern="[imsx]*",
                    pattern_help="made of the letters i, m, s, x"),
            Setting("search_whole_response", "bool", "match the response, not the answer",
                    False),
        ),
    ),
    "multiple_choice": VerifierKind(
        "Multiple choice",
        (Setting("choices", "list", "the choices' texts (empty: letters A-Z)", []),),
        _ANSWER,
    ),
    "code": VerifierKind(
        "Code (unit tests in a sandbox)",
        (
            Setting("timeout_seconds", "float", "wall-clock limit of a test run", 10.0, low=0,
                    low_open=True, high=600),
            Setting("memory_mb", "int", "address space of the code, interpreter included", 512,
                    low=64, high=65536),
        ),
        # The entry point only when the tests are a HumanEval check(candidate): asserts that
        # call the function by name (MBPP's) need none. See reference_problems.
        ("tests",),
    ),
    "maze": VerifierKind("Maze"),
    "code_guess": VerifierKind("Code guess"),
}  # fmt: skip


def verifier_config_problems(kind: str, config: Mapping[str, Any]) -> list[str]:
    """What is wrong with a task's verifier kind and options (empty: nothing)."""
    if kind not in VERIFIERS:
        return [f"unknown verifier kind {kind!r}; known kinds: {', '.join(VERIFIERS)}"]
    return settings_problems(config, VERIFIERS[kind].settings)


NUMBER_EXAMPLES = "like 42, -3.5 or 3/4"

# A HumanEval-style test: ``def check(candidate)``, which the sandbox calls with the entry point.
_CHECK_FUNCTION = re.compile(r"^def\s+check\s*\(", re.MULTILINE)


@dataclass(frozen=True)
class ReferenceProblem:
    """What is wrong with a task's reference for its verifier: the reference ``field`` at fault
    (``answer``, ``tests``, ``entry_point``, ...) and a ``message`` that starts in lower case,
    so an import can put its line and column before it and a form can capitalise it."""

    field: str
    message: str


def _shown(value: Any, limit: int = 60) -> str:
    """A value for a message, cut short: a reference may be thousands of characters long."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_blank(value: Any) -> bool:
    if isinstance(value, str):
        return not value.strip()
    return value is None or (isinstance(value, list | dict | tuple) and not value)


def reference_problems(kind: str, reference: Mapping[str, Any]) -> list[ReferenceProblem]:
    """What stops the ``kind`` verifier from checking answers against ``reference`` (empty:
    nothing found). The one rule for a reference that the task editor, the quick-add form and
    every import apply, so a task that one accepts the others accept too: a numeric answer is
    a number as the numeric verifier reads it, a code task's tests are Python source (with the
    entry point when they are a HumanEval ``check(candidate)``). An unknown kind is
    ``verifier_config_problems``' to report, not this function's."""
    if kind not in VERIFIERS:
        return []
    missing = [
        ReferenceProblem(
            field, f"the {kind} verifier needs the {field.replace('_', ' ')}; none was given"
        )
        for field in VERIFIERS[kind].reference_fields
        if _is_blank(reference.get(field))
    ]
    if missing:
        return missing
    problems = []
    if kind == "numeric" and reference_number(reference["answer"]) is None:
        problems.append(
            ReferenceProblem(
                "answer",
                f"the numeric verifier needs a number ({NUMBER_EXAMPLES}); "
                f"got {_shown(reference['answer'])}",
            )
        )
    if kind == "code":
        tests = reference["tests"]
        if not isinstance(tests, str):
            problems.append(
                ReferenceProblem(
                    "tests",
                    "the code verifier needs tests as Python source text; "
                    f"got a {type(tests).__name__}",
                )
            )
        elif _CHECK_FUNCTION.search(tests) and _is_blank(reference.get("entry_point")):
            problems.append(
                ReferenceProblem(
                    "entry_point",
                    "the code verifier needs the entry point: the tests define check(candidate), "
                    "which is called with the function of that name",
                )
            )
    return problems


def read_verifier_settings(kind: str, config: Mapping[str, Any], *, task_id: int) -> dict[str, Any]:
    """Every option of the verifier, given or default; ValueError naming the task and each
    problem."""
    if kind not in VERIFIERS:
        raise ValueError(
            f"task {task_id}: unknown verifier kind {kind!r}; known kinds: {', '.join(VERIFIERS)}"
        )
    return read_settings(
        config, VERIFIERS[kind].settings, owner=f"task {task_id}: {kind!r} verifier"
    )
