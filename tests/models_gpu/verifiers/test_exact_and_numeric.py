from __future__ import annotations

from typing import Any

import pytest

from models_gpu.generators.arithmetic import arithmetic_tasks
from models_gpu.types import TaskSpec
from models_gpu.verifiers import VERIFIER_KINDS, UnknownVerifier, verify


def numeric_task(answer: Any, **config: Any) -> TaskSpec:
    return TaskSpec(1, "What is it?", {"answer": answer}, "numeric", config)


def exact_task(answer: str, **config: Any) -> TaskSpec:
    return TaskSpec(2, "Name it.", {"answer": answer}, "exact", config)


def test_every_kind_of_the_spec_has_a_verifier() -> None:
    from models_gpu.spec.verifiers import VERIFIERS

    assert tuple(VERIFIERS) == VERIFIER_KINDS


def test_unknown_kind_is_a_value_error_naming_the_known_kinds() -> None:
    task = TaskSpec(3, "?", {"answer": "1"}, "nonsense")
    with pytest.raises(UnknownVerifier, match="exact, numeric, math"):
        verify(task, "1")
    assert issubclass(UnknownVerifier, ValueError)


class TestNumeric:
    def test_correct(self) -> None:
        verdict = verify(numeric_task("565"), "Adding the columns... The answer is 565.")
        assert (verdict.correct, verdict.score, verdict.extracted) == (True, 1.0, "565")
        assert verdict.details == {"reason": "correct", "direction": None, "relative_error": 0.0}

    @pytest.mark.parametrize("reference", [0.75, "0.75", "3/4"])
    @pytest.mark.parametrize("response", ["The answer is 3/4.", r"\boxed{\frac{3}{4}}", "0.75"])
    def test_fractions_equal_decimals(self, reference: Any, response: str) -> None:
        assert verify(numeric_task(reference), response).correct

    def test_thousands_separators(self) -> None:
        assert verify(numeric_task(-1234), "The answer is -1,234.").correct

    def test_too_high(self) -> None:
        verdict = verify(numeric_task(500), "The answer is 565.")
        assert (verdict.correct, verdict.score, verdict.extracted) == (False, 0.0, "565")
        assert verdict.details == {
            "reason": "wrong_value",
            "direction": "too_high",
            "relative_error": 0.13,
        }

    def test_a_near_miss_has_a_relative_error_above_zero(self) -> None:
        assert verify(numeric_task(391), "The answer is 390.").details["relative_error"] == 0.00256

    @pytest.mark.parametrize(
        ("response", "correct"), [("3.91e2", True), ("3.91E+2", True), ("4e2", False)]
    )
    def test_scientific_notation_is_one_number(self, response: str, correct: bool) -> None:
        verdict = verify(numeric_task(391), f"The answer is {response}.")
        assert (verdict.correct, verdict.extracted) == (correct, response)

    def test_too_low(self) -> None:
        verdict = verify(numeric_task("-20"), "The answer is -22.")
        assert verdict.details["direction"] == "too_low"
        assert verdict.details["relative_error"] == 0.1

    def test_zero_reference_has_no_relative_error(self) -> None:
        verdict = verify(numeric_task(0), "The answer is 3.")
        assert verdict.details == {
            "reason": "wrong_value",
            "direction": "too_high",
            "relative_error": None,
        }

    def test_no_answer(self) -> None:
        verdict = verify(numeric_task(5), "   ")
        assert verdict.extracted is None
        assert verdict.details["reason"] == "no_answer_found"

    def test_not_a_number(self) -> None:
        verdict = verify(numeric_task(5), "I don't know.")
        assert verdict.extracted == "I don't know"
        assert verdict.details == {
            "reason": "not_a_number",
            "direction": None,
            "relative_error": None,
        }

    def test_tolerances(self) -> None:
        assert not verify(numeric_task(100), "100.5").correct
        assert verify(numeric_task(100, rel_tol=0.01), "100.5").correct
        assert verify(numeric_task(100, abs_tol=1), "99.2").correct
        assert not verify(numeric_task(100, abs_tol=1), "98.9").correct

    def test_huge_answer_still_yields_plain_details(self) -> None:
        verdict = verify(numeric_task(7), "The answer is " + "9" * 400)
        assert verdict.details == {
            "reason": "wrong_value",
            "direction": "too_high",
            "relative_error": None,
        }

    @pytest.mark.parametrize("reference", ["seven", True, None, float("nan"), "3/0"])
    def test_bad_reference_fails_loudly(self, reference: Any) -> None:
        with pytest.raises(ValueError, match="not a number"):
            verify(numeric_task(reference), "7")

    def test_misspelt_option_fails_loudly(self) -> None:
        with pytest.raises(ValueError, match="reltol"):
            verify(numeric_task(7, reltol=0.1), "7")

    def test_missing_answer_key_fails_loudly(self) -> None:
        with pytest.raises(ValueError, match="'answer'"):
            verify(TaskSpec(1, "?", {"solution": "7"}, "numeric"), "7")


class TestExact:
    @pytest.mark.parametrize(
        "response",
        [
            "The answer is Paris.",
            "Answer:  paris",
            "PARIS",
            r"\boxed{ Paris }",
            "Paris!",
            "Paris...",
        ],
    )
    def test_normalised_match(self, response: str) -> None:
        verdict = verify(exact_task("Paris"), response)
        assert verdict.correct and verdict.details == {"reason": "correct"}

    def test_a_final_question_mark_is_not_an_answer_given(self) -> None:
        assert not verify(exact_task("Paris"), "Paris?").correct
        assert verify(exact_task("Yahoo!"), "Yahoo").correct, "the reference is read the same way"

    def test_collapses_inner_whitespace(self) -> None:
        assert verify(exact_task("New York"), "The answer is New   York.").correct

    def test_case_sensitive_option(self) -> None:
        assert not verify(exact_task("Paris", case_sensitive=True), "paris").correct
        assert verify(exact_task("Paris", case_sensitive=True), "Paris.").correct

    def test_mismatch(self) -> None:
        verdict = verify(exact_task("Paris"), "The answer is Lyon.")
        assert (verdict.correct, verdict.extracted) == (False, "Lyon")
        assert verdict.details == {"reason": "mismatch"}

    def test_no_answer(self) -> None:
        verdict = verify(exact_task("Paris"), "")
        assert verdict.details == {"reason": "no_answer_found"}


def test_numeric_details_never_contain_the_reference() -> None:
    """Over many tasks and wrong answers, details keep their documented shape, no answer."""
    for index, task in enumerate(arithmetic_tasks(300, seed=5, digits=2)):
        answer = int(task["answer"])
        spec = numeric_task(task["answer"])
        for response in (f"{answer + 1 + index % 7}", f"{answer - 3}", "no idea", f"{answer}"):
            details = verify(spec, f"The answer is {response}.").details
            assert set(details) == {"reason", "direction", "relative_error"}
            assert details["direction"] in (None, "too_high", "too_low")
            assert details["relative_error"] is None or isinstance(details["relative_error"], float)
            assert task["answer"] not in {str(value) for value in details.values()}
