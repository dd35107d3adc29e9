"""Q-priming's rewrite of a dialogue: failed attempts become clarifying questions.

Each failed attempt (a student turn of kind "attempt" that the verifier rejected,
``is_correct is False``) in round t is replaced, with probability ``decay ** t`` (t counts from 1,
so 0.75, 0.56, 0.42, ... with the default decay), by a clarifying question. One draw per failed
attempt, in order, from the ``rng`` given (the trainer seeds it with the configuration's seed and
the dialogue's id). Correct attempts, questions, critiques and every other turn are never
replaced.

The question is written by a ``QuestionWriter``, which sees the whole dialogue, the private
reference included, and writes the questions of many attempts in one call (the batch the trainer
gathers: ``prime_dialogues``): ``template_writer`` fills a template
(``TrainingConfig.qpriming_question_template``: ``{task_prompt}``, ``{round}``, ``{reference}``,
``{reference.KEY}``); ``model_writer`` asks a model (any generation backend: one batched call per
chunk of dialogues), shown the conversation up to the failed attempt as the student saw it, the
reference and the failed attempt as private context, and ``WRITER_INSTRUCTION``.

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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import islice

from models_gpu.conversation import student_view
from models_gpu.spec.results import TurnRow
from models_gpu.spec.training import (
    TrainingDialogue,
    question_template_unknown_names,
    render_question,
)
from models_gpu.spec.turns import is_critique
from models_gpu.types import GenerationRequest, Generator

# The private-context key of a question that replaced a failed attempt; its value is the attempt.
REPLACED_ATTEMPT_KEY = "qpriming_replaced_attempt"
# What a writer model is asked, after the conversation up to the failed attempt. The reference
# and the attempt reach it as private context (backends render that into the prompt).
WRITER_INSTRUCTION = (
    "Your next reply, given as the failed attempt in the private information, was wrong. "
    "Instead of answering, write the one short clarifying question you should have asked: the "
    "question whose answer would have led you to the reference answer. Write only the "
    "question; never state or hint at the answer itself."
)
# Dialogues whose questions one writer call writes (a batch for a model writer).
PRIMING_CHUNK = 64
WRITER_MAX_NEW_TOKENS = 64


@dataclass(frozen=True)
class QuestionRequest:
    """What a question writer sees: the dialogue (task, reference, turns) and the failed attempt
    to replace (``dialogue.turns[position]``)."""

    dialogue: TrainingDialogue
    position: int

    @property
    def attempt(self) -> TurnRow:
        return self.dialogue.turns[self.position]


QuestionWriter = Callable[[Sequence[QuestionRequest]], list[str]]
"""Writes one question per request, in order, in one call."""


def template_writer(template: str) -> QuestionWriter:
    """A question writer that fills ``template`` (ValueError for an unknown placeholder)."""
    unknown = question_template_unknown_names(template)
    if unknown:
        raise ValueError(f"unknown placeholder(s) in the question template: {', '.join(unknown)}")

    def write(requests: Sequence[QuestionRequest]) -> list[str]:
        return [
            render_question(
                template,
                task_prompt=request.dialogue.task_prompt,
                reference=request.dialogue.reference,
                round_number=request.attempt.round,
            )
            for request in requests
        ]

    return write


def model_writer(generator: Generator, *, seed: int, fallback: QuestionWriter) -> QuestionWriter:
    """A question writer that asks ``generator`` (one batched call per call). Each request is
    seeded by ``seed``, the dialogue and the attempt, so a rerun writes the same questions; a
    blank reply gets ``fallback``'s question instead (a dialogue is never trained on an empty
    turn)."""

    def write(requests: Sequence[QuestionRequest]) -> list[str]:
        generations = generator.generate([writer_request(r, seed=seed) for r in requests])
        questions = [generation.text.strip() for generation in generations]
        blank = [i for i, question in enumerate(questions) if not question]
        for i, question in zip(blank, fallback([requests[i] for i in blank]), strict=True):
            questions[i] = question
        return questions

    return write


def writer_request(request: QuestionRequest, *, seed: int) -> GenerationRequest:
    """What a writer model is asked for ``request``: the student's view of the conversation
    before the failed attempt, then ``WRITER_INSTRUCTION``; the reference and the attempt as
    private context."""
    dialogue = request.dialogue
    view = student_view(
        system=dialogue.student_system,
        task_prompt=dialogue.task_prompt,
        sharded=dialogue.sharded,
        turns=dialogue.turns[: request.position],
        instruction=WRITER_INSTRUCTION,
    )
    return GenerationRequest(
        messages=tuple(shown.message for shown in view),
        seed=_request_seed(seed, dialogue.dialogue_id, request.position),
        private_context={
            "reference": dict(dialogue.reference),
            "failed_attempt": request.attempt.text,
        },
        max_new_tokens=WRITER_MAX_NEW_TOKENS,
    )


def _request_seed(seed: int, dialogue_id: int, position: int) -> int:
    # Stable across processes (no hash()), and within the 32 bits every backend accepts.
    return (seed * 1_000_003 + dialogue_id * 1_009 + position) % 2**31


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


def dialogue_rng(seed: int, dialogue_id: int) -> random.Random:
    """The random stream of one dialogue under one seed (stable across processes)."""
    return random.Random(f"dialab-training:{seed}:{dialogue_id}")


def attempts_to_replace(
    dialogue: TrainingDialogue, *, decay: float, rng: random.Random
) -> list[int]:
    """The positions of the failed attempts drawn to become questions (one draw each, in
    order)."""
    if not 0 <= decay <= 1:
        raise ValueError(f"decay must be between 0 and 1, got {decay}")
    return [
        position
        for position, turn in enumerate(dialogue.turns)
        if is_failed_attempt(turn) and rng.random() < replacement_probability(decay, turn.round)
    ]


def with_questions(dialogue: TrainingDialogue, questions: dict[int, str]) -> TrainingDialogue:
    """``dialogue`` with the turn at each position of ``questions`` replaced by its question: it
    keeps its index and round, becomes kind "question" with no verdict, and keeps the attempt it
    replaced in its private context (never shown to the student)."""
    if not questions:
        return dialogue
    turns = list(dialogue.turns)
    for position, question in questions.items():
        attempt = turns[position]
        turns[position] = replace(
            attempt,
            kind="question",
            text=question,
            private_context={REPLACED_ATTEMPT_KEY: attempt.text},
            extracted_answer="",
            is_correct=None,
            score=None,
            verdict_details={},
        )
    return replace(dialogue, turns=tuple(turns))


def prime_dialogue(
    dialogue: TrainingDialogue,
    *,
    decay: float,
    rng: random.Random,
    write_question: QuestionWriter,
) -> TrainingDialogue:
    """``dialogue`` with some failed attempts replaced by questions (see the module
    docstring)."""
    positions = attempts_to_replace(dialogue, decay=decay, rng=rng)
    questions = _written(write_question, [QuestionRequest(dialogue, p) for p in positions])
    return with_questions(dialogue, dict(zip(positions, questions, strict=True)))


def prime_dialogues(
    dialogues: Iterable[TrainingDialogue],
    *,
    decay: float,
    seed: int,
    write_question: QuestionWriter,
    chunk: int = PRIMING_CHUNK,
) -> Iterator[TrainingDialogue]:
    """``prime_dialogue`` over a stream, each dialogue's draws from ``dialogue_rng(seed, id)``,
    with one writer call per ``chunk`` dialogues (a model writer's batch). The result does not
    depend on ``chunk``."""
    stream = iter(dialogues)
    while batch := list(islice(stream, chunk)):
        planned = [
            (
                dialogue,
                attempts_to_replace(
                    dialogue, decay=decay, rng=dialogue_rng(seed, dialogue.dialogue_id)
                ),
            )
            for dialogue in batch
        ]
        requests = [QuestionRequest(d, p) for d, positions in planned for p in positions]
        questions = iter(_written(write_question, requests))
        for dialogue, positions in planned:
            yield with_questions(dialogue, {p: next(questions) for p in positions})


def _written(write_question: QuestionWriter, requests: list[QuestionRequest]) -> list[str]:
    if not requests:
        return []
    questions = write_question(requests)
    if len(questions) != len(requests):
        raise ValueError(
            f"the question writer returned {len(questions)} questions for {len(requests)} attempts"
        )
    return questions
