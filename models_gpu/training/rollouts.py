"""A played dialogue as policy-gradient input: the ids the student sampled, and the context
between them, with a mask of what is trained.

The student's view of the dialogue (``models_gpu.conversation.student_view``, what the engine
sent the student) is laid out with the model's chat template as in ``encode``:

    prompt_ids       the view up to the student's first reply, the assistant turn opened: the
                     prompt of the student's first call.
    completion_ids   for each student reply: the ids it sampled (``TurnRecord.token_ids``, with
                     its end token when it stopped on one), mask 1; then the template's tokens up
                     to the opening of the student's next reply (the end of its turn, the
                     teacher's or user's message, the next role header), mask 0. Nothing after
                     the last reply.
    logprobs         where the student's backend reported them (vLLM rollouts), the
                     log-probability each sampled id was drawn with, 0.0 for context ids (they
                     are masked): TRL's importance-sampling correction compares them with the
                     policy's own.

So the policy is trained on exactly the ids it sampled, never on a re-tokenization of their text.
A reply cut at ``max_new_tokens`` has no end token: the template's end-of-turn token follows it,
untrained, as the next call's prompt showed the reply closed. (At play time the later calls'
prompts hold the replies' text re-tokenized; for tokenizers where decode-then-encode is not the
identity the context differs in those few tokens, as in any multi-turn RL that renders a chat
template.)

One difference is not a few tokens of spelling: a special token sampled inside a reply (a tiny
model's ``The answer is <|bos|>9.``). The reply's text drops it, so every later call's prompt
lacks it, and the layout, which keeps the sampled ids, would train the later replies on a
context the student never saw. Those later replies stay in the completion as context, with mask
0; the reply that sampled the token is trained as usual (it was sampled where it stands).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from models_gpu.conversation import ViewMessage
from models_gpu.training.encode import (
    LaidOutMessage,
    check_extends,
    render_text,
    tokenize_rendered,
)
from models_gpu.types import TurnRecord


@dataclass(frozen=True)
class RolloutTokens:
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]  # 1: sampled by the student (trained); 0: context
    truncated: bool = False
    # Per completion id, the log-probability it was sampled with (0.0 for context ids); None
    # when the student's backend did not report them (transformers).
    logprobs: list[float] | None = None

    @property
    def trained_tokens(self) -> int:
        return sum(self.env_mask)


Dialogue = tuple[Sequence[ViewMessage], Sequence[TurnRecord]]  # a student view, its turns
WHAT = "rollout"  # what a chat template's error says it cannot express


def rollout_tokens(
    tokenizer: Any,
    view: Sequence[ViewMessage],
    turns: Sequence[TurnRecord],
    *,
    max_length: int,
) -> RolloutTokens:
    """The dialogue whose student view is ``view`` (messages pointing into ``turns``) as prompt
    ids, completion ids and trained mask; prompt plus completion cut to ``max_length``."""
    return rollouts_tokens(tokenizer, [(view, turns)], max_length=max_length)[0]


def rollouts_tokens(
    tokenizer: Any, dialogues: Sequence[Dialogue], *, max_length: int
) -> list[RolloutTokens]:
    """``rollout_tokens`` of each dialogue, every rendering of every dialogue tokenized in one
    batched call (a step's layout renders each dialogue about twice per reply)."""
    plans = []
    for view, _ in dialogues:
        messages = [LaidOutMessage(shown.message, trained=False) for shown in view]
        replies = [i for i, shown in enumerate(view) if shown.message.role == "assistant"]
        if not replies:
            raise ValueError("a rollout needs at least one student reply")
        plans.append((replies, _renderings(tokenizer, messages, replies)))
    rendered = iter(tokenize_rendered(tokenizer, [text for _, texts in plans for text in texts]))
    special = frozenset(tokenizer.all_special_ids)  # a property that builds its list each call
    return [
        _lay_out(
            tokenizer, view, turns, replies, [next(rendered) for _ in texts], special, max_length
        )
        for (view, turns), (replies, texts) in zip(dialogues, plans, strict=True)
    ]


def _renderings(
    tokenizer: Any, messages: Sequence[LaidOutMessage], replies: Sequence[int]
) -> list[str]:
    """What ``_lay_out`` reads, in its order: the view opened for the first reply; then for each
    reply, the view closed after it and (but after the last) opened for the next one."""
    texts = [render_text(tokenizer, messages[: replies[0]], what=WHAT, open_reply=True)]
    for position, index in enumerate(replies):
        texts.append(render_text(tokenizer, messages[: index + 1], what=WHAT))
        if position + 1 < len(replies):
            following = messages[: replies[position + 1]]
            texts.append(render_text(tokenizer, following, what=WHAT, open_reply=True))
    return texts


def _lay_out(
    tokenizer: Any,
    view: Sequence[ViewMessage],
    turns: Sequence[TurnRecord],
    replies: Sequence[int],
    rendered: Sequence[list[int]],
    special: frozenset[int],
    max_length: int,
) -> RolloutTokens:
    """One dialogue laid out (the module docstring) from its ``_renderings`` as ids."""
    renderings = iter(rendered)
    prompt = next(renderings)
    completion: list[int] = []
    mask: list[int] = []
    logprobs: list[float] | None = []
    opened = prompt  # the rendering that opens the reply at hand
    context_differs = False  # an earlier reply's text dropped a special token it sampled
    for position, index in enumerate(replies):
        turn = view[index].turn
        assert turn is not None, "an assistant message shows a student turn"
        sampled = list(turns[turn].token_ids)
        if not sampled:
            raise ValueError(
                f"turn {turn} has no sampled token ids: online training needs a student backend "
                "that reports them (transformers or vllm)"
            )
        closed = next(renderings)
        check_extends(tokenizer, opened, closed, index + 1, WHAT)
        body = closed[len(opened) :]
        end = max((i + 1 for i, token in enumerate(body) if token in special), default=0)
        completion += sampled
        mask += [0 if context_differs else 1] * len(sampled)
        context_differs = context_differs or any(token in special for token in sampled[:-1])
        reported = list(turns[turn].token_logprobs)
        logprobs = logprobs + reported if logprobs is not None and reported else None
        context: list[int] = []
        if position + 1 < len(replies):
            if sampled[-1] not in special and end:
                context.append(body[end - 1])  # the reply was cut: the template closes it
            following = next(renderings)
            check_extends(tokenizer, closed, following, replies[position + 1], WHAT)
            context += body[end:] + following[len(closed) :]
            opened = following
        completion += context
        mask += [0] * len(context)
        if logprobs is not None:
            logprobs += [0.0] * len(context)
    room = max(max_length - len(prompt), 0)
    truncated = len(completion) > room
    kept = logprobs[:room] if logprobs is not None else None
    return RolloutTokens(prompt, completion[:room], mask[:room], truncated, kept)
