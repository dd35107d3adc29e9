"""Test doubles for the dialogue engine: a recording wrapper, a result collector, and generators
whose replies a test writes as a function of the request."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from models_gpu.engine import EngineStats, run_dialogues
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.types import (
    DialogueJob,
    DialogueResult,
    Generation,
    GenerationRequest,
    Generator,
    TaskSpec,
)


@dataclass
class Recording:
    """Wraps a generator and remembers every batch it was asked for."""

    inner: Generator
    batches: list[list[GenerationRequest]] = field(default_factory=list)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.batches.append(list(requests))
        return self.inner.generate(requests)

    @property
    def batch_sizes(self) -> list[int]:
        return [len(batch) for batch in self.batches]

    @property
    def requests(self) -> list[GenerationRequest]:
        return [request for batch in self.batches for request in batch]


@dataclass
class Replying:
    """A generator whose reply to each request is ``reply(request)``; 2 prompt tokens and one
    completion token per word, so token sums are easy to check."""

    reply: Callable[[GenerationRequest], str]

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        return [
            Generation(self.reply(request), 2, len(self.reply(request).split()), 1.0)
            for request in requests
        ]


@dataclass
class Collector:
    calls: list[list[DialogueResult]] = field(default_factory=list)

    def __call__(self, finished: list[DialogueResult]) -> None:
        self.calls.append(finished)

    @property
    def results(self) -> list[DialogueResult]:
        return [result for call in self.calls for result in call]


def run(
    jobs: Sequence[DialogueJob],
    student: Generator,
    teacher: Generator | None,
    protocol: ProtocolSpec,
    **options: Any,
) -> tuple[list[DialogueResult], EngineStats]:
    collector = Collector()
    stats = run_dialogues(
        jobs, protocol, student=student, teacher=teacher, on_finished=collector, **options
    )
    return collector.results, stats


def transcript(result: DialogueResult) -> tuple[Any, ...]:
    """What must not depend on batching or resuming (latencies do)."""
    return (
        result.task_id,
        result.sample_index,
        result.seed,
        result.solved,
        result.first_correct_turn,
        result.end_reason,
        tuple(
            (turn.role, turn.kind, turn.round, turn.text, turn.verdict, turn.leak_flag)
            for turn in result.turns
        ),
    )


def arithmetic_job(task_id: int, left: int, right: int, seed: int, **task: Any) -> DialogueJob:
    return DialogueJob(
        task=TaskSpec(
            task_id=task_id,
            prompt=f"What is {left} + {right}?",
            reference={"answer": str(left + right)},
            verifier_kind="numeric",
            **task,
        ),
        sample_index=0,
        seed=seed,
    )
