"""Verifiers: ``verify(task, response) -> Verdict``, chosen by ``task.verifier_kind``.

Kinds (the web side mirrors these names in its choices; it cannot import this package):
    exact    ``reference["answer"]`` is a string. The extracted answer must equal it after
             stripping, collapsing whitespace and dropping a final period. Options:
             ``case_sensitive`` (bool, default False). Details: ``{"reason": "correct" |
             "mismatch" | "no_answer_found"}``.
    numeric  ``reference["answer"]`` is a number or numeric string ("85", "-1,234", "3/4",
             0.75). The last number of the extracted answer is compared exactly as a fraction,
             or within ``rel_tol`` / ``abs_tol`` (floats, default 0). Details: ``{"reason":
             "correct" | "wrong_value" | "no_answer_found" | "not_a_number", "direction":
             "too_high" | "too_low" | None, "relative_error": float | None}``.

Details never contain the reference: a teacher is shown them as private knowledge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from models_gpu.types import TaskSpec, Verdict
from models_gpu.verifiers.exact import verify_exact
from models_gpu.verifiers.numeric import verify_numeric

_VERIFIERS: Mapping[str, Callable[[TaskSpec, str], Verdict]] = {
    "exact": verify_exact,
    "numeric": verify_numeric,
}
VERIFIER_KINDS: tuple[str, ...] = tuple(_VERIFIERS)


class UnknownVerifier(ValueError):
    pass


def verify(task: TaskSpec, response: str) -> Verdict:
    verifier = _VERIFIERS.get(task.verifier_kind)
    if verifier is None:
        raise UnknownVerifier(
            f"task {task.task_id}: unknown verifier kind {task.verifier_kind!r}; "
            f"known kinds: {', '.join(VERIFIER_KINDS)}"
        )
    return verifier(task, response)


__all__ = ["VERIFIER_KINDS", "UnknownVerifier", "verify"]
