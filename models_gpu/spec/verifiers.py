"""Verifier kinds and their options (``models_gpu.verifiers`` describes what each one checks
and the details it reports). Task forms and imports offer these kinds and validate a task's
``verifier_config`` through ``verifier_config_problems``; each verifier reads its options with
``read_verifier_settings``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from models_gpu.spec.settings import Setting, read_settings, settings_problems


@dataclass(frozen=True)
class VerifierKind:
    """``reference_fields``: what a task's private reference must hold for this verifier (the
    task editor asks for them; the verifier has the last word)."""

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
        ("tests", "entry_point"),
    ),
    "maze": VerifierKind("Maze"),
    "code_guess": VerifierKind("Code guess"),
}  # fmt: skip


def verifier_config_problems(kind: str, config: Mapping[str, Any]) -> list[str]:
    """What is wrong with a task's verifier kind and options (empty: nothing)."""
    if kind not in VERIFIERS:
        return [f"unknown verifier kind {kind!r}; known kinds: {', '.join(VERIFIERS)}"]
    return settings_problems(config, VERIFIERS[kind].settings)


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
