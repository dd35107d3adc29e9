from __future__ import annotations

from typing import Any

import pytest

from models_gpu.classify import (
    MAX_QUESTION_WORDS,
    Classification,
    answer_found,
    classify_reply,
    is_question_like,
    judge_request,
    parse_judge_reply,
)
from models_gpu.spec.templates import DEFAULT_TEMPLATES
from models_gpu.types import TaskSpec, Verdict
from models_gpu.verifiers import verify


def task(kind: str = "numeric", **reference: Any) -> TaskSpec:
    return TaskSpec(
        task_id=1,
        prompt="What is 47 + 38?",
        reference=reference or {"answer": "85"},
        verifier_kind=kind,
    )


def classify(reply: str, spec: TaskSpec | None = None) -> Classification:
    spec = spec or task()
    return classify_reply(spec, reply, verify(spec, reply))


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ("The answer is 84.", "attempt"),
        ("47 + 38 = 85", "attempt"),  # last-line fallback: the verifier reads a number
        ("\\boxed{86}", "attempt"),
        ("What is the second number?", "question"),
        ("Could you tell me which operation you mean", "question"),  # interrogative, no "?"
        ("**What** do you mean by a sum?", "question"),
        ("I am not sure how to go on.", "other"),
        ("", "other"),
        ("Let me think about this carefully before answering.", "other"),
    ],
)
def test_rules_for_clear_cases(reply: str, kind: str) -> None:
    assert classify(reply) == Classification(kind, ambiguous=False)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reply", "fallback"),
    [
        ("Is it 85?", "question"),  # an answer and a question, nothing explicit: a question
        ("The answer is 84. Is that right?", "attempt"),  # explicit answer: an attempt
        ("Do you mean 47 + 38? Answer: 85", "attempt"),
    ],
)
def test_an_answer_and_a_question_is_ambiguous(reply: str, fallback: str) -> None:
    assert classify(reply) == Classification(fallback, ambiguous=True)  # type: ignore[arg-type]


def test_a_long_reply_ending_in_a_question_is_not_question_like() -> None:
    long_reply = "word " * MAX_QUESTION_WORDS + "what next?"
    assert not is_question_like(long_reply)
    assert classify(long_reply) == Classification("other", ambiguous=False)
    assert is_question_like("word " * (MAX_QUESTION_WORDS - 3) + "what next?")


def test_exact_tasks_read_any_last_line_so_only_questions_stand_out() -> None:
    exact = task("exact", answer="Paris")
    assert classify("Paris", exact).kind == "attempt"
    assert classify("I think it is Lyon.", exact).kind == "attempt"
    # The exact verifier "extracts" the question itself: both signals, the rule says question.
    assert classify("Which country do you mean?", exact) == Classification("question", True)


def test_multiple_choice_without_a_letter_is_no_attempt() -> None:
    choice = task("multiple_choice", answer="B")
    assert classify("The answer is (C).", choice).kind == "attempt"
    assert classify("Which of these is about France?", choice).kind == "question"


def test_code_needs_a_fence_or_code_that_loads() -> None:
    spec = task("code", tests="assert add(1, 2) == 3", entry_point="add")
    prose = "What should the function return for negative numbers?"
    verdict = Verdict(False, 0.0, prose, {"reason": "load_error"})
    assert not answer_found(spec, prose, verdict)
    assert classify_reply(spec, prose, verdict).kind == "question"
    assert classify_reply(spec, "I would rather not.", verdict).kind == "other"
    fenced = "```python\ndef add(a, b) -> int\n```"  # a syntax error, but clearly code
    assert classify_reply(spec, fenced, verdict).kind == "attempt"
    failing = Verdict(False, 0.0, "def add(a, b): return a", {"reason": "tests_failed"})
    assert classify_reply(spec, "def add(a, b): return a", failing).kind == "attempt"
    missing = Verdict(False, 0.0, None, {"reason": "no_code_found"})
    assert classify_reply(spec, "   ", missing).kind == "other"


def test_an_accepted_reply_always_counts_as_found() -> None:
    spec = task()
    assert answer_found(spec, "Is it 85?", Verdict(True, 1.0, "Is it 85?", {"reason": "correct"}))


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("attempt", "attempt"),
        ("Question", "question"),
        ("  'other'.", "other"),
        ("**attempt**", "attempt"),
        ("attempt, I think", None),
        ("It is a question.", None),
        ("", None),
        ("questions", None),
    ],
)
def test_judge_replies_are_parsed_strictly(reply: str, label: str | None) -> None:
    assert parse_judge_reply(reply) == label


def test_judge_request_shows_the_reply_and_what_it_answered() -> None:
    request = judge_request(context="The first number is 47.", reply="Is it 85?", seed=3)
    assert request.seed == 3 and request.max_new_tokens <= 8
    assert request.messages[0].role == "system"
    assert request.messages[0].content == DEFAULT_TEMPLATES["judge_turn_kind"]
    assert "The first number is 47." in request.messages[1].content
    assert "Is it 85?" in request.messages[1].content
    no_system = judge_request(context="c", reply="r", seed=0, template="")
    assert [m.role for m in no_system.messages] == ["user"]
