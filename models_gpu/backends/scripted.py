"""The ``scripted`` backend: deterministic programmatic policies, chosen by ``RoleSpec.location``.

Policies:
    arithmetic-student  solves the arithmetic in the task and errs at a tunable rate
                        (params: ``first_try_accuracy``, ``feedback_gain``).
    feedback-teacher    writes feedback from verifier details; never states the answer.
    sharded-student     for sharded arithmetic: asks about what is missing, guesses early, or
                        answers once it has everything (params: ``ask_probability``,
                        ``final_accuracy``).
    shard-revealer      a user simulator that reveals the next unrevealed shard verbatim.

Every policy also takes ``delay_ms`` (float, default 0): the generator sleeps that long on each
``generate`` call (once per batch), so tests can make a run slow enough to cancel mid-run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from models_gpu.backends.arithmetic_student import ArithmeticStudent
from models_gpu.backends.feedback_teacher import feedback_teacher_reply
from models_gpu.backends.shard_revealer import shard_revealer_reply
from models_gpu.backends.sharded_student import ShardedStudent
from models_gpu.types import Generation, GenerationRequest, RoleSpec

Policy = Callable[[GenerationRequest], str]


def _without_params(name: str, policy: Policy) -> Callable[[Mapping[str, Any]], Policy]:
    def factory(params: Mapping[str, Any]) -> Policy:
        if params:
            raise ValueError(f"{name} takes no params, got {sorted(params)}")
        return policy

    return factory


_POLICY_FACTORIES: Mapping[str, Callable[[Mapping[str, Any]], Policy]] = {
    "arithmetic-student": lambda params: ArithmeticStudent.from_params(params).reply,
    "feedback-teacher": _without_params("feedback-teacher", feedback_teacher_reply),
    "sharded-student": lambda params: ShardedStudent.from_params(params).reply,
    "shard-revealer": _without_params("shard-revealer", shard_revealer_reply),
}
SCRIPTED_POLICIES: tuple[str, ...] = tuple(_POLICY_FACTORIES)


@dataclass(frozen=True)
class ScriptedGenerator:
    policy: Policy
    delay_ms: float = 0.0

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if self.delay_ms:
            time.sleep(self.delay_ms / 1000)
        return [self._generate_one(request) for request in requests]

    def _generate_one(self, request: GenerationRequest) -> Generation:
        started = time.perf_counter()
        text = self.policy(request)
        latency_ms = (time.perf_counter() - started) * 1000
        return Generation(
            text=text,
            prompt_tokens=sum(len(message.content.split()) for message in request.messages),
            completion_tokens=len(text.split()),
            latency_ms=latency_ms,
        )


def load_scripted(spec: RoleSpec) -> ScriptedGenerator:
    factory = _POLICY_FACTORIES.get(spec.location)
    if factory is None:
        raise ValueError(
            f"scripted backend has no policy {spec.location!r}; "
            f"known policies: {', '.join(SCRIPTED_POLICIES)}"
        )
    params = dict(spec.params)
    delay_ms = _delay_ms(params.pop("delay_ms", 0.0))
    return ScriptedGenerator(factory(params), delay_ms=delay_ms)


def _delay_ms(value: object) -> float:
    try:
        delay = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"delay_ms must be a number of milliseconds, got {value!r}") from None
    if not 0.0 <= delay < float("inf"):
        raise ValueError(f"delay_ms must be a finite number >= 0, got {value!r}")
    return delay
