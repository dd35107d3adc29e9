"""Prefix reuse in the ``transformers`` backend (models_gpu/backends/prefix_cache.py): a
dialogue's next round prefills only what it added, and replies exactly as a full prefill does.

The comparisons run the tiny untrained house model on CPU in float32, where a reused prefix and a
recomputed one agree to the last bits that decide a token; a deliberately corrupted store shows
that the comparison can tell them apart."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from models_gpu.backends.prefix_cache import PrefixCache, StoredPrefix, common_prefix  # noqa: E402
from models_gpu.backends.transformers_backend import (  # noqa: E402
    TransformersGenerator,
    load_transformers,
)
from models_gpu.engine import run_dialogues  # noqa: E402
from models_gpu.spec.protocol import ProtocolSpec  # noqa: E402
from models_gpu.spec.run import RoleSpec  # noqa: E402
from models_gpu.types import (  # noqa: E402
    DialogueJob,
    DialogueResult,
    Generation,
    GenerationRequest,
    Generator,
    Message,
)

FIRST_ROUND = [
    GenerationRequest((Message("user", "What is 12 + 30?"),), seed=0),
    GenerationRequest((Message("user", "What is 7 * 8? Think it through."),), seed=1),
    GenerationRequest((Message("user", "What is 100 - 37? " * 4),), seed=2),
]


def generator(model_dir: Path, **params: Any) -> TransformersGenerator:
    params = {"device": "cpu", "max_new_tokens": 8, **params}
    return load_transformers(RoleSpec("transformers", str(model_dir), params))


def next_round(
    requests: list[GenerationRequest], replies: list[Generation]
) -> list[GenerationRequest]:
    """Each conversation with its reply and a teacher's feedback added."""
    return [
        replace(
            request,
            messages=(
                *request.messages,
                Message("assistant", reply.text),
                Message("user", "Not quite: check the last digit and try again."),
            ),
        )
        for request, reply in zip(requests, replies, strict=True)
    ]


def two_rounds(model: TransformersGenerator) -> list[list[Generation]]:
    first = model.generate(FIRST_ROUND)
    second = model.generate(next_round(FIRST_ROUND, first))
    return [first, second]


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_a_later_round_reuses_the_last_call_and_replies_as_a_full_prefill(
    tiny_model_dir: Path, temperature: float
) -> None:
    cached = two_rounds(generator(tiny_model_dir, temperature=temperature))
    full = two_rounds(generator(tiny_model_dir, temperature=temperature, prefix_cache_mib=0))
    assert [[g.token_ids for g in call] for call in cached] == [
        [g.token_ids for g in call] for call in full
    ]
    first, second = cached
    assert all(g.cached_prompt_tokens == 0 for g in first)  # nothing stored yet
    assert all(g.cached_prompt_tokens == 0 for call in full for g in call)
    for before, after in zip(first, second, strict=True):
        # Round 2 reuses round 1's prompt at least, and never more than what round 1 computed.
        assert before.prompt_tokens <= after.cached_prompt_tokens < after.prompt_tokens
        assert after.cached_prompt_tokens <= before.prompt_tokens + before.completion_tokens - 1


def test_rows_that_reuse_and_rows_that_do_not_share_a_batch(tiny_model_dir: Path) -> None:
    def play(model: TransformersGenerator) -> list[Generation]:
        first = model.generate(FIRST_ROUND[:2])
        fresh = GenerationRequest((Message("user", "Hi there, what is 2 + 2?"),), seed=9)
        return model.generate([*next_round(FIRST_ROUND[:2], first), fresh, FIRST_ROUND[2]])

    cached = play(generator(tiny_model_dir, temperature=0.0))
    full = play(generator(tiny_model_dir, temperature=0.0, prefix_cache_mib=0))
    assert [g.token_ids for g in cached] == [g.token_ids for g in full]
    assert [g.cached_prompt_tokens > 0 for g in cached] == [True, True, False, False]


