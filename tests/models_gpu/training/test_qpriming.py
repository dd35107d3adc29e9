"""Q-priming's rewrite: which turns become questions, how often, and what the writer sees."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from models_gpu.spec.training import TrainingDialogue
from models_gpu.training.qpriming import (
    REPLACED_ATTEMPT_KEY,
    QuestionRequest,
    prime_dialogue,
    replacement_probability,
    template_writer,
)
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

    def writer(request: QuestionRequest) -> str:
        seen.append(request)
        return f"Is it about {request.dialogue.reference['answer']}?"

    primed = prime_dialogue(didactic(), decay=1.0, rng=random.Random(0), write_question=writer)
    assert [request.attempt.text for request in seen] == ["The answer is 18.", "The answer is 20."]
    assert primed.turns[0].text == "Is it about 19?"
    filled = template_writer("Round {round} of {task_prompt}: near {reference.answer}?")
    assert filled(seen[1]) == "Round 2 of What is 12 + 7?: near 19?"
    with pytest.raises(ValueError, match=r"unknown placeholder\(s\) in the question template"):
        template_writer("What about {answer}?")
    with pytest.raises(ValueError, match="no key 'solution'"):
        template_writer("{reference.solution}")(seen[0])
