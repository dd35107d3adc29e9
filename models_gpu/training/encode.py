"""Stored dialogues to token ids and loss masks, per training method, with the model's own chat
template.

Message layouts (``layout``): every method starts from the student's view of the dialogue
(``models_gpu.conversation.student_view``, the very messages the engine sent the student at play
time): the student's system prompt (when not empty), the task prompt as a user message (unless
the dialogue is sharded), then one message per turn, the student's replies as "assistant",
everyone else's as "user".

    sft       The student's view. Trained: the student's replies (every "assistant" message).
              Context: the rest (system prompt, task, teacher feedback, shards, nudges, and the
              student's own critiques, which the student saw as user messages).
    qpriming  The student's view of the rewritten dialogue (``models_gpu.training.qpriming``:
              some failed attempts replaced by a clarifying question), trained as sft.
    critique  The student's view, where each teacher turn, and each of the student's own
              critiques (self-correction dialogues), becomes two messages:
                  user       the critique instruction (``TrainingConfig.critique_instruction``;
                             for a stored critique, the instruction it was asked with)
                  assistant  the teacher's (or the critique's) text          (trained)
              so a dialogue [task, a1, f1, a2] is laid out as
                  [system] user:task  assistant:a1  user:instruction  assistant:f1  assistant:a2
              and the student's replies and the feedback are trained, the teacher's private
              context (reference, verifier details) never appears. A teacher turn flagged as
              leaking the answer stays as context but is not trained (the critic must not learn
              to give answers away).
              How this matches evaluation: the self-correction protocol's critique mode asks for
              a critique with exactly [view so far] + user:instruction, so each trained critique
              follows the context it will follow at evaluation, except that earlier critiques
              appear as (instruction, assistant) pairs, where evaluation shows them as user
              messages without the instruction. A reply after a critique follows it directly, as
              a second assistant message in a row; at evaluation it follows the critique shown as
              a user message. A chat template that insists on alternating roles refuses this
              layout (``ChatTemplateError``).

Masks: the messages are rendered with ``tokenizer.apply_chat_template`` as growing prefixes; each
message's tokens are what rendering it adds to the rendering of the messages before it, and each
prefix must be a token prefix of the next (else ``ChatTemplateError``: a template that rewrites
earlier turns, e.g. one that drops the reasoning of earlier assistant turns, cannot be trained
message by message). Of a trained message, the role header (what ``add_generation_prompt=True``
adds) is context; its content and the tokens that close it, through its last special token (the
end-of-turn token), are labelled; whitespace the template writes after the end token is not.
Untrained tokens have the label ``IGNORE_INDEX`` (-100).

Truncation: an example longer than ``max_length`` is cut from the right: its start (system
prompt, task, first turns) is kept and the last turns are dropped, so a dialogue is never shown
without its task. A cut example may keep no trained token (``trained_tokens == 0``); the trainer
skips those.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from models_gpu.conversation import student_view
from models_gpu.spec.results import TurnRow
from models_gpu.spec.templates import DEFAULT_TEMPLATES
from models_gpu.spec.training import (
    DEFAULT_QUESTION_TEMPLATE,
    METHODS,
    TrainingConfig,
    TrainingDialogue,
)
from models_gpu.spec.turns import CRITIQUE_INSTRUCTION_KEY, is_critique
from models_gpu.training.qpriming import (
    QuestionWriter,
    dialogue_rng,
    prime_dialogue,
    prime_dialogues,
    template_writer,
)
from models_gpu.types import Message

IGNORE_INDEX = -100  # the label transformers' causal-LM loss skips


class ChatTemplateError(ValueError):
    """A chat template that cannot express a training layout."""


@dataclass(frozen=True)
class EncodedExample:
    """One training example: token ids, labels (``IGNORE_INDEX`` where not trained), how many
    tokens are trained, and whether it was cut to ``max_length``."""

    input_ids: list[int]
    labels: list[int]
    trained_tokens: int
    truncated: bool = False


@dataclass(frozen=True)
class LaidOutMessage:
    """A chat message of a training layout and whether its tokens are trained."""

    message: Message
    trained: bool


def layout(
    dialogue: TrainingDialogue,
    method: str,
    *,
    rng: random.Random,
    critique_instruction: str = DEFAULT_TEMPLATES["self_critique"],
    qpriming_decay: float = 0.75,
    question_template: str = DEFAULT_QUESTION_TEMPLATE,
    write_question: QuestionWriter | None = None,
) -> list[LaidOutMessage]:
    """The messages ``method`` trains on for ``dialogue`` (see the module docstring). ``rng``
    drives Q-priming's draws; ``write_question`` (default: ``question_template``) writes its
    questions."""
    if method not in METHODS:
        raise ValueError(f"unknown training method {method!r}; methods: {', '.join(METHODS)}")
    if method == "qpriming":
        writer = write_question or template_writer(question_template)
        dialogue = prime_dialogue(dialogue, decay=qpriming_decay, rng=rng, write_question=writer)
    return _laid_out(dialogue, method, critique_instruction)


def _laid_out(
    dialogue: TrainingDialogue, method: str, critique_instruction: str
) -> list[LaidOutMessage]:
    """``layout`` of a dialogue already rewritten for its method (Q-priming's questions in)."""
    view = student_view(
        system=dialogue.student_system,
        task_prompt=dialogue.task_prompt,
        sharded=dialogue.sharded,
        turns=dialogue.turns,
    )
    messages: list[LaidOutMessage] = []
    for shown in view:
        turn = dialogue.turns[shown.turn] if shown.turn is not None else None
        if method == "critique" and turn is not None and _is_critic(turn):
            instruction = (
                str(turn.private_context[CRITIQUE_INSTRUCTION_KEY])
                if is_critique(turn)
                else critique_instruction
            )
            messages.append(LaidOutMessage(Message("user", instruction), trained=False))
            trained = not (turn.role == "teacher" and turn.leak_flag)
            messages.append(LaidOutMessage(Message("assistant", turn.text), trained=trained))
        else:
            trained = shown.message.role == "assistant"
            messages.append(LaidOutMessage(shown.message, trained=trained))
    return messages


def _is_critic(turn: TurnRow) -> bool:
    return turn.role == "teacher" or is_critique(turn)


def encode_dialogue(
    tokenizer: Any,
    dialogue: TrainingDialogue,
    method: str,
    *,
    max_length: int,
    rng: random.Random,
    critique_instruction: str = DEFAULT_TEMPLATES["self_critique"],
    qpriming_decay: float = 0.75,
    question_template: str = DEFAULT_QUESTION_TEMPLATE,
    write_question: QuestionWriter | None = None,
) -> EncodedExample:
    """``dialogue`` as one training example for ``method`` (see the module docstring);
    ``ChatTemplateError`` when the tokenizer's chat template cannot express the layout."""
    messages = layout(
        dialogue,
        method,
        rng=rng,
        critique_instruction=critique_instruction,
        qpriming_decay=qpriming_decay,
        question_template=question_template,
        write_question=write_question,
    )
    return encode_messages(tokenizer, messages, max_length=max_length, what=f"{method} layout")


def encode_for_config(
    tokenizer: Any,
    dialogue: TrainingDialogue,
    config: TrainingConfig,
    *,
    write_question: QuestionWriter | None = None,
) -> EncodedExample:
    """``encode_dialogue`` with the settings of ``config``; the random draws are seeded by the
    configuration's seed and the dialogue's id, so they do not depend on the order or the
    process that encodes them."""
    return encode_dialogue(
        tokenizer,
        dialogue,
        config.method,
        max_length=config.max_length,
        rng=dialogue_rng(config.seed, dialogue.dialogue_id),
        critique_instruction=config.critique_instruction,
        qpriming_decay=config.qpriming_decay,
        question_template=config.qpriming_question_template,
        write_question=write_question,
    )


def encode_stream(
    tokenizer: Any,
    dialogues: Iterable[TrainingDialogue],
    config: TrainingConfig,
    *,
    write_question: QuestionWriter | None = None,
) -> Iterator[tuple[TrainingDialogue, EncodedExample]]:
    """``encode_for_config`` over a stream, each dialogue with its example. Q-priming's questions
    are written a chunk of dialogues at a time (``prime_dialogues``: one call of a model writer
    per chunk); the examples are the same as ``encode_for_config``'s, one by one."""
    what = f"{config.method} layout"
    if config.method != "qpriming":
        for dialogue in dialogues:
            yield dialogue, encode_for_config(tokenizer, dialogue, config)
        return
    primed = prime_dialogues(
        dialogues,
        decay=config.qpriming_decay,
        seed=config.seed,
        write_question=write_question or template_writer(config.qpriming_question_template),
    )
    for dialogue in primed:
        messages = _laid_out(dialogue, config.method, config.critique_instruction)
        yield (
            dialogue,
            encode_messages(tokenizer, messages, max_length=config.max_length, what=what),
        )


def encode_messages(
    tokenizer: Any, messages: Sequence[LaidOutMessage], *, max_length: int, what: str = "layout"
) -> EncodedExample:
    """Token ids and labels of ``messages`` (see "Masks" in the module docstring), cut to
    ``max_length`` from the right."""
    if max_length < 1:
        raise ValueError(f"max_length must be at least 1, got {max_length}")
    if not messages:
        raise ValueError("a training example needs at least one message")
    if messages[0].trained:
        raise ValueError("a training example cannot start with a trained message")
    special = set(tokenizer.all_special_ids)
    ids: list[int] = []
    labels: list[int] = []
    rendered_messages = 0
    for count in range(1, len(messages) + 1):
        if len(ids) >= max_length:
            break  # the rest would be cut anyway
        laid_out = messages[count - 1]
        rendered = render_messages(tokenizer, messages[:count], what=what)
        check_extends(tokenizer, ids, rendered, count, what)
        new = rendered[len(ids) :]
        if not laid_out.trained:
            labels += [IGNORE_INDEX] * len(new)
        else:
            opened = render_messages(tokenizer, messages[: count - 1], what=what, open_reply=True)
            if len(opened) <= len(ids) or rendered[: len(opened)] != opened:
                raise ChatTemplateError(
                    f"the chat template of {tokenizer_name(tokenizer)} cannot express the {what}: "
                    f"opening an assistant turn after {count - 1} messages does not give the "
                    f"start of rendering message {count} (no generation prompt, or a role "
                    "header that merges with the content)"
                )
            header = len(opened) - len(ids)
            body = new[header:]
            closing = max(
                (i + 1 for i, token in enumerate(body) if token in special), default=len(body)
            )
            labels += [IGNORE_INDEX] * header
            labels += body[:closing] + [IGNORE_INDEX] * (len(body) - closing)
        ids = rendered
        rendered_messages = count
    truncated = len(ids) > max_length or rendered_messages < len(messages)
    ids, labels = ids[:max_length], labels[:max_length]
    trained = sum(label != IGNORE_INDEX for label in labels)
    return EncodedExample(ids, labels, trained_tokens=trained, truncated=truncated)


def render_messages(
    tokenizer: Any, messages: Sequence[LaidOutMessage], *, what: str, open_reply: bool = False
) -> list[int]:
    text = render_text(tokenizer, messages, what=what, open_reply=open_reply)
    return tokenize_rendered(tokenizer, [text])[0]


def render_text(
    tokenizer: Any, messages: Sequence[LaidOutMessage], *, what: str, open_reply: bool = False
) -> str:
    """``messages`` through the chat template, as text (``tokenize_rendered`` makes it ids); no
    messages render as nothing."""
    from jinja2 import TemplateError

    if not messages:
        return ""
    chat = [{"role": m.message.role, "content": m.message.content} for m in messages]
    try:
        text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=open_reply)
    except (TemplateError, ValueError) as error:
        roles = ", ".join(m.message.role for m in messages)
        raise ChatTemplateError(
            f"the chat template of {tokenizer_name(tokenizer)} cannot express the {what}: "
            f"rendering {len(messages)} messages ({roles}) fails: {error}"
        ) from error
    return str(text)


