"""The ``transformers`` backend on the tiny untrained house model: real tokenizer, chat template
and Llama forward passes. What the model says is noise, so these tests check batching, padding,
counts, seeding and plumbing; tests/models_gpu/house/test_house_model.py checks a trained one."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from models_gpu.backends import load_generator  # noqa: E402
from models_gpu.backends.prefix_cache import Row  # noqa: E402
from models_gpu.backends.prompting import PRIVATE_CONTEXT_HEADER  # noqa: E402
from models_gpu.backends.transformers_backend import (  # noqa: E402
    TransformersGenerator,
    load_transformers,
    parse_params,
)
from models_gpu.devices import resolve_device, resolve_dtype  # noqa: E402
from models_gpu.engine import run_dialogues  # noqa: E402
from models_gpu.spec.protocol import ProtocolSpec  # noqa: E402
from models_gpu.spec.run import RoleSpec  # noqa: E402
from models_gpu.types import DialogueJob, DialogueResult, GenerationRequest, Generator, Message  # noqa: E402

GREEDY = {"temperature": 0.0, "max_new_tokens": 8}


def request(*texts: str, seed: int = 0, **kwargs: Any) -> GenerationRequest:
    """A conversation that alternates user and assistant messages, starting with the user."""
    roles = ("user", "assistant")
    messages = tuple(Message(roles[i % 2], text) for i, text in enumerate(texts))  # type: ignore[arg-type]
    return GenerationRequest(messages=messages, seed=seed, **kwargs)


def generator(model_dir: Path, **params: Any) -> TransformersGenerator:
    return load_transformers(RoleSpec("transformers", str(model_dir), params))


MIXED = [
    request("What is 12 + 30?"),
    request("What is 7 * 8?", "The answer is 54.", "Not quite: 54 is too low. Try again.", seed=1),
    request("Hi", seed=2),
    request("What is 100 - 37? " * 6, seed=3),
]


def test_a_mixed_batch_gives_one_generation_per_request_in_order(tiny_model_dir: Path) -> None:
    model = generator(tiny_model_dir, **GREEDY)
    batched = model.generate(MIXED)
    alone = [model.generate([one])[0] for one in MIXED]
    assert len(batched) == len(MIXED)
    # Greedy and left-padded: each reply is what the request gets on its own.
    assert [g.text for g in batched] == [g.text for g in alone]
    assert [g.prompt_tokens for g in batched] == [g.prompt_tokens for g in alone]
    assert len({g.prompt_tokens for g in batched}) == len(MIXED)  # lengths really differ
    assert model.generate([]) == []


def test_left_padding_keeps_a_short_prompt_unchanged_beside_a_long_one(
    tiny_model_dir: Path,
) -> None:
    model = generator(tiny_model_dir, temperature=0.0, max_new_tokens=12)
    short = request("What is 2 + 3?")
    long = request("What is 2 + 3? Please answer carefully. " * 8, seed=5)
    alone = model.generate([short])[0]
    padded = model.generate([long, short, long])[1]
    assert padded.text == alone.text
    assert padded.completion_tokens == alone.completion_tokens


def test_token_counts_come_from_the_tokenizer(tiny_model_dir: Path) -> None:
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    model = generator(tiny_model_dir, **GREEDY)
    generations = model.generate(MIXED)
    for prompt, generation in zip(model.prompts(MIXED), generations, strict=True):
        assert generation.prompt_tokens == len(
            tokenizer(prompt, add_special_tokens=False).input_ids
        )
        assert 1 <= generation.completion_tokens <= GREEDY["max_new_tokens"]
        assert generation.latency_ms > 0
    # One generate call for the whole batch: every reply waited as long as the batch took.
    assert len({g.latency_ms for g in generations}) == 1


def test_completion_stops_at_the_first_end_of_sequence_token(tiny_model_dir: Path) -> None:
    model = generator(tiny_model_dir, **GREEDY)
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    words = tokenizer("The answer is 5.", add_special_tokens=False).input_ids
    end, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    prompt = Row(ids=list(range(7)), prefix=None, reused=0)
    stopped = model._generation([*words, end, pad, pad], prompt, latency_ms=1.0)
    assert stopped.text == "The answer is 5."
    assert stopped.completion_tokens == len(words) + 1  # the end token was generated too
    assert stopped.prompt_tokens == 7
    running = model._generation(words, prompt, latency_ms=1.0)
    assert running.completion_tokens == len(words)


def test_max_new_tokens_caps_every_reply_and_a_request_can_cap_it_further(
    tiny_model_dir: Path,
) -> None:
    model = generator(tiny_model_dir, temperature=1.0, max_new_tokens=5)
    replies = model.generate([request("Tell me a long story.", seed=s) for s in range(4)])
    assert all(1 <= g.completion_tokens <= 5 for g in replies)
    capped = model.generate(
        [request("Tell me a long story.", max_new_tokens=2), request("And another.", seed=1)]
    )
    assert capped[0].completion_tokens <= 2
    assert capped[1].completion_tokens <= 5


def test_private_context_reaches_the_prompt(tiny_model_dir: Path) -> None:
    model = generator(tiny_model_dir, **GREEDY)
    teacher_view = request(
        "What is 47 + 38?",
        "The answer is 84.",
        private_context={
            "reference": {"answer": "85"},
            "verdict_details": {"direction": "too_low"},
        },
    )
    public_view = request("What is 47 + 38?", "The answer is 84.")
    with_context, without = model.prompts([teacher_view, public_view])
    assert with_context.startswith("<|bos|><|system|>\n" + PRIVATE_CONTEXT_HEADER)
    assert '- reference: {"answer": "85"}' in with_context
    assert "too_low" in with_context
    assert PRIVATE_CONTEXT_HEADER not in without
    first, second = model.generate([teacher_view, public_view])
    assert first.prompt_tokens > second.prompt_tokens


def test_micro_batches_give_the_same_replies_as_one_call(tiny_model_dir: Path) -> None:
    whole = generator(tiny_model_dir, **GREEDY).generate(MIXED)
    split = generator(tiny_model_dir, micro_batch_size=2, **GREEDY).generate(MIXED)
    assert [g.text for g in split] == [g.text for g in whole]
    assert [g.prompt_tokens for g in split] == [g.prompt_tokens for g in whole]


def test_sampling_is_seeded_per_request(tiny_model_dir: Path) -> None:
    # On CPU in float32: on CUDA in bfloat16 the batch's shape changes the logits' low bits, and
    # the untrained tiny model's near-uniform logits then draw other tokens (seen on an H100;
    # docs/how-to/add-a-model.md).
    model = generator(
        tiny_model_dir, device="cpu", temperature=1.0, top_p=0.95, top_k=50, max_new_tokens=10
    )
    batch = [request("What is 12 + 30?", seed=seed) for seed in range(6)]
    first, again = model.generate(batch), model.generate(batch)
    assert [g.text for g in first] == [g.text for g in again]
    assert len({g.text for g in first}) > 1  # different seeds, different draws
    # A request draws the same reply whatever else is in the batch, and in any order.
    reordered = model.generate([MIXED[3], batch[4], MIXED[1], batch[2]])
    assert reordered[1].text == first[4].text
    assert reordered[3].text == first[2].text
    # The next turn of the same dialogue (more messages, same seed) draws afresh.
    assert len(first[0].text) > 0


def test_generators_on_one_checkpoint_share_the_model(tiny_model_dir: Path) -> None:
    student = generator(tiny_model_dir, temperature=0.7)
    teacher = generator(tiny_model_dir, temperature=0.0)
    assert student._loaded is teacher._loaded
    assert student.device.type == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"temprature": 0.5},
            r"unknown parameter\(s\) temprature; known: max_new_tokens",
        ),
        ({"temperature": -0.1}, r"temperature must be at least 0 \(got -0.1\)"),
        ({"temperature": "hot"}, r"temperature must be a finite number"),
        ({"top_p": 0}, r"top_p must be more than 0 and at most 1"),
        ({"top_k": -2}, r"top_k must be at least -1"),
        ({"max_new_tokens": 0}, r"max_new_tokens must be at least 1"),
        ({"max_new_tokens": 8.5}, r"max_new_tokens must be a whole number"),
        ({"micro_batch_size": True}, r"micro_batch_size must be a whole number"),
        ({"repetition_penalty": 0}, r"repetition_penalty must be more than 0"),
        ({"device": "gpu"}, r"device must be auto, cpu, cuda or cuda:N \(got 'gpu'\)"),
        ({"dtype": "float8"}, r"dtype must be one of auto, float32, bfloat16, float16"),
    ],
)
def test_bad_params_are_refused_by_name(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_params(params)


def test_top_k_of_minus_one_means_off() -> None:
    assert parse_params({"top_k": -1}).top_k == 0
    assert parse_params({}).max_new_tokens == 64


def test_a_missing_or_wrong_location_is_a_clear_error(tmp_path: Path, tiny_model_dir: Path) -> None:
    with pytest.raises(ValueError, match=r"checkpoint directory '.*nowhere' does not exist"):
        load_generator(RoleSpec("transformers", str(tmp_path / "nowhere")))
    with pytest.raises(ValueError, match=r"is not a Hugging Face checkpoint \(it has no config"):
        load_generator(RoleSpec("transformers", str(tmp_path)))
    with pytest.raises(ValueError, match="location must be a checkpoint directory"):
        load_generator(RoleSpec("transformers", ""))
    no_template = tmp_path / "no-template"
    shutil.copytree(tiny_model_dir, no_template)
    (no_template / "chat_template.jinja").unlink()
    with pytest.raises(ValueError, match="has no chat template"):
        load_generator(RoleSpec("transformers", str(no_template)))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a host without CUDA")
def test_asking_for_cuda_without_it_is_a_clear_error(tiny_model_dir: Path) -> None:
    with pytest.raises(ValueError, match="device 'cuda' was asked for, but CUDA is not available"):
        load_generator(RoleSpec("transformers", str(tiny_model_dir), {"device": "cuda"}))


def test_device_and_dtype_are_chosen_in_one_place() -> None:
    cpu = torch.device("cpu")
    assert resolve_dtype("auto", cpu) == torch.float32
    assert resolve_dtype("bfloat16", cpu) == torch.bfloat16
    assert resolve_device("cpu") == cpu
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    if torch.cuda.is_available():
        assert resolve_dtype("auto", torch.device("cuda")) == torch.bfloat16


def test_dialogues_run_end_to_end_with_the_scripted_teacher(
    tiny_model_dir: Path,
    make_jobs: Callable[..., list[DialogueJob]],
    scripted_teacher: Generator,
) -> None:
    student = load_generator(
        RoleSpec("transformers", str(tiny_model_dir), {"temperature": 0.7, "max_new_tokens": 12})
    )
    jobs = make_jobs(5, operations="+-")
    finished: list[DialogueResult] = []
    stats = run_dialogues(
        jobs,
        ProtocolSpec("didactic", max_turns=3),
        student=student,
        teacher=scripted_teacher,
        on_finished=finished.extend,
    )
    assert sorted(result.task_id for result in finished) == [job.task.task_id for job in jobs]
    assert stats.dialogues_finished == 5
    for result in finished:
        students = [turn for turn in result.turns if turn.role == "student"]
        teachers = [turn for turn in result.turns if turn.role == "teacher"]
        assert 1 <= len(students) <= 3 and len(teachers) in (len(students) - 1, len(students))
        assert all(turn.verdict is not None for turn in students)
        assert all(turn.prompt_tokens > 0 and 0 < turn.completion_tokens <= 12 for turn in students)
        assert result.solved == (result.first_correct_turn is not None)
    # The same jobs again give the same dialogues: every draw is seeded by the job and the turn.
    again: list[DialogueResult] = []
    run_dialogues(
        jobs,
        ProtocolSpec("didactic", max_turns=3),
        student=student,
        teacher=scripted_teacher,
        on_finished=again.extend,
    )
    texts = {r.task_id: [t.text for t in r.turns] for r in finished}
    assert {r.task_id: [t.text for t in r.turns] for r in again} == texts


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_generation_on_cuda_in_bfloat16(tiny_model_dir: Path) -> None:
    model = generator(tiny_model_dir, device="cuda", **GREEDY)
    assert model.device.type == "cuda"
    assert next(model._loaded.model.parameters()).dtype == torch.bfloat16
    batched = model.generate(MIXED)
    assert len(batched) == len(MIXED)
    assert all(1 <= g.completion_tokens <= GREEDY["max_new_tokens"] for g in batched)
    sampled = generator(tiny_model_dir, device="cuda", temperature=1.0, max_new_tokens=8)
    first, again = sampled.generate(MIXED), sampled.generate(MIXED)
    assert [g.text for g in first] == [g.text for g in again]
