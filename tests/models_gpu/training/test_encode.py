"""Encoding stored dialogues for training: what each method trains, what it never shows, and
the chat templates it refuses."""

from __future__ import annotations

import copy
import random
from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip("transformers")

from models_gpu.conversation import StudentMessages
from models_gpu.spec.templates import DEFAULT_TEMPLATES
from models_gpu.training.encode import (
    IGNORE_INDEX,
    ChatTemplateError,
    encode_dialogue,
    layout,
    render_preview,
    trained_spans,
)
from tests.models_gpu.training.dialogues import (
    SYSTEM,
    TASK,
    didactic,
    self_critique,
    sharded,
)

CRITIQUE = DEFAULT_TEMPLATES["self_critique"]
END = "<|end|>"


def encode(tokenizer: Any, dialogue: Any, method: str, **options: Any) -> Any:
    options.setdefault("max_length", 1024)
    return encode_dialogue(tokenizer, dialogue, method, rng=random.Random(0), **options)


def spans(tokenizer: Any, encoded: Any) -> list[str]:
    return [tokenizer.decode(span) for span in trained_spans(encoded)]


def test_sft_trains_the_student_turns_and_their_end_token_only(tiny_tokenizer: Any) -> None:
    dialogue = didactic()
    encoded = encode(tiny_tokenizer, dialogue, "sft")
    students = [t.text for t in dialogue.turns if t.role == "student"]
    assert spans(tiny_tokenizer, encoded) == [text + END for text in students]
    assert encoded.trained_tokens == sum(label != IGNORE_INDEX for label in encoded.labels)
    assert not encoded.truncated
    # The input is exactly the student's view at play time, rendered by the chat template.
    view = StudentMessages(system=SYSTEM, task_prompt=TASK, sharded=False).of(dialogue.turns)
    rendered = tiny_tokenizer.apply_chat_template(
        [{"role": m.role, "content": m.content} for m in view], tokenize=True, return_dict=True
    )["input_ids"]
    assert encoded.input_ids == list(rendered)
    # Where a label is set it is the token itself (no shift: the model shifts).
    assert all(
        label in (IGNORE_INDEX, token)
        for token, label in zip(encoded.input_ids, encoded.labels, strict=True)
    )


def test_critique_trains_student_and_teacher_turns_without_the_private_context(
    tiny_tokenizer: Any,
) -> None:
    dialogue = didactic()
    encoded = encode(tiny_tokenizer, dialogue, "critique")
    assert spans(tiny_tokenizer, encoded) == [t.text + END for t in dialogue.turns]
    text = tiny_tokenizer.decode(encoded.input_ids)
    assert "secret carry note" not in text and "verdict_details" not in text
    assert text.count(CRITIQUE) == 2  # the instruction before each teacher turn
    roles = [m.message.role for m in layout(dialogue, "critique", rng=random.Random(0))]
    assert roles == [
        "system", "user",
        "assistant", "user", "assistant",  # attempt, instruction, feedback
        "assistant", "user", "assistant",
        "assistant",
    ]  # fmt: skip


def test_critique_uses_the_instruction_it_is_given_and_skips_leaking_feedback(
    tiny_tokenizer: Any,
) -> None:
    dialogue = didactic(leak_first_feedback=True)
    encoded = encode(tiny_tokenizer, dialogue, "critique", critique_instruction="Find the bug.")
    assert tiny_tokenizer.decode(encoded.input_ids).count("Find the bug.") == 2
    trained = spans(tiny_tokenizer, encoded)
    assert "Too low: check the units." + END not in trained  # flagged: context only
    assert "Too high now." + END in trained


def test_a_stored_self_critique_is_a_user_message_for_sft_and_trained_for_critique(
    tiny_tokenizer: Any,
) -> None:
    dialogue = self_critique("Critique your answer.")
    sft = layout(dialogue, "sft", rng=random.Random(0))
    assert [(m.message.role, m.trained) for m in sft][2:] == [
        ("assistant", True), ("user", False), ("assistant", True)
    ]  # fmt: skip
    encoded = encode(tiny_tokenizer, dialogue, "critique")
    assert spans(tiny_tokenizer, encoded) == [t.text + END for t in dialogue.turns]
    # A stored critique keeps the instruction it was asked with.
    assert "Critique your answer." in tiny_tokenizer.decode(encoded.input_ids)
    assert CRITIQUE not in tiny_tokenizer.decode(encoded.input_ids)


