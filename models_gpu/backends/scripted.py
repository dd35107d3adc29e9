"""The ``scripted`` backend: deterministic programmatic policies, chosen by ``RoleSpec.location``.

Policies:
    arithmetic-student  solves the arithmetic in the task and errs at a tunable rate
                        (params: ``first_try_accuracy``, ``feedback_gain``).
    feedback-teacher    writes feedback from verifier details; never states the answer.
    answer-revealer     a teacher that states the answer after a wrong attempt (the
                        credit-assignment check's environment).
    sharded-student     for sharded arithmetic: asks about what is missing, guesses early, or
                        answers once it has everything (params: ``ask_probability``,
                        ``final_accuracy``).
    shard-revealer      a user simulator that reveals the next unrevealed shard verbatim.

Every policy also takes ``delay_ms`` (float, default 0): the generator sleeps that long on each
``generate`` call (once per batch), so tests can make a run slow enough to cancel mid-run.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from models_gpu.backends.arithmetic_student import ArithmeticStudent
from models_gpu.backends.feedback_teacher import answer_revealer_reply, feedback_teacher_reply
from models_gpu.backends.shard_revealer import shard_revealer_reply
from models_gpu.backends.sharded_student import ShardedStudent
from models_gpu.spec.backends import read_backend_params
from models_gpu.spec.run import RoleSpec
from models_gpu.types import Generation, GenerationRequest

Policy = Callable[[GenerationRequest], str]


# Each policy from its params (``models_gpu.spec.backends.SCRIPTED_POLICIES`` lists them).
_POLICY_FACTORIES: Mapping[str, Callable[..., Policy]] = {
    "arithmetic-student": lambda **params: ArithmeticStudent(**params).reply,
    "feedback-teacher": lambda: feedback_teacher_reply,
    "answer-revealer": lambda: answer_revealer_reply,
    "sharded-student": lambda **params: ShardedStudent(**params).reply,
    "shard-revealer": lambda: shard_revealer_reply,
}


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
            prompt_tokens=sum(_words(message.content) for message in request.messages),
            completion_tokens=_words(text),
            latency_ms=latency_ms,
        )


@functools.lru_cache(maxsize=4096)  # a dialogue's messages come back every round
def _words(text: str) -> int:
    """A scripted policy's stand-in for a token count."""
    return len(text.split())


def load_scripted(spec: RoleSpec) -> ScriptedGenerator:
    params = read_backend_params("scripted", spec.location, spec.params)
    delay_ms = params.pop("delay_ms")
    return ScriptedGenerator(_POLICY_FACTORIES[spec.location](**params), delay_ms=delay_ms)
