from __future__ import annotations

import threading
from typing import Any

import pytest

from models_gpu.types import TaskSpec, Verdict
from models_gpu.verifiers import verify
from models_gpu.verifiers.extraction import extract_code


def check(kind: str, reference: dict[str, Any], response: str, **config: Any) -> Verdict:
    return verify(TaskSpec(1, "?", reference, kind, config), response)


class TestMath:
    @pytest.mark.parametrize(
        ("reference", "response"),
        [
            ("\\frac{1}{2}", "The answer is 0.5."),
            ("1/2", "\\boxed{\\frac{1}{2}}"),
            ("(x+1)^2", "Expanding gives\nx^2 + 2x + 1"),
            ("\\sqrt{2}/2", "The answer is $\\frac{\\sqrt{2}}{2}$."),
            ("\\{1,2\\}", "\\boxed{\\{2, 1\\}}"),
            ("1234", "Answer: 1,234"),
        ],
    )
    def test_equivalent_forms(self, reference: str, response: str) -> None:
        verdict = check("math", {"answer": reference}, response)
        assert verdict.correct, verdict

    def test_not_equivalent(self) -> None:
        verdict = check("math", {"answer": "(x+1)^2"}, "The answer is x^2+1.")
        assert not verdict.correct
        assert verdict.details["reason"] == "not_equivalent"
        assert "(x+1)" not in str(verdict.details)

    def test_tolerance(self) -> None:
        assert not check("math", {"answer": "\\pi"}, "The answer is 3.14.").correct
        assert check("math", {"answer": "\\pi"}, "The answer is 3.14.", rel_tol=0.01).correct

    @pytest.mark.parametrize("response", ["The answer is ???", "The answer is }{", ""])
    def test_garbage_is_a_wrong_answer_not_a_crash(self, response: str) -> None:
        verdict = check("math", {"answer": "2"}, response)
        assert not verdict.correct
        assert verdict.details["reason"] in {"unparseable", "no_answer_found", "not_equivalent"}

    def test_too_long(self) -> None:
        verdict = check("math", {"answer": "2"}, "The answer is " + "1+" * 500 + "1")
        assert verdict.details["reason"] == "answer_too_long"

    def test_works_outside_the_main_thread(self) -> None:
        verdicts: list[Verdict] = []
        thread = threading.Thread(
            target=lambda: verdicts.append(check("math", {"answer": "1/3"}, "\\boxed{2/6}"))
        )
        thread.start()
        thread.join()
        assert verdicts and verdicts[0].correct

    def test_unknown_option(self) -> None:
        with pytest.raises(ValueError, match="reltol"):
            check("math", {"answer": "1"}, "1", reltol=0.1)


class TestRegex:
    def test_full_match_from_config(self) -> None:
        assert check("regex", {}, "The answer is abc123.", pattern=r"[a-z]+\d+").correct
        assert not check("regex", {}, "The answer is abc123x.", pattern=r"[a-z]+\d+").correct

    def test_search_with_flags_from_reference(self) -> None:
        verdict = check(
            "regex", {"pattern": "paris"}, "It is Paris, France.", full_match=False, flags="i"
        )
        assert verdict.correct and verdict.details == {"reason": "correct"}

    def test_bad_flag_and_missing_pattern(self) -> None:
        with pytest.raises(ValueError, match="flag"):
            check("regex", {"pattern": "a"}, "a", flags="q")
        with pytest.raises(ValueError, match="pattern"):
            check("regex", {}, "a")


class TestMultipleChoice:
    @pytest.mark.parametrize(
        "response",
        ["B", "(B)", "B) Paris", "Answer: b", "The answer is (B).", "Paris", "\\boxed{B}"],
    )
    def test_forms(self, response: str) -> None:
        verdict = check(
            "multiple_choice", {"answer": "B"}, response, choices=["London", "Paris", "Rome"]
        )
        assert verdict.correct, verdict

    def test_wrong_and_invalid(self) -> None:
        choices = ["London", "Paris", "Rome"]
        wrong = check("multiple_choice", {"answer": "B"}, "The answer is C.", choices=choices)
        assert wrong.details == {"reason": "wrong_choice", "chosen": "C"}
        invalid = check("multiple_choice", {"answer": "B"}, "The answer is D.", choices=choices)
        assert invalid.details["reason"] == "invalid_choice"
        none = check("multiple_choice", {"answer": "B"}, "a cat sat", choices=choices)
        assert none.details["reason"] == "no_choice_found"


class TestCodeExtraction:
    def test_last_python_block_wins(self) -> None:
        text = "First:\n```python\nx = 1\n```\nBetter:\n```python\nx = 2\n```\n```text\nout\n```"
        assert extract_code(text) == "x = 2\n"

    def test_whole_text_without_fences(self) -> None:
        assert extract_code("def f():\n    return 1\n") == "def f():\n    return 1\n"


class TestCode:
    reference = {"tests": "assert add(2, 3) == 5\nassert add(0, 0) == 0\n", "entry_point": "add"}

    def test_fenced_solution_passes(self) -> None:
        verdict = check(
            "code", self.reference, "Here:\n```python\ndef add(a, b):\n    return a + b\n```"
        )
        assert verdict.correct and verdict.details["tests_passed"] == 2

    def test_failure_details_show_the_failing_assertion(self) -> None:
        verdict = check("code", self.reference, "def add(a, b):\n    return a * b\n")
        assert not verdict.correct and verdict.score == 0.5
        assert verdict.details["reason"] == "tests_failed"
        assert verdict.details["failures"][0]["test"] == "line 1: assert add(2, 3) == 5"

    def test_limits_come_from_the_config(self) -> None:
        verdict = check("code", self.reference, "while True:\n    pass\n", timeout_seconds=1)
        assert verdict.details["reason"] == "timeout"
        with pytest.raises(ValueError, match="timeout"):
            check("code", self.reference, "x", timeout=1)


class TestCodeGuess:
    def test_scores(self) -> None:
        verdict = check("code_guess", {"answer": "1234"}, "The answer is 1243.")
        assert verdict.details == {"reason": "wrong_code", "in_place": 2, "misplaced": 2}
        assert check("code_guess", {"answer": "0012"}, "My guess: 0012").correct
        assert (
            check("code_guess", {"answer": "1234"}, "no idea").details["reason"] == "no_code_found"
        )


class TestMaze:
    reference = {"grid": ["S.#", "..#", "#.G"]}

    @pytest.mark.parametrize(
        "response",
        [
            "The answer is R D D R.",
            "RDDR",
            "right, down, down, right",
            "(0,0) (0,1) (1,1) (2,1) (2,2)",
        ],
    )
    def test_correct_paths(self, response: str) -> None:
        assert check("maze", self.reference, response).correct

    @pytest.mark.parametrize(
        ("response", "reason", "step"),
        [
            ("R R", "wall", 2),
            ("U", "out_of_bounds", 1),
            ("R D", "does_not_reach_goal", None),
            ("(0,0) (1,1)", "not_adjacent", 1),
            ("I think we should go around", "unparseable", None),
        ],
    )
    def test_wrong_paths(self, response: str, reason: str, step: int | None) -> None:
        verdict = check("maze", self.reference, response)
        assert not verdict.correct
        assert (verdict.details["reason"], verdict.details["step"]) == (reason, step)
