"""``math``: the extracted answer is mathematically equivalent to ``reference["answer"]``.

Equivalence is math-verify's (numbers, fractions, LaTeX, symbolic expressions, sets, intervals),
with optional numeric slack. math-verify bounds its sympy work with ``signal.alarm``, which
raises in any thread but the main one (the Django dev server, test threads): there we switch
its timeouts off and bound the work by the answer's length instead. Nothing here raises for a
bad answer: a parse failure or a timeout is a wrong answer with a reason.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from typing import Any

from models_gpu.types import TaskSpec, Verdict
from models_gpu.verifiers.extraction import extract_answer
from models_gpu.verifiers.settings import reference_answer, verifier_settings

# It warns once per process that timeouts are off; that is deliberate here, not news.
logging.getLogger("math_verify").setLevel(logging.ERROR)


def verify_math(task: TaskSpec, response: str) -> Verdict:
    settings = verifier_settings(task)
    timeout = _timeout(settings["timeout_seconds"])
    gold = _parse(str(reference_answer(task)), timeout)
    if not gold:
        raise ValueError(f"task {task.task_id}: math-verify cannot parse the reference answer")
    extracted = extract_answer(response)
    if extracted is None:
        return Verdict(False, 0.0, None, {"reason": "no_answer_found"})
    if len(extracted) > int(settings["max_answer_chars"]):
        return Verdict(False, 0.0, extracted[:200], {"reason": "answer_too_long"})
    try:
        parsed = _parse(extracted, timeout)
        if not parsed:
            return Verdict(False, 0.0, extracted, {"reason": "unparseable"})
        correct = _equivalent(gold, parsed, timeout) or _close(
            gold, parsed, float(settings["rel_tol"]), float(settings["abs_tol"])
        )
    except _TimeoutError:
        return Verdict(False, 0.0, extracted, {"reason": "timeout"})
    except Exception as error:  # sympy raises a zoo of types on odd input
        return Verdict(False, 0.0, extracted, {"reason": "error", "error": type(error).__name__})
    details = {"reason": "correct" if correct else "not_equivalent", "parsed": str(parsed[-1])}
    return Verdict(correct, float(correct), extracted, details)


def _timeout(configured: Any) -> int | None:
    """Seconds for math-verify's ``signal.alarm`` in the main thread; None (no alarm) elsewhere."""
    if threading.current_thread() is not threading.main_thread():
        return None
    seconds = int(configured)
    return seconds if seconds > 0 else None


@functools.lru_cache(maxsize=4096)
def _parse(text: str, timeout: int | None) -> tuple[Any, ...]:
    """math-verify's parse of ``text`` read as LaTeX math ("$...$" also reads plain "3/4")."""
    # Imported here: sympy costs about a second at import time.
    from math_verify import parse  # type: ignore[import-untyped]

    wrapped = text if "$" in text or "\\boxed" in text else f"${text}$"
    return tuple(parse(wrapped, parsing_timeout=timeout, raise_on_error=False))


def _equivalent(gold: tuple[Any, ...], parsed: tuple[Any, ...], timeout: int | None) -> bool:
    from math_verify import verify

    return bool(verify(list(gold), list(parsed), timeout_seconds=timeout))


def _close(gold: tuple[Any, ...], parsed: tuple[Any, ...], rel_tol: float, abs_tol: float) -> bool:
    if rel_tol == 0 and abs_tol == 0:
        return False
    expected, value = _as_float(gold[0]), _as_float(parsed[0])
    if expected is None or value is None:
        return False
    return math.isclose(value, expected, rel_tol=rel_tol, abs_tol=abs_tol)


def _as_float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


try:
    from math_verify.errors import (  # type: ignore[import-untyped]
        TimeoutException as _TimeoutError,
    )
except ImportError:  # pragma: no cover - older math-verify

    class _TimeoutError(BaseException):  # type: ignore[no-redef]
        pass
