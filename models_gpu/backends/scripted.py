"""The ``scripted`` backend: deterministic programmatic policies, chosen by ``RoleSpec.location``.

Policies:
    arithmetic-student  solves the arithmetic in the task and errs at a tunable rate
                        (params: ``first_try_accuracy``, ``feedback_gain``).
    feedback-teacher    writes feedback from verifier details; never states the answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from models_gpu.backends.arithmetic_student import ArithmeticStudent
from models_gpu.backends.feedback_teacher import feedback_teacher_reply
from models_gpu.types import Generation, GenerationRequest, RoleSpec

Policy = Callable[[GenerationRequest], str]


def _feedback_teacher(params: Mapping[str, Any]) -> Policy:
    if params:
        raise ValueError(f"feedback-teacher takes no params, got {sorted(params)}")
    return feedback_teacher_reply


_POLICY_FACTORIES: Mapping[str, Callable[[Mapping[str, Any]], Policy]] = {
    "arithmetic-student": lambda params: ArithmeticStudent.from_params(params).reply,
    "feedback-teacher": _feedback_teacher,
}
SCRIPTED_POLICIES: tuple[str, ...] = tuple(_POLICY_FACTORIES)


@dataclass(frozen=True)
class ScriptedGenerator:
    policy: Policy

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
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
    return ScriptedGenerator(factory(spec.params))
