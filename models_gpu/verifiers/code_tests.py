"""``code``: the response's code passes the task's unit tests, run in ``models_gpu.sandbox``.

Reference: ``{"tests": str, "entry_point": str (optional), "prompt_prefix": str (optional)}``.
Tests are asserts (top-level, or in a loop or block: one test each), ``test_*`` functions, or
a HumanEval ``check(candidate)`` (needs the entry point). The code is the last fenced python
block of the response, else the whole response; a ``prompt_prefix`` (HumanEval's signature and
docstring) goes before it, so a body-only completion and a complete function both work. The
prefix is the task's own code: it also runs on the tests' side, so the tests call the prompt's
helpers (HumanEval/38's ``encode_cyclic``), never the candidate's versions of them. The
details say which test failed and how: the teacher of a coding task is meant to see failing
assertions.
"""

from __future__ import annotations

from typing import Any

from models_gpu.sandbox import SandboxLimits, SandboxReport, run_tests
from models_gpu.types import TaskSpec, Verdict
from models_gpu.verifiers.extraction import extract_code
from models_gpu.verifiers.settings import verifier_settings

_SHOWN_FAILURES = 3
_SHOWN_CODE_CHARS = 8000


def verify_code(task: TaskSpec, response: str) -> Verdict:
    settings = verifier_settings(task)
    limits = SandboxLimits(
        timeout_seconds=float(settings["timeout_seconds"]), memory_mb=int(settings["memory_mb"])
    )
    tests = task.reference.get("tests")
    if not isinstance(tests, str) or not tests.strip():
        raise ValueError(f"task {task.task_id}: the reference has no 'tests' string")
    entry_point = task.reference.get("entry_point")
    prefix = str(task.reference.get("prompt_prefix") or "")
    code = extract_code(response)
    if not code.strip():
        return Verdict(False, 0.0, None, {"reason": "no_code_found"})
    report = run_tests(
        prefix + code,
        tests,
        entry_point=str(entry_point) if entry_point else None,
        task_code=prefix,
        limits=limits,
    )
    return Verdict(report.passed, _score(report), code[:_SHOWN_CODE_CHARS], code_details(report))


def code_details(report: SandboxReport) -> dict[str, Any]:
    failures = [
        {"test": test.name, "error": test.error} for test in report.tests if not test.passed
    ]
    return {
        "reason": "correct" if report.passed else report.outcome,
        "tests_passed": sum(test.passed for test in report.tests),
        "tests_total": len(report.tests),
        "failures": failures[:_SHOWN_FAILURES],
        "load_error": report.load_error,
        "notes": list(report.notes[:3]),
        "stdout_tail": report.stdout_tail[-500:],
        "stderr_tail": report.stderr_tail[-500:],
        "sandbox": report.isolation,
    }


def _score(report: SandboxReport) -> float:
    if report.passed:
        return 1.0
    if report.outcome != "tests_failed" or not report.tests:
        return 0.0
    return round(sum(test.passed for test in report.tests) / len(report.tests), 4)
