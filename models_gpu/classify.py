"""What kind of turn a student reply is: an answer attempt, a question, or something else.

Rules first, from the reply and the task's verifier verdict on it:

1. The verifier *found an answer* when its verdict's reason is not one that means "nothing to
   check" (``no_answer_found``, ``not_a_number``, ``no_choice_found``, ``no_code_found``,
   ``unparseable``). Code tasks need more: the sandbox runs prose as code when there is no fenced
   block, so a reply counts as code only with a fenced block or code that loaded
   (reason other than ``load_error``).
2. A reply is *question-like* when it is short (at most ``MAX_QUESTION_WORDS`` words) and ends with
   "?" or starts with an interrogative ("what", "how", "could", "is", ...).
3. answer found, not question-like -> ``attempt``; no answer, question-like -> ``question``;
   no answer, not question-like -> ``other``.
4. Both (an answer and a question: "Is it 85?", "The answer is 85. Is that right?") is
   *ambiguous*. The rule falls back to ``attempt`` when the reply states its answer explicitly
   (``\\boxed{}``, "The answer is ...", "Answer: ...") and to ``question`` otherwise; with
   ``ProtocolSpec.judge_turn_kinds`` and a judge model, the judge decides instead (one batched
   call per round, see ``judge_request`` / ``parse_judge_reply``).

The engine applies one more rule on top: a reply the verifier accepts is an attempt, whatever
the rules or the judge said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from models_gpu.spec.templates import DEFAULT_TEMPLATES
from models_gpu.types import GenerationRequest, Message, TaskSpec, Verdict

StudentTurnKind = Literal["attempt", "question", "other"]
STUDENT_TURN_KINDS: tuple[StudentTurnKind, ...] = ("attempt", "question", "other")

MAX_QUESTION_WORDS = 60
JUDGE_MAX_NEW_TOKENS = 8
NO_ANSWER_REASONS = frozenset(
    {"no_answer_found", "not_a_number", "no_choice_found", "no_code_found", "unparseable"}
)
INTERROGATIVES = frozenset({
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "is", "are", "am",
    "was", "were", "do", "does", "did", "can", "could", "should", "would", "will", "shall",
    "may", "might", "have", "has", "had", "isn't", "aren't", "doesn't", "don't", "didn't",
    "can't", "couldn't", "shouldn't", "won't",
})  # fmt: skip
_EXPLICIT_ANSWER = re.compile(r"\\boxed\{|\bthe\s+(?:final\s+)?answer\s+is\b|\banswer\s*:", re.I)
_CODE_FENCE = re.compile(r"```")
_FIRST_WORD = re.compile(r"[^\W\d_]+(?:'[a-z]+)?", re.I)


@dataclass(frozen=True)
class Classification:
    kind: StudentTurnKind
    ambiguous: bool  # the rules saw both an answer and a question; a judge may overrule them


def classify_reply(task: TaskSpec, reply: str, verdict: Verdict) -> Classification:
    """The rule-based kind of ``reply``, given the task verifier's ``verdict`` on it."""
    answer = answer_found(task, reply, verdict)
    question = is_question_like(reply)
    if answer and question:
        return Classification("attempt" if states_answer(reply) else "question", ambiguous=True)
    if answer:
        return Classification("attempt", ambiguous=False)
    return Classification("question" if question else "other", ambiguous=False)


def answer_found(task: TaskSpec, reply: str, verdict: Verdict) -> bool:
    """Whether the task's verifier read an answer in ``reply`` (not whether it is right)."""
    reason = verdict.details.get("reason")
    if verdict.correct:
        return True
    if reason in NO_ANSWER_REASONS:
        return False
    if task.verifier_kind == "code":
        return bool(_CODE_FENCE.search(reply)) or reason != "load_error"
    return verdict.extracted is not None


def is_question_like(reply: str) -> bool:
    text = reply.strip()
    if not text or len(text.split()) > MAX_QUESTION_WORDS:
        return False
    if text.rstrip("*_ \"')").endswith("?"):
        return True
    first_word = _FIRST_WORD.search(text)
    return first_word is not None and first_word[0].casefold() in INTERROGATIVES


def states_answer(reply: str) -> bool:
    """Whether the reply marks its answer explicitly, as the verifiers' extraction looks for."""
    return _EXPLICIT_ANSWER.search(reply) is not None


def judge_request(
    *, context: str, reply: str, seed: int, template: str = DEFAULT_TEMPLATES["judge_turn_kind"]
) -> GenerationRequest:
    """Ask a judge model for the kind of ``reply``; ``context`` is the message it answered."""
    material = (
        f"The message the assistant answered:\n{context}\n\n"
        f"The assistant's last message:\n{reply}\n\n"
        "Answer with one word: attempt, question or other."
    )
    messages = (
        (Message("system", template), Message("user", material))
        if template
        else (Message("user", material),)
    )
    return GenerationRequest(messages=messages, seed=seed, max_new_tokens=JUDGE_MAX_NEW_TOKENS)


def parse_judge_reply(text: str) -> StudentTurnKind | None:
    """The judge's label, read strictly: the reply must be just one of the three words (case,
    surrounding quotes, asterisks and a final period aside). Anything else is None, and the
    rules stand."""
    word = text.strip().strip("\"'`*_.:!").strip().casefold()
    for kind in STUDENT_TURN_KINDS:
        if word == kind:
            return kind
    return None
