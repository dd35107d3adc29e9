"""Verifiers: ``verify(task, response) -> Verdict``, chosen by ``task.verifier_kind``.

Kinds, their options and defaults are declared in ``models_gpu.spec.verifiers`` (the web side
offers and validates them from there). Every option is validated: an unknown one is a ValueError
naming it. The answer is extracted from
free-form output: the last ``\\boxed{...}`` > the last "The answer is X" / "Answer: X" > the last
non-empty line (code: the last fenced python block, else the whole response).

    exact    ``reference["answer"]`` is a string. The extracted answer must equal it after
             stripping, collapsing whitespace and dropping a final period. Options:
             ``case_sensitive`` (bool, default False). Details: ``{"reason": "correct" |
             "mismatch" | "no_answer_found"}``.
    numeric  ``reference["answer"]`` is a number or numeric string ("85", "-1,234", "3/4",
             0.75). The last number of the extracted answer is compared exactly as a fraction,
             or within ``rel_tol`` / ``abs_tol`` (floats, default 0). Details: ``{"reason":
             "correct" | "wrong_value" | "no_answer_found" | "not_a_number", "direction":
             "too_high" | "too_low" | None, "relative_error": float | None}``.
    math     ``reference["answer"]`` is a number or LaTeX/plain expression ("\\frac{1}{2}",
             "(x+1)^2", "\\{1,2\\}"). Equivalence by math-verify; then, if set, numerically within
             ``rel_tol`` / ``abs_tol`` (floats, default 0). Options also ``timeout_seconds``
             (int, default 5; main thread only, see ``math_answer.py``) and ``max_answer_chars``
             (int, default 400). Details: ``{"reason": "correct" | "not_equivalent" |
             "no_answer_found" | "unparseable" | "answer_too_long" | "timeout" | "error",
             "parsed": str}`` (``parsed``: how the answer was read, when it was).
    regex    The pattern is ``verifier_config["pattern"]`` or ``reference["pattern"]``. Options:
             ``pattern`` (str | None), ``full_match`` (bool, default True; False = search),
             ``flags`` (str of "imsx", default ""), ``search_whole_response`` (bool, default
             False: match the extracted answer). Details: ``{"reason": "correct" | "no_match" |
             "no_answer_found"}``.
    multiple_choice  ``reference["answer"]`` is a letter ("B"). Options: ``choices`` (list of
             str, default []: letters A-Z allowed; given: only its letters, and a choice's text
             counts as choosing it). Details: ``{"reason": "correct" | "wrong_choice" |
             "no_choice_found" | "invalid_choice", "chosen": "C" | None}``.
    code     ``reference = {"tests": str, "entry_point": str (optional), "prompt_prefix": str
             (optional)}``; runs in ``models_gpu.sandbox``. Options: ``timeout_seconds`` (float,
             default 10), ``memory_mb`` (int, default 512). Details: ``{"reason": "correct" |
             "tests_failed" | "load_error" | "exited_early" | "timeout" | "memory_limit" |
             "file_size_limit" | "open_files_limit" | "killed_by_signal" | "bad_report" |
             "crashed" | "no_code_found",
             "tests_passed": int, "tests_total": int, "failures": [{"test", "error"}] (first
             3), "load_error", "notes", "stdout_tail", "stderr_tail", "sandbox": "bubblewrap" |
             "none" (``DIALAB_SANDBOX=none``: run without a sandbox)}``.
             Score: the fraction of tests passed when tests ran, else 0.
    maze     ``reference = {"grid": ["S..#", ".#.G", ...]}``; the response is moves ("R R D",
             "RRD", words, N/S/E/W) or "(row, col)" coordinates. No options. Details:
             ``{"reason": "correct" | "wall" | "out_of_bounds" | "not_adjacent" |
             "does_not_reach_goal" | "does_not_start_at_start" | "unparseable", "step": int |
             None (1-based, first bad move), "steps_taken", "position": [row, col] (last good
             cell), "distance_to_goal": int}``.
    code_guess  ``reference["answer"]`` is a digit string ("4821"). No options. Details:
             ``{"reason": "correct" | "wrong_code" | "no_code_found", "in_place": int | None,
             "misplaced": int | None}``.

Details never contain the reference answer: a teacher is shown them as private knowledge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from models_gpu.types import TaskSpec, Verdict
from models_gpu.verifiers.code_guess import verify_code_guess
from models_gpu.verifiers.code_tests import verify_code
from models_gpu.verifiers.exact import verify_exact
from models_gpu.verifiers.math_answer import verify_math
from models_gpu.verifiers.maze import verify_maze
from models_gpu.verifiers.multiple_choice import verify_multiple_choice
from models_gpu.verifiers.numeric import verify_numeric
from models_gpu.verifiers.pattern import verify_regex

# Every kind of models_gpu.spec.verifiers.VERIFIERS has its function here (a test checks).
_VERIFIERS: Mapping[str, Callable[[TaskSpec, str], Verdict]] = {
    "exact": verify_exact,
    "numeric": verify_numeric,
    "math": verify_math,
    "regex": verify_regex,
    "multiple_choice": verify_multiple_choice,
    "code": verify_code,
    "maze": verify_maze,
    "code_guess": verify_code_guess,
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
