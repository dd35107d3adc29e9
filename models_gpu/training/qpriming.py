"""Q-priming's rewrite of a dialogue: failed attempts become clarifying questions.

Each failed attempt (a student turn of kind "attempt" that the verifier rejected,
``is_correct is False``) in round t is replaced, with probability ``decay ** t`` (t counts from 1,
so 0.75, 0.56, 0.42, ... with the default decay), by a clarifying question. One draw per failed
attempt, in order, from the ``rng`` given (the trainer seeds it with the configuration's seed and
the dialogue's id). Correct attempts, questions, critiques and every other turn are never
replaced.

The question is written by a ``QuestionWriter`` that sees the whole dialogue, the private
reference included: for now ``template_writer`` fills a template
(``TrainingConfig.qpriming_question_template``: ``{task_prompt}``, ``{round}``, ``{reference}``,
``{reference.KEY}``); a model backend can be plugged in later through the same hook (a function
of a ``QuestionRequest``).

What follows a replaced attempt is kept: the teacher's feedback stays and reads as the answer to
the question, and the student's later turns follow as they were. That is the layout the papers
describe (a question, then the teacher's answer) with the teacher's stored words; the feedback
was written about the attempt it answered, so it may mention it ("too high"). The alternative,
cutting the dialogue after the question, would drop the later, often successful, turns and, at
the default decay, leave most dialogues as a task and a question. Only student turns are trained
afterwards (``encode``), so the feedback is context either way.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from models_gpu.conversation import is_critique
from models_gpu.spec.results import TurnRow
from models_gpu.spec.training import (
    TrainingDialogue,
    question_template_unknown_names,
    render_question,
)

# The private-context key of a question that replaced a failed attempt; its value is the attempt.
REPLACED_ATTEMPT_KEY = "qpriming_replaced_attempt"


@dataclass(frozen=True)
class QuestionRequest:
    """What a question writer sees: the dialogue (task, reference, turns) and the failed attempt
    to replace (``dialogue.turns[position]``)."""

    dialogue: TrainingDialogue
    position: int

    @property
    def attempt(self) -> TurnRow:
        return self.dialogue.turns[self.position]


QuestionWriter = Callable[[QuestionRequest], str]


def template_writer(template: str) -> QuestionWriter:
    """A question writer that fills ``template`` (ValueError for an unknown placeholder)."""
    unknown = question_template_unknown_names(template)
    if unknown:
        raise ValueError(f"unknown placeholder(s) in the question template: {', '.join(unknown)}")

    def write(request: QuestionRequest) -> str:
        return render_question(
            template,
            task_prompt=request.dialogue.task_prompt,
            reference=request.dialogue.reference,
            round_number=request.attempt.round,
        )

    return write


def replacement_probability(decay: float, round_number: int) -> float:
    """The chance that a failed attempt in round ``round_number`` becomes a question."""
    return float(decay**round_number)


def is_failed_attempt(turn: TurnRow) -> bool:
    return (
        turn.role == "student"
        and turn.kind == "attempt"
        and turn.is_correct is False
        and not is_critique(turn)
    )


def prime_dialogue(
    dialogue: TrainingDialogue,
    *,
    decay: float,
    rng: random.Random,
    write_question: QuestionWriter,
) -> TrainingDialogue:
    """``dialogue`` with some failed attempts replaced by questions (see the module docstring).
    A replaced turn keeps its index and round, becomes kind "question" with no verdict, and
    keeps the attempt it replaced in its private context (never shown to the student)."""
    if not 0 <= decay <= 1:
        raise ValueError(f"decay must be between 0 and 1, got {decay}")
    turns = list(dialogue.turns)
    for position, turn in enumerate(dialogue.turns):
        if not is_failed_attempt(turn):
            continue
        if rng.random() >= replacement_probability(decay, turn.round):
            continue
        question = write_question(QuestionRequest(dialogue, position))
        turns[position] = replace(
            turn,
            kind="question",
            text=question,
            private_context={REPLACED_ATTEMPT_KEY: turn.text},
            extracted_answer="",
            is_correct=None,
            score=None,
            verdict_details={},
        )
    return replace(dialogue, turns=tuple(turns))
