"""Plain, frozen data that crosses the boundary between Dialab's web side and its model code.

Everything here is built from ORM rows by a selector in ``webapp`` (via ``workers``) and handed
to ``models_gpu``; results come back the same way. Nothing here knows about Django. What the web
side itself must agree on (the run configuration, ``ProtocolSpec``, ``RoleSpec``, the result
rows) is defined in ``models_gpu.spec``.

Vocabulary:
    turn round (``round``): the k in "accuracy after turn k". Round k holds the student's k-th
        reply and whatever answered it (teacher feedback, a revealed shard, a nudge).
    attempt: a student reply that gives an answer (``TurnRecord.kind == "attempt"``); see
        ``models_gpu.classify`` for how replies are told apart from questions and other talk.
    In sharded dialogues turn 0 (shard 1) opens round 1, before the student's first reply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["system", "student", "teacher", "user"]
TurnKind = Literal["attempt", "question", "feedback", "shard", "other"]
EndReason = Literal["solved", "max_turns", "shards_exhausted", "error", "no_answer"]
# The roles a person can play (``models_gpu.backends.human.Person``).
PersonRole = Literal["student", "teacher", "user_simulator"]


@dataclass(frozen=True)
class Message:
    """One chat message as a model sees it (``role`` is a chat-template role)."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class TaskSpec:
    """A verifiable task. ``reference`` is private: only the verifier and the teacher see it."""

    task_id: int
    prompt: str
    reference: Mapping[str, Any]
    verifier_kind: str
    verifier_config: Mapping[str, Any] = field(default_factory=dict)
    shards: tuple[str, ...] = ()
    domain: str = ""


@dataclass(frozen=True)
class Verdict:
    """What a verifier says of one response.

    ``extracted`` is the answer as the transcript shows it; ``details`` is what a teacher may be
    shown as private knowledge (never the reference itself).
    """

    correct: bool
    score: float
    extracted: str | None
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MoveCheck:
    """Feedback use of one judged student move (``models_gpu.verifiers.feedback_use``): whether
    it was valid, whether it agreed with every earlier verdict of its dialogue (None for the
    first move), and the share of valid moves that would have (None where not countable)."""

    valid: bool
    consistent: bool | None = None
    chance: float | None = None


@dataclass(frozen=True)
class GenerationRequest:
    """One conversation to continue, from the point of view of the model that speaks next.

    ``private_context`` is what that speaker knows beyond the conversation (for a teacher: the
    reference and the verifier's details). Backends that render prompts include it in the prompt;
    it is also stored with the turn so a reader sees what the speaker saw.
    """

    messages: tuple[Message, ...]
    seed: int
    private_context: Mapping[str, Any] = field(default_factory=dict)
    max_new_tokens: int = 256


@dataclass(frozen=True)
class Generation:
    """One reply. ``token_ids``: the ids the model sampled, through the end-of-sequence token
    when it stopped on one (empty when the backend does not see token ids: scripted, openai);
    online training trains on exactly these ids."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    token_ids: tuple[int, ...] = ()
    # Prompt tokens whose keys and values the backend reused rather than computed (its prefix
    # cache); 0 where a backend does not say. Read by benchmarks, not stored.
    cached_prompt_tokens: int = 0
    # The log-probability of each of ``token_ids`` under the distribution it was sampled from,
    # where the backend was asked for them (vLLM rollouts: importance sampling); else empty.
    token_logprobs: tuple[float, ...] = ()


class Generator(Protocol):
    """Every backend (scripted, transformers, vllm, openai, human) implements this.

    One call takes a whole batch: the engine makes one call per role per turn round.
    """

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]: ...


@dataclass(frozen=True)
class DialogueJob:
    """One dialogue to run: a task and which sample of it (K samples per task for pass@k).

    ``prefix``: turns already played, which the dialogue continues from (a fork of another
    dialogue, or one that waited for a person); the engine works out whose turn is next from
    them. ``person_reply``: a person's answer to that next turn, when a person plays it.
    """

    task: TaskSpec
    sample_index: int
    seed: int
    prefix: tuple[TurnRecord, ...] = ()
    person_reply: PersonReply | None = None


@dataclass(frozen=True)
class PersonReply:
    """What a person answered, and who (a name the transcript shows)."""

    text: str
    by: str


@dataclass(frozen=True)
class ParkedDialogue:
    """A dialogue that waits for a person: the ``role`` they play speaks next, in ``round``,
    seeing exactly ``request`` (the conversation from that role's side and its private
    context). Resume it with a job whose prefix is ``turns`` and whose ``person_reply`` is the
    person's answer."""

    job: DialogueJob
    turns: tuple[TurnRecord, ...]
    role: PersonRole
    round: int
    request: GenerationRequest

    @property
    def rounds_played(self) -> int:
        """Student replies so far (critiques aside): the turns whose outcome is known."""
        return self.round - 1 if self.role == "student" else self.round


@dataclass(frozen=True)
class TurnRecord:
    index: int
    round: int
    role: Role
    kind: TurnKind
    text: str
    private_context: Mapping[str, Any] = field(default_factory=dict)
    verdict: Verdict | None = None
    leak_flag: bool = False  # a teacher turn that states the reference answer
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    token_ids: tuple[int, ...] = ()  # a student reply's sampled ids (``Generation.token_ids``)
    token_logprobs: tuple[float, ...] = ()  # and their log-probabilities, where reported
    move: MoveCheck | None = None  # a judged student move of a checkable task


@dataclass(frozen=True)
class DialogueResult:
    task_id: int
    sample_index: int
    seed: int
    turns: tuple[TurnRecord, ...]
    solved: bool
    first_correct_turn: int | None
    end_reason: EndReason