def tokenize_rendered(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """Rendered chat-template texts as ids, as ``apply_chat_template(tokenize=True)`` makes them
    (no special tokens added: the template writes its own), in one batched call: tokenizing,
    not rendering, is what costs, and a fast tokenizer encodes a batch at once."""
    if not texts:
        return []
    encoded = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    return [list(ids) for ids in encoded]


def check_extends(
    tokenizer: Any, before: list[int], after: list[int], count: int, what: str
) -> None:
    if after[: len(before)] != before:
        raise ChatTemplateError(
            f"the chat template of {tokenizer_name(tokenizer)} cannot express the {what}: "
            f"rendering {count} messages does not extend rendering {count - 1} (the template "
            "rewrites earlier messages, so their tokens cannot be labelled one message at a time)"
        )


def tokenizer_name(tokenizer: Any) -> str:
    return str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__)


def trained_spans(encoded: EncodedExample) -> list[list[int]]:
    """The runs of consecutive trained tokens, in order."""
    spans: list[list[int]] = []
    previous = False
    for token, label in zip(encoded.input_ids, encoded.labels, strict=True):
        trained = label != IGNORE_INDEX
        if trained and not previous:
            spans.append([])
        if trained:
            spans[-1].append(token)
        previous = trained
    return spans


def render_preview(tokenizer: Any, encoded: EncodedExample) -> list[tuple[str, bool]]:
    """The example as text segments, each with whether its tokens are trained (for a page that
    highlights what the model learns). Special tokens are kept; a character whose bytes span two
    segments may show as a replacement character."""
    segments: list[tuple[str, bool]] = []
    run: list[int] = []
    flag = False
    for token, label in zip(encoded.input_ids, encoded.labels, strict=True):
        trained = label != IGNORE_INDEX
        if run and trained != flag:
            segments.append((tokenizer.decode(run, skip_special_tokens=False), flag))
            run = []
        run.append(token)
        flag = trained
    if run:
        segments.append((tokenizer.decode(run, skip_special_tokens=False), flag))
    return segments
