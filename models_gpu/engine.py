"""The batched dialogue engine: every active dialogue advances one round at a time.

Per round: one ``student.generate`` call for all active dialogues, a verdict for each reply,
finished dialogues reported and dropped, then one ``teacher.generate`` call for the rest. Jobs run
in chunks of ``batch_size``. Finished dialogues are handed to ``on_finished`` at once; a stopped
run reports nothing unfinished, so the caller re-runs exactly those jobs to resume. Because every
draw is seeded by the job and the turn, a resumed dialogue comes out as it would have.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from models_gpu.types import (
    DialogueJob,
    DialogueResult,
    Generation,
    GenerationRequest,
    Generator,
    Message,
    ProtocolSpec,
    TurnRecord,
    Verdict,
)
from models_gpu.verifiers import verify

IMPLEMENTED_MODES = ("didactic", "single_turn")


@dataclass(frozen=True)
class EngineStats:
    dialogues_finished: int
    student_generations: int
    teacher_calls: int  # teacher generations, one per feedback turn
    prompt_tokens: int
    completion_tokens: int
    wall_seconds: float
    stopped_early: bool


@dataclass
class _Dialogue:
    """One dialogue in flight: its turns so far and how to show them to each speaker."""

    job: DialogueJob
    turns: list[TurnRecord] = field(default_factory=list)
    first_correct_turn: int | None = None

    def student_request(self, protocol: ProtocolSpec) -> GenerationRequest:
        messages = _system(protocol, "student_system")
        messages.append(Message("user", self.job.task.prompt))
        for turn in self.turns:
            messages.append(Message("assistant" if turn.role == "student" else "user", turn.text))
        return GenerationRequest(messages=tuple(messages), seed=self.job.seed)

    def teacher_request(self, protocol: ProtocolSpec) -> GenerationRequest:
        # The teacher posed the task, so from its side the task and its feedback are its own
        # ("assistant") and the student's attempts come from the "user".
        messages = _system(protocol, "teacher_system")
        messages.append(Message("assistant", self.job.task.prompt))
        for turn in self.turns:
            messages.append(Message("user" if turn.role == "student" else "assistant", turn.text))
        return GenerationRequest(
            messages=tuple(messages),
            seed=self.job.seed,
            private_context=self._teacher_private_context(protocol),
        )

    def _teacher_private_context(self, protocol: ProtocolSpec) -> dict[str, Any]:
        verdict = self.turns[-1].verdict
        assert verdict is not None, "the teacher answers a verified attempt"
        context: dict[str, Any] = {"extracted": verdict.extracted}
        if protocol.teacher_sees_reference:
            context["reference"] = dict(self.job.task.reference)
        if protocol.teacher_sees_verifier_details:
            context["verdict_details"] = dict(verdict.details)
        return context

    def add_attempt(self, round_number: int, generation: Generation, verdict: Verdict) -> None:
        self.turns.append(
            TurnRecord(
                index=len(self.turns),
                round=round_number,
                role="student",
                kind="attempt",
                text=generation.text,
                verdict=verdict,
                prompt_tokens=generation.prompt_tokens,
                completion_tokens=generation.completion_tokens,
                latency_ms=generation.latency_ms,
            )
        )
        if verdict.correct and self.first_correct_turn is None:
            self.first_correct_turn = round_number

    def add_feedback(
        self, round_number: int, generation: Generation, request: GenerationRequest
    ) -> None:
        self.turns.append(
            TurnRecord(
                index=len(self.turns),
                round=round_number,
                role="teacher",
                kind="feedback",
                text=generation.text,
                private_context=request.private_context,
                prompt_tokens=generation.prompt_tokens,
                completion_tokens=generation.completion_tokens,
                latency_ms=generation.latency_ms,
            )
        )

    def result(self) -> DialogueResult:
        solved = self.first_correct_turn is not None
        return DialogueResult(
            task_id=self.job.task.task_id,
            sample_index=self.job.sample_index,
            seed=self.job.seed,
            turns=tuple(self.turns),
            solved=solved,
            first_correct_turn=self.first_correct_turn,
            end_reason="solved" if solved else "max_turns",
        )


def run_dialogues(
    jobs: Sequence[DialogueJob],
    protocol: ProtocolSpec,
    *,
    student: Generator,
    teacher: Generator | None,
    on_finished: Callable[[list[DialogueResult]], None],
    should_stop: Callable[[], bool] = lambda: False,
    batch_size: int = 64,
) -> EngineStats:
    _check_arguments(protocol, teacher, batch_size)
    run = _Run(protocol, student, teacher, on_finished, should_stop)
    for start in range(0, len(jobs), batch_size):
        if not run.run_chunk([_Dialogue(job) for job in jobs[start : start + batch_size]]):
            return run.stats(stopped_early=True)
    return run.stats(stopped_early=False)


@dataclass
class _Run:
    protocol: ProtocolSpec
    student: Generator
    teacher: Generator | None
    on_finished: Callable[[list[DialogueResult]], None]
    should_stop: Callable[[], bool]
    started: float = field(default_factory=time.perf_counter)
    dialogues_finished: int = 0
    student_generations: int = 0
    teacher_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def run_chunk(self, active: list[_Dialogue]) -> bool:
        """Run one chunk of dialogues to the end; False when ``should_stop`` cut it short."""
        last_round = 1 if self.protocol.mode == "single_turn" else self.protocol.max_turns
        for round_number in range(1, last_round + 1):
            if self.should_stop():
                return False
            active = self._student_round(active, round_number, last_round)
            if not active:
                return True
            if self.should_stop():
                return False
            self._teacher_round(active, round_number)
        return True

    def _student_round(
        self, active: list[_Dialogue], round_number: int, last_round: int
    ) -> list[_Dialogue]:
        """Every active student replies; returns the dialogues that go on."""
        requests = [dialogue.student_request(self.protocol) for dialogue in active]
        generations = self._generate(self.student, requests)
        self.student_generations += len(generations)
        finished: list[_Dialogue] = []
        still_active: list[_Dialogue] = []
        for dialogue, generation in zip(active, generations, strict=True):
            verdict = verify(dialogue.job.task, generation.text)
            dialogue.add_attempt(round_number, generation, verdict)
            done = dialogue.first_correct_turn is not None or round_number == last_round
            (finished if done else still_active).append(dialogue)
        if finished:
            self.on_finished([dialogue.result() for dialogue in finished])
            self.dialogues_finished += len(finished)
        return still_active

    def _teacher_round(self, active: list[_Dialogue], round_number: int) -> None:
        assert self.teacher is not None, "only didactic dialogues outlive their first round"
        requests = [dialogue.teacher_request(self.protocol) for dialogue in active]
        generations = self._generate(self.teacher, requests)
        self.teacher_calls += len(generations)
        for dialogue, generation, request in zip(active, generations, requests, strict=True):
            dialogue.add_feedback(round_number, generation, request)

    def _generate(
        self, generator: Generator, requests: list[GenerationRequest]
    ) -> list[Generation]:
        generations = generator.generate(requests)
        if len(generations) != len(requests):
            raise RuntimeError(
                f"{type(generator).__name__} returned {len(generations)} generations "
                f"for {len(requests)} requests"
            )
        self.prompt_tokens += sum(generation.prompt_tokens for generation in generations)
        self.completion_tokens += sum(generation.completion_tokens for generation in generations)
        return generations

    def stats(self, *, stopped_early: bool) -> EngineStats:
        return EngineStats(
            dialogues_finished=self.dialogues_finished,
            student_generations=self.student_generations,
            teacher_calls=self.teacher_calls,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            wall_seconds=time.perf_counter() - self.started,
            stopped_early=stopped_early,
        )


def _check_arguments(protocol: ProtocolSpec, teacher: Generator | None, batch_size: int) -> None:
    if protocol.mode not in IMPLEMENTED_MODES:
        # sharded (a user simulator reveals shards) and self_correction (the student critiques
        # itself) slot in as further per-round steps after the student's turn.
        raise NotImplementedError(
            f"protocol mode {protocol.mode!r} is not implemented yet; "
            f"implemented modes: {', '.join(IMPLEMENTED_MODES)}"
        )
    if protocol.max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {protocol.max_turns}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if protocol.mode == "didactic" and teacher is None:
        raise ValueError("the didactic protocol needs a teacher")


def _system(protocol: ProtocolSpec, template_name: str) -> list[Message]:
    prompt = protocol.templates.get(template_name)
    return [Message("system", prompt)] if prompt else []
