"""Q-priming's rewrite: which turns become questions, how often, and what the writer sees."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

import pytest

from models_gpu.spec.training import TrainingDialogue
from models_gpu.training.qpriming import (
    REPLACED_ATTEMPT_KEY,
    WRITER_INSTRUCTION,
    WRITER_MAX_NEW_TOKENS,
    QuestionRequest,
    dialogue_rng,
    model_writer,
    prime_dialogue,
    prime_dialogues,
    replacement_probability,
    template_writer,
    writer_request,
)
from models_gpu.types import Generation, GenerationRequest
from tests.models_gpu.training.dialogues import didactic, self_critique, sharded, turn

ASK = template_writer("Could you tell me more?")


def failing(rounds: int) -> TrainingDialogue:
    """A failed attempt in each of rounds 1..``rounds``, each answered by the teacher."""
    turns = []
    for r in range(1, rounds + 1):
        turns.append(turn(len(turns), r, "student", "attempt", f"wrong {r}", is_correct=False))
        turns.append(turn(len(turns), r, "teacher", "feedback", f"hint {r}"))
    return replace(didactic(), turns=tuple(turns))


def test_a_failed_attempt_in_round_t_becomes_a_question_with_probability_decay_to_the_t() -> None:
    rng = random.Random(11)
    draws = 4000
    replaced = [0] * 4
    for _ in range(draws):
        primed = prime_dialogue(failing(4), decay=0.75, rng=rng, write_question=ASK)
        for r in range(4):
            replaced[r] += primed.turns[2 * r].kind == "question"
    for r in range(4):
        assert replaced[r] / draws == pytest.approx(0.75 ** (r + 1), abs=0.03)
    assert replacement_probability(0.75, 2) == pytest.approx(0.5625)


def test_the_rewrite_is_seeded() -> None:
    def primed(seed: int) -> TrainingDialogue:
        return prime_dialogue(failing(6), decay=0.8, rng=random.Random(seed), write_question=ASK)

    assert primed(3) == primed(3)
    assert any(primed(3) != primed(seed) for seed in range(4, 10))


def test_only_failed_attempts_are_replaced_and_the_rest_is_kept() -> None:
    for dialogue in (didactic(), sharded(), self_critique()):
        primed = prime_dialogue(dialogue, decay=1.0, rng=random.Random(0), write_question=ASK)
        for before, after in zip(dialogue.turns, primed.turns, strict=True):
            failed = before.role == "student" and before.kind == "attempt"
            failed = failed and before.is_correct is False
            if failed:
                assert (after.kind, after.text, after.is_correct) == (
                    "question",
                    "Could you tell me more?",
                    None,
                )
                assert after.private_context == {REPLACED_ATTEMPT_KEY: before.text}
                assert (after.index, after.round) == (before.index, before.round)
            else:
                assert after == before
    # The teacher's feedback stays as the answer to the question.
    primed = prime_dialogue(didactic(), decay=1.0, rng=random.Random(0), write_question=ASK)
    assert [t.kind for t in primed.turns] == [
        "question", "feedback", "question", "feedback", "attempt"
    ]  # fmt: skip


def test_the_question_writer_sees_the_private_reference() -> None:
    seen: list[QuestionRequest] = []

    def writer(requests: Sequence[QuestionRequest]) -> list[str]:
        seen.extend(requests)
        return [f"Is it about {r.dialogue.reference['answer']} ({r.position})?" for r in requests]

    primed = prime_dialogue(didactic(), decay=1.0, rng=random.Random(0), write_question=writer)
    assert [request.attempt.text for request in seen] == ["The answer is 18.", "The answer is 20."]
    assert [primed.turns[0].text, primed.turns[2].text] == [
        "Is it about 19 (0)?",
        "Is it about 19 (2)?",
    ]
    filled = template_writer("Round {round} of {task_prompt}: near {reference.answer}?")
    assert filled(seen[1:]) == ["Round 2 of What is 12 + 7?: near 19?"]
    with pytest.raises(ValueError, match=r"unknown placeholder\(s\) in the question template"):
        template_writer("What about {answer}?")
    with pytest.raises(ValueError, match="no key 'solution'"):
        template_writer("{reference.solution}")(seen[:1])


def numbered(count: int) -> list[TrainingDialogue]:
    return [replace(failing(3), dialogue_id=i) for i in range(1, count + 1)]


def test_a_stream_is_primed_as_each_dialogue_alone_with_one_writer_call_per_chunk() -> None:
    calls: list[int] = []

    def writer(requests: Sequence[QuestionRequest]) -> list[str]:
        calls.append(len(requests))
        return [f"q{r.dialogue.dialogue_id}.{r.position}" for r in requests]

    alone = [
        prime_dialogue(d, decay=0.7, rng=dialogue_rng(5, d.dialogue_id), write_question=writer)
        for d in numbered(10)
    ]
    calls.clear()
    streamed = list(
        prime_dialogues(numbered(10), decay=0.7, seed=5, write_question=writer, chunk=4)
    )
    assert streamed == alone
    assert len(calls) == 3  # chunks of 4, 4 and 2 dialogues, a call each
    assert sum(calls) == sum(t.kind == "question" for d in alone for t in d.turns) > 0

    def short(requests: Sequence[QuestionRequest]) -> list[str]:
        return ["one question"]

    with pytest.raises(ValueError, match=r"returned 1 questions for \d+ attempts"):
        list(prime_dialogues(numbered(4), decay=1.0, seed=5, write_question=short))


class Recorder:
    """A generator that answers from a script and keeps what it was asked."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.calls: list[list[GenerationRequest]] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.calls.append(list(requests))
        return [Generation(self.replies[i], 1, 1, 0.0) for i in range(len(requests))]


def test_a_model_writer_asks_once_per_call_with_the_reference_and_the_attempt_as_private() -> None:
    model = Recorder(["  Do you mean 12 plus 7?  ", "   "])
    write = model_writer(model, seed=3, fallback=ASK)
    dialogue = didactic()
    requests = [QuestionRequest(dialogue, 0), QuestionRequest(dialogue, 2)]
    assert write(requests) == [
        "Do you mean 12 plus 7?",
        "Could you tell me more?",
    ]  # blank: template
    (asked,) = model.calls
    first, second = asked
    # What the student saw before the attempt, then the instruction; nothing private in them.
    assert [m.role for m in first.messages] == ["system", "user", "user"]
    assert first.messages[-1].content == WRITER_INSTRUCTION
    assert [m.content for m in second.messages[1:4]] == [
        "What is 12 + 7?", "The answer is 18.", dialogue.turns[1].text,
    ]  # fmt: skip
    assert first.private_context == {
        "reference": {"answer": "19"},
        "failed_attempt": "The answer is 18.",
    }
    assert not any("19" in m.content for m in first.messages[1:])
    assert first.seed != second.seed and writer_request(requests[0], seed=3) == first
    assert first.max_new_tokens == WRITER_MAX_NEW_TOKENS