def test_a_sharded_dialogue_never_shows_the_full_task(tiny_tokenizer: Any) -> None:
    encoded = encode(tiny_tokenizer, sharded(), "sft")
    text = tiny_tokenizer.decode(encoded.input_ids)
    assert "FULL TASK NEVER SHOWN" not in text and "Add two numbers." in text
    assert spans(tiny_tokenizer, encoded) == ["Which numbers?" + END, "The answer is 19." + END]


def test_qpriming_trains_the_question_in_place_of_failed_attempts(tiny_tokenizer: Any) -> None:
    dialogue = didactic()
    always = encode(
        tiny_tokenizer,
        dialogue,
        "qpriming",
        qpriming_decay=1.0,
        question_template="Is the answer near {reference}?",
    )
    question = "Is the answer near 19?" + END
    assert spans(tiny_tokenizer, always) == [question, question, "The answer is 19." + END]
    text = tiny_tokenizer.decode(always.input_ids)
    assert "The answer is 18." not in text and "Too low: check the units." in text
    never = encode(tiny_tokenizer, dialogue, "qpriming", qpriming_decay=0.0)
    assert never == encode(tiny_tokenizer, dialogue, "sft")


def test_truncation_keeps_the_start(tiny_tokenizer: Any) -> None:
    dialogue = didactic()
    full = encode(tiny_tokenizer, dialogue, "sft")
    cut = encode(tiny_tokenizer, dialogue, "sft", max_length=len(full.input_ids) - 8)
    assert cut.truncated and len(cut.input_ids) == len(full.input_ids) - 8
    assert cut.input_ids == full.input_ids[: len(cut.input_ids)]
    assert cut.labels == full.labels[: len(cut.labels)]
    assert 0 < cut.trained_tokens < full.trained_tokens
    # Cut inside the context: nothing left to train.
    nothing = encode(tiny_tokenizer, dialogue, "sft", max_length=6)
    assert nothing.truncated and len(nothing.input_ids) == 6 and nothing.trained_tokens == 0


def test_the_preview_marks_trained_text(tiny_tokenizer: Any) -> None:
    encoded = encode(tiny_tokenizer, didactic(), "sft")
    segments = render_preview(tiny_tokenizer, encoded)
    assert "".join(text for text, _ in segments) == tiny_tokenizer.decode(encoded.input_ids)
    assert [text for text, trained in segments if trained] == spans(tiny_tokenizer, encoded)
    assert segments[0][0].startswith("<|bos|><|system|>") and not segments[0][1]


def with_template(tokenizer: Any, template: str) -> Any:
    changed = copy.deepcopy(tokenizer)
    changed.chat_template = template
    return changed


# Like templates that add an empty reasoning block to the last assistant turn only.
REWRITES_LAST = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n"
    "{% if loop.last and m['role'] == 'assistant' %}<think></think>{% endif %}"
    "{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
# Like templates that insist on alternating roles and have no system role.
ALTERNATING = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{% if loop.index0 > 0 and m['role'] == messages[loop.index0 - 1]['role'] %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant') }}{% endif %}"
    "<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def test_a_template_that_rewrites_earlier_turns_is_refused(tiny_tokenizer: Any) -> None:
    tokenizer = with_template(tiny_tokenizer, REWRITES_LAST)
    with pytest.raises(
        ChatTemplateError,
        match=r"chat template of .*tiny.* cannot express the sft layout: rendering 4 messages "
        r"does not extend rendering 3",
    ):
        encode(tokenizer, didactic(), "sft")


def test_a_template_without_the_roles_a_layout_needs_is_refused(tiny_tokenizer: Any) -> None:
    tokenizer = with_template(tiny_tokenizer, ALTERNATING)
    with pytest.raises(ChatTemplateError, match=r"sft layout: rendering 1 messages .*System role"):
        encode(tokenizer, didactic(), "sft")
    no_system = sharded()  # user, assistant, user, assistant: fine
    assert encode(tokenizer, no_system, "sft").trained_tokens > 0
    # Critique prediction puts a reply right after a critique: two assistant turns in a row.
    dialogue = replace(didactic(), student_system="")
    with pytest.raises(ChatTemplateError, match=r"critique layout: .*roles must alternate"):
        encode(tokenizer, dialogue, "critique")


def test_a_template_without_a_generation_prompt_is_refused(tiny_tokenizer: Any) -> None:
    tokenizer = with_template(
        tiny_tokenizer,
        "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}",
    )
    with pytest.raises(ChatTemplateError, match="opening an assistant turn after 2 messages"):
        encode(tokenizer, didactic(), "sft")


def test_an_unknown_method_is_refused(tiny_tokenizer: Any) -> None:
    with pytest.raises(ValueError, match="unknown training method 'dpo'"):
        encode(tiny_tokenizer, didactic(), "dpo")
