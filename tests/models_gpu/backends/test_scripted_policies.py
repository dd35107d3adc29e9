from __future__ import annotations

import time
from typing import Any

import pytest

from models_gpu.backends import load_generator
from models_gpu.backends.shard_revealer import NOTHING_TO_ADD
from models_gpu.backends.sharded_student import arithmetic_shards
from models_gpu.spec.backends import SCRIPTED_POLICIES
from models_gpu.spec.run import RoleSpec
from models_gpu.types import GenerationRequest, Message


def student_reply(messages: list[tuple[str, str]], *, seed: int = 0, **params: Any) -> str:
    student = load_generator(RoleSpec("scripted", "sharded-student", params))
    request = GenerationRequest(tuple(Message(r, c) for r, c in messages), seed=seed)  # type: ignore[arg-type]
    [generation] = student.generate([request])
    return generation.text


def test_arithmetic_shards() -> None:
    assert arithmetic_shards(47, "+", 38) == (
        "I need a sum of two numbers.",
        "The first number is 47.",
        "The second number is 38.",
    )
    assert arithmetic_shards(9, "*", 3)[0] == "I need a product of two numbers."
    with pytest.raises(ValueError, match="symbol"):
        arithmetic_shards(1, "/", 2)


def test_the_sharded_student_asks_about_what_is_missing() -> None:
    shards = arithmetic_shards(47, "-", 38)
    asks: dict[str, Any] = {"ask_probability": 1.0}
    assert student_reply([("user", shards[0])], **asks) == "What is the first number?"
    assert student_reply([("user", "Here are 3 and 4.")], **asks) == (
        "What should I do with the numbers?"
    )
    so_far = [("user", shards[0]), ("assistant", "What is the first number?"), ("user", shards[1])]
    assert student_reply(so_far, **asks) == "What is the second number?"
    everything = [*so_far, ("assistant", "What is the second number?"), ("user", shards[2])]
    assert student_reply(everything, **asks) == "The answer is 9."
    assert student_reply([("system", "Be brief."), ("user", "What is 6 * 7?")]) == (
        "The answer is 42."
    )


def test_the_sharded_student_guesses_early_when_it_does_not_ask() -> None:
    shards = arithmetic_shards(47, "+", 38)
    early = student_reply([("user", shards[0]), ("assistant", "?"), ("user", shards[1])],
                          ask_probability=0.0)  # fmt: skip
    assert early.endswith("The answer is 47.")


def test_the_sharded_student_stops_asking_when_nothing_new_comes() -> None:
    stuck = [("user", "I need a sum of two numbers."), ("assistant", "What is the first number?"),
             ("user", NOTHING_TO_ADD)]  # fmt: skip
    assert "The answer is" in student_reply(stuck, ask_probability=1.0)


def test_the_sharded_student_is_deterministic_by_seed_and_can_err() -> None:
    shards = arithmetic_shards(47, "+", 38)
    replies = {student_reply([("user", shards[0])], seed=seed) for seed in range(40)}
    assert "What is the first number?" in replies and len(replies) > 5  # questions and guesses
    assert student_reply([("user", shards[0])], seed=7) == student_reply(
        [("user", shards[0])], seed=7
    )
    full = [("user", "I need a sum of 47 and 38.")]
    answers = {student_reply(full, seed=seed, final_accuracy=0.5) for seed in range(40)}
    assert "The answer is 85." in answers and len(answers) > 2


@pytest.mark.parametrize(
    ("params", "message"),
    [({"ask": 1}, r"unknown parameter\(s\) ask"), ({"ask_probability": 2}, "at most 1")],
)
def test_the_sharded_student_checks_its_params(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_generator(RoleSpec("scripted", "sharded-student", params))


def test_the_shard_revealer_says_the_next_shard_verbatim() -> None:
    revealer = load_generator(RoleSpec("scripted", "shard-revealer"))
    with_shard = GenerationRequest(
        (Message("assistant", "I need a sum."),),
        seed=0,
        private_context={
            "unrevealed_shards": ["The first is 4.", "x"],
            "next_shard": "The first is 4.",
        },
    )
    done = GenerationRequest(
        (), seed=0, private_context={"unrevealed_shards": [], "next_shard": None}
    )
    assert [g.text for g in revealer.generate([with_shard, done])] == [
        "The first is 4.",
        NOTHING_TO_ADD,
    ]
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) verbose; known: delay_ms"):
        load_generator(RoleSpec("scripted", "shard-revealer", {"verbose": True}))


@pytest.mark.parametrize("policy", SCRIPTED_POLICIES)
def test_every_policy_can_be_slowed_down(policy: str) -> None:
    generator = load_generator(RoleSpec("scripted", policy, {"delay_ms": 60}))
    request = GenerationRequest((Message("user", "What is 1 + 2?"),), seed=0)
    started = time.perf_counter()
    generator.generate([request, request, request])  # one sleep per call, not per request
    elapsed = time.perf_counter() - started
    assert 0.06 <= elapsed < 0.5


@pytest.mark.parametrize("delay", ["soon", -5, float("inf"), None])
def test_a_bad_delay_is_refused(delay: object) -> None:
    with pytest.raises(ValueError, match="delay_ms"):
        load_generator(RoleSpec("scripted", "arithmetic-student", {"delay_ms": delay}))