def test_what_is_stored_is_the_keys_and_values_of_a_full_forward_pass(
    tiny_model_dir: Path,
) -> None:
    """Round 2's prefixes were computed on top of round 1's reused ones, through the padded
    layout: they must equal one plain forward pass over the same ids."""
    model = generator(tiny_model_dir, temperature=1.0)
    two_rounds(model)
    assert model._prefixes is not None and len(model._prefixes) == len(FIRST_ROUND)
    network = model._loaded.model
    for stored in model._prefixes._prefixes.values():
        with torch.inference_mode():
            cache = network(torch.tensor([stored.ids]), use_cache=True).past_key_values
        for layer, (keys, values) in enumerate(zip(stored.keys, stored.values, strict=True)):
            torch.testing.assert_close(keys, cache.layers[layer].keys[0], atol=1e-5, rtol=1e-4)
            torch.testing.assert_close(values, cache.layers[layer].values[0], atol=1e-5, rtol=1e-4)


def test_a_corrupted_store_changes_the_replies(tiny_model_dir: Path) -> None:
    """The comparisons above can fail: keys that are not the prefix's own draw other tokens."""
    model = generator(tiny_model_dir, temperature=1.0, max_new_tokens=12)
    first = model.generate(FIRST_ROUND)
    assert model._prefixes is not None
    for seed, stored in list(model._prefixes._prefixes.items()):
        keys = tuple(k.flip(1) for k in stored.keys)  # every token's keys at another position
        model._prefixes.store(seed, StoredPrefix(stored.ids, keys, stored.values))
    corrupted = model.generate(next_round(FIRST_ROUND, first))
    full = generator(tiny_model_dir, temperature=1.0, max_new_tokens=12, prefix_cache_mib=0)
    expected = full.generate(next_round(FIRST_ROUND, full.generate(FIRST_ROUND)))
    assert [g.token_ids for g in corrupted] != [g.token_ids for g in expected]


def test_dialogues_play_the_same_with_and_without_reuse(
    tiny_model_dir: Path,
    make_jobs: Callable[..., list[DialogueJob]],
    scripted_teacher: Generator,
) -> None:
    def play(**params: Any) -> dict[int, list[str]]:
        finished: list[DialogueResult] = []
        run_dialogues(
            make_jobs(6, operations="+-"),
            ProtocolSpec("didactic", max_turns=4),
            student=generator(tiny_model_dir, temperature=1.0, max_new_tokens=10, **params),
            teacher=scripted_teacher,
            on_finished=finished.extend,
        )
        return {r.task_id: [t.text for t in r.turns] for r in finished}

    played = play()
    assert played == play(prefix_cache_mib=0)
    assert max(len(turns) for turns in played.values()) >= 3  # later rounds were played


def test_the_store_reuses_the_common_prefix_and_leaves_a_token_to_feed() -> None:
    empty = (torch.zeros(1, 4, 2),)
    store = PrefixCache(budget_bytes=10**6)
    store.store(7, StoredPrefix((1, 2, 3, 4), empty, empty))
    assert store.reusable(7, [1, 2, 3, 4, 5, 6]) == (store._prefixes[7], 4)
    assert store.reusable(7, [1, 2, 9, 4, 5])[1] == 2  # the ids part at the third
    assert store.reusable(7, [1, 2, 3, 4])[1] == 3  # the last token is fed again
    assert store.reusable(7, [5, 2, 3]) == (None, 0)
    assert store.reusable(8, [1, 2, 3, 4, 5]) == (None, 0)  # another dialogue's seed
    assert common_prefix([1, 2], [1, 2, 3]) == 2


def test_the_store_keeps_within_its_budget_least_recently_used_out() -> None:
    def prefix(length: int) -> StoredPrefix:
        tensor = torch.zeros(1, length, 2)  # float32: 8 bytes a token, keys and values 16
        return StoredPrefix(tuple(range(length)), (tensor,), (tensor,))

    store = PrefixCache(budget_bytes=16 * 10)
    store.store(1, prefix(4))
    store.store(2, prefix(4))
    store.store(3, prefix(4))  # over budget: seed 1 goes
    assert sorted(store._prefixes) == [2, 3]
    store.store(2, prefix(2))  # a new call of seed 2 replaces its old prefix
    assert store._bytes == 16 * 6
    store.store(4, prefix(11))  # larger than the whole budget: not kept
    assert sorted(store._prefixes) == [2, 3] and len(store) == 2


def test_prefix_cache_mib_zero_turns_reuse_off(tiny_model_dir: Path) -> None:
    model = generator(tiny_model_dir, temperature=0.0, prefix_cache_mib=0)
    assert model._prefixes is None
    _, second = two_rounds(model)
    assert all(g.cached_prompt_tokens == 0 for g in second)
