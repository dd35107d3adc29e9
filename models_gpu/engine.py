"""The batched dialogue engine: every active dialogue of a run advances one round at a time.

A round is one ``student.generate`` call for all active dialogues, a verdict and a turn kind for
each reply (``models_gpu.classify``), the dialogues that ended reported to ``on_finished`` and
dropped, ``on_round(round, dialogues still going)`` when given, then one call for whoever answers
the rest. Jobs run in chunks of ``batch_size``, each played to its end before the next starts. A
stopped run reports nothing unfinished, so the caller re-runs exactly those jobs to resume;
because every draw is seeded by the job and the turn, a resumed dialogue comes out as it would
have.

Protocols (``ProtocolSpec.mode``):
    didactic        The student sees the task and replies; every reply is verified. A wrong one
                    gets teacher feedback (one teacher call per round); the teacher privately sees
                    the reference and the verifier's details (as the protocol allows) and is told
                    not to reveal the answer. Every teacher turn is checked for leaks
                    (``models_gpu.leak``); with ``regenerate_leaks`` a flagged turn is generated
                    again, up to that many times, one batched call per retry with a new seed.
                    Ends "solved" at the first correct reply or "max_turns".
    sharded         The student never sees ``task.prompt``. Turn 0 is shard 1 (role "user", kind
                    "shard"). After each student reply that does not end the dialogue, the user
                    simulator speaks once (one call per round): it reveals the next shard (kind
                    "shard", ``private_context = {"shard": i, "shards_total": n}``) or, with every
                    shard out, answers briefly (kind "other"). Only replies classified as
                    attempts are verified and carry a verdict. Ends "solved" at the first correct
                    attempt, "shards_exhausted" at an attempt made when every shard was out, or
                    "max_turns". An attempt is premature when the last shard turn before it has
                    ``shard < shards_total``. Tasks without shards are refused (ValueError naming
                    them): a sharded run of unsharded tasks would silently be a single-turn run.
    self_correction No teacher. After a wrong reply: "nudge" adds a user turn (kind "feedback")
                    with the nudge template; "critique" makes one more student call per round
                    with the self_critique template appended to that call's prompt only; the
                    critique is stored as a student turn of kind "other" (its private context
                    holds the instruction) and the student's later calls show it where feedback
                    goes, as the message its next attempt answers (Self-Refine; RL²F's critique
                    prediction), so roles keep alternating. Ends "solved" or "max_turns".
    single_turn     One verified reply; ends "solved" or "max_turns".

Continuing dialogues (``DialogueJob.prefix``): a job can bring turns already played (a fork of
another dialogue, or a dialogue that waited for a person). Its next speaker follows from them:
after a student reply, whoever answers the student in that round; otherwise the student, in the
next round. Such a dialogue joins the chunk's rounds there, so a chunk still makes one call per
role per round, and ``on_round`` counts it as going through the rounds its turns cover. A prefix
with a correct reply, or one whose next turn is past ``max_turns``, is refused (ValueError).

People (``models_gpu.backends.human.Person`` as a role): nothing is generated for them. A
dialogue whose next speaker is a person and whose job brings no ``person_reply`` is parked:
reported to ``on_parked`` with the request that person's role sees, and dropped from the chunk.
A job's ``person_reply`` stands for that role's next turn (zero tokens, ``private_context``
``{"person": who}``) and goes through the same verification, turn kinds and leak checks as a
model's; a person's flagged teacher turn is not regenerated.

Outside sharded mode every student reply is verified and keeps its verdict, whatever its kind;
a reply the verifier accepts is an attempt and ends the dialogue solved.

Seeds: every call for a dialogue uses ``job.seed`` (backends vary their draws with the
conversation), except a regenerated teacher turn, which uses ``derive_seed(job.seed, retry)``.

Accounting (``EngineStats``): generations per role (``student_generations`` includes critiques,
``teacher_calls`` includes leak regenerations, ``user_simulator_calls``, ``judge_calls``), prompt
and completion tokens of every generation (judge included), wall time. A turn's tokens and
latency cover every generation made for it, regenerations included.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from models_gpu import classify, leak
from models_gpu.backends.human import Person
from models_gpu.backends.scripted import ScriptedGenerator
from models_gpu.backends.shard_revealer import shard_revealer_reply
from models_gpu.classify import StudentTurnKind
from models_gpu.conversation import StudentMessages
from models_gpu.leak import LeakReference
from models_gpu.spec.protocol import ProtocolSpec, protocol_problems
from models_gpu.spec.templates import render_for_dialogue, resolve_templates
from models_gpu.spec.turns import CRITIQUE_INSTRUCTION_KEY, Phase, can_go_on, next_turn
from models_gpu.types import (
    DialogueJob,
    DialogueResult,
    EndReason,
    Generation,
    GenerationRequest,
    Generator,
    Message,
    MoveCheck,
    ParkedDialogue,
    PersonReply,
    PersonRole,
    Role,
    TaskSpec,
    TurnKind,
    TurnRecord,
    Verdict,
)
from models_gpu.verifiers import verify
from models_gpu.verifiers.feedback_use import check_move

SpeakerRole = Literal["student", "teacher", "user_simulator", "judge"]


@dataclass(frozen=True)
class EngineStats:
    dialogues_finished: int
    student_generations: int  # every student generation, critiques included
    teacher_calls: int  # teacher generations: one per feedback turn, plus leak regenerations
    prompt_tokens: int  # every generation of the run, judge included
    completion_tokens: int
    wall_seconds: float
    stopped_early: bool
    user_simulator_calls: int = 0  # user simulator generations (sharded)
    judge_calls: int = 0  # judge generations (turn kinds and leaks)
    person_turns: int = 0  # turns people answered (not generations: counted apart)
    dialogues_parked: int = 0  # dialogues left waiting for a person


def derive_seed(seed: int, retry: int) -> int:
    """A new, stable seed for the ``retry``-th regeneration of a turn (not ``hash()``: stable
    across processes)."""
    digest = hashlib.blake2b(f"{seed}:regenerate:{retry}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") >> 1  # 31 bits: fits every backend's seed


@dataclass
class _Cost:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0

    @classmethod
    def of(cls, generation: Generation) -> _Cost:
        return cls(generation.prompt_tokens, generation.completion_tokens, generation.latency_ms)

    def add(self, generation: Generation) -> None:
        self.prompt_tokens += generation.prompt_tokens
        self.completion_tokens += generation.completion_tokens
        self.latency_ms += generation.latency_ms


@dataclass
class _Dialogue:
    """One dialogue in flight: its turns so far and how to show them to each speaker."""

    job: DialogueJob
    templates: Mapping[str, str]
    max_turns: int
    leak_reference: LeakReference
    turns: list[TurnRecord] = field(default_factory=list)
    first_correct_turn: int | None = None
    end_reason: EndReason | None = None
    shards_revealed: int = 0
    person_reply: PersonReply | None = None
    # Each template as rendered for this dialogue (its values never change), so that a round
    # does not render the system prompts of every dialogue again.
    rendered: dict[str, str] = field(default_factory=dict)
    # What the student and whoever answers it see of the turns, each turn's message made once:
    # every round asks for the views again, and turns are only ever appended.
    student_view: StudentMessages | None = None
    answerer_view: list[Message] = field(default_factory=list)

    @classmethod
    def continuing(
        cls, job: DialogueJob, templates: Mapping[str, str], max_turns: int
    ) -> _Dialogue:
        """A dialogue from its job: new, or going on from the job's prefix."""
        dialogue = cls(
            job,
            templates,
            max_turns,
            leak.leak_reference(job.task),
            turns=list(job.prefix),
            shards_revealed=sum(turn.kind == "shard" for turn in job.prefix),
            person_reply=job.person_reply,
        )
        if any(turn.verdict is not None and turn.verdict.correct for turn in job.prefix):
            raise ValueError(
                f"task {job.task.task_id} sample {job.sample_index}: its turns already hold a "
                "correct reply, so the dialogue is over"
            )
        round_number, phase = dialogue.next_turn()
        if not can_go_on(round_number, phase, max_turns):
            raise ValueError(
                f"task {job.task.task_id} sample {job.sample_index}: its next turn is past "
                f"max_turns ({max_turns})"
            )
        return dialogue

    def next_turn(self) -> tuple[int, Phase]:
        """The round and phase the dialogue goes on in (``spec.turns.next_turn``)."""
        return next_turn(self.turns)

    @property
    def task(self) -> TaskSpec:
        return self.job.task

    @property
    def shards_total(self) -> int:
        return len(self.task.shards)

    def template(self, name: str) -> str:
        if name not in self.rendered:
            self.rendered[name] = render_for_dialogue(
                self.templates, name, max_turns=self.max_turns, shards_total=self.shards_total
            )
        return self.rendered[name]

    # --- What each speaker sees ---------------------------------------------------------------

    def student_request(self, *, sharded: bool, instruction: str = "") -> GenerationRequest:
        """The student's view (``models_gpu.conversation``, shared with training): the public
        conversation, the student's replies as "assistant". ``instruction`` is appended as a
        last user message for this call only (the critique request)."""
        if self.student_view is None:
            self.student_view = StudentMessages(
                system=self.template("student_system"),
                task_prompt=self.task.prompt,
                sharded=sharded,
            )
        messages = self.student_view.of(self.turns, instruction=instruction)
        return GenerationRequest(messages=messages, seed=self.job.seed)

    def teacher_request(self, protocol: ProtocolSpec) -> GenerationRequest:
        # The teacher posed the task, so from its side the task and its feedback are its own
        # ("assistant") and the student's replies come from the "user".
        messages = (
            *self._system("teacher_system"),
            Message("assistant", self.task.prompt),
            *self._answerer_turns(),
        )
        return GenerationRequest(
            messages=messages,
            seed=self.job.seed,
            private_context=self._teacher_private_context(protocol),
        )

    def simulator_request(self) -> GenerationRequest:
        # The simulator plays the user: its own (user) turns are "assistant" from its side.
        messages = (*self._system("user_simulator_system"), *self._answerer_turns())
        unrevealed = list(self.task.shards[self.shards_revealed :])
        return GenerationRequest(
            messages=messages,
            seed=self.job.seed,
            private_context={
                "unrevealed_shards": unrevealed,
                "next_shard": unrevealed[0] if unrevealed else None,
            },
        )

    def _system(self, template_name: str) -> tuple[Message, ...]:
        prompt = self.template(template_name)
        return (Message("system", prompt),) if prompt else ()

    def _answerer_turns(self) -> list[Message]:
        """The turns as whoever answers the student (teacher, user simulator) sees them: the
        student's replies come from the "user", everything else is its own side's."""
        seen = self.answerer_view
        seen.extend(
            Message("user" if turn.role == "student" else "assistant", turn.text)
            for turn in self.turns[len(seen) :]
        )
        return seen

    def _teacher_private_context(self, protocol: ProtocolSpec) -> dict[str, Any]:
        verdict = self.turns[-1].verdict
        assert verdict is not None, "the teacher answers a verified reply"
        context: dict[str, Any] = {"extracted": verdict.extracted}
        if self.task.domain:  # the task family, so feedback can fit it (higher / lower, ...)
            context["domain"] = self.task.domain
        if protocol.teacher_sees_reference:
            context["reference"] = dict(self.task.reference)
        if protocol.teacher_sees_verifier_details:
            context["verdict_details"] = dict(verdict.details)
        return context

    # --- Recording turns ----------------------------------------------------------------------

    def add_turn(
        self,
        round_number: int,
        role: Role,
        kind: TurnKind,
        text: str,
        cost: _Cost | None = None,
        **extra: Any,
    ) -> None:
        cost = cost or _Cost()
        self.turns.append(
            TurnRecord(
                index=len(self.turns),
                round=round_number,
                role=role,
                kind=kind,
                text=text,
                prompt_tokens=cost.prompt_tokens,
                completion_tokens=cost.completion_tokens,
                latency_ms=cost.latency_ms,
                **extra,
            )
        )

    def check_move(self, verdict: Verdict) -> MoveCheck | None:
        """Feedback use of the student's next move, judged ``verdict``, after its earlier ones."""
        earlier = [turn.verdict for turn in self.turns if turn.role == "student" and turn.verdict]
        return check_move(self.task, verdict, earlier)

    def reveal_shard(self, round_number: int, text: str, cost: _Cost | None = None) -> None:
        self.shards_revealed += 1
        context = {"shard": self.shards_revealed, "shards_total": self.shards_total}
        self.add_turn(round_number, "user", "shard", text, cost, private_context=context)

    def result(self) -> DialogueResult:
        assert self.end_reason is not None, "only ended dialogues are reported"
        return DialogueResult(
            task_id=self.task.task_id,
            sample_index=self.job.sample_index,
            seed=self.job.seed,
            turns=tuple(self.turns),
            solved=self.first_correct_turn is not None,
            first_correct_turn=self.first_correct_turn,
            end_reason=self.end_reason,
        )


def default_user_simulator() -> Generator:
    """The scripted shard-revealer: what sharded runs use when no simulator is given."""
    return ScriptedGenerator(shard_revealer_reply)


def run_dialogues(
    jobs: Sequence[DialogueJob],
    protocol: ProtocolSpec,
    *,
    student: Generator,
    teacher: Generator | None,
    on_finished: Callable[[list[DialogueResult]], None],
    should_stop: Callable[[], bool] = lambda: False,
    batch_size: int = 64,
    user_simulator: Generator | None = None,
    judge: Generator | None = None,
    on_round: Callable[[int, int], None] | None = None,
    on_parked: Callable[[list[ParkedDialogue]], None] | None = None,
    take_up: Callable[[], Sequence[DialogueJob]] = lambda: (),
) -> EngineStats:
    """Run ``jobs`` under ``protocol``; see the module docstring. ``user_simulator`` speaks in
    sharded runs (default: the scripted shard-revealer); ``judge`` classifies ambiguous replies
    and checks teacher turns for leaks when the protocol asks for it (without one, rules only).
    ``on_round(k, going)`` follows every student round's ``on_finished``, ``going`` being the
    chunk's dialogues that played round k and go on: what a live accuracy needs to count the
    dialogues not finished yet (round 1 starts a new chunk). ``on_parked`` takes the dialogues
    left waiting for a person (needed when a role is a ``Person``). ``take_up`` is asked for
    more jobs before every chunk, and what it returns plays next, before the jobs still waiting:
    a person's answer given while a run's job plays waits only for the chunk in play."""
    templates = _check_arguments(jobs, protocol, teacher, batch_size)
    people = [g for g in (student, teacher, user_simulator) if isinstance(g, Person)]
    if people and on_parked is None:
        raise ValueError("a person plays a role: on_parked must take the dialogues they park")
    if protocol.mode == "sharded" and user_simulator is None:
        user_simulator = default_user_simulator()
    run = _Run(
        protocol,
        templates,
        student,
        teacher,
        user_simulator,
        judge,
        on_finished,
        should_stop,
        on_round,
        on_parked or (lambda parked: None),
    )
    waiting = list(jobs)
    while True:
        waiting[:0] = take_up()
        if not waiting:
            return run.stats(stopped_early=False)
        chunk, waiting = waiting[:batch_size], waiting[batch_size:]
        if not run.run_chunk([run.new_dialogue(job) for job in chunk]):
            return run.stats(stopped_early=True)


@dataclass
class _Run:
    protocol: ProtocolSpec
    templates: Mapping[str, str]
    student: Generator
    teacher: Generator | None
    user_simulator: Generator | None
    judge: Generator | None
    on_finished: Callable[[list[DialogueResult]], None]
    should_stop: Callable[[], bool]
    on_round: Callable[[int, int], None] | None
    on_parked: Callable[[list[ParkedDialogue]], None]
    started: float = field(default_factory=time.perf_counter)
    dialogues_finished: int = 0
    generations: dict[SpeakerRole, int] = field(
        default_factory=lambda: {"student": 0, "teacher": 0, "user_simulator": 0, "judge": 0}
    )
    prompt_tokens: int = 0
    completion_tokens: int = 0
    person_turns: int = 0
    dialogues_parked: int = 0

    @property
    def sharded(self) -> bool:
        return self.protocol.mode == "sharded"

    def new_dialogue(self, job: DialogueJob) -> _Dialogue:
        return _Dialogue.continuing(job, self.templates, self.protocol.max_turns)

    def run_chunk(self, chunk: list[_Dialogue]) -> bool:
        """Run one chunk of dialogues to the end, or until each waits for a person; False when
        ``should_stop`` cut it short. A continuing dialogue joins at its next turn, and counts as
        going through the rounds before it."""
        if self.sharded:
            for dialogue in chunk:
                if not dialogue.turns:
                    dialogue.reveal_shard(1, dialogue.task.shards[0])
        joining = {id(dialogue): dialogue.next_turn() for dialogue in chunk}
        waiting = list(chunk)
        active: list[_Dialogue] = []

        def join(round_number: int, phase: str) -> None:
            arriving = [d for d in waiting if joining[id(d)] == (round_number, phase)]
            waiting[:] = [d for d in waiting if joining[id(d)] != (round_number, phase)]
            active.extend(arriving)

        for round_number in range(1, self.protocol.max_turns + 1):
            if self.should_stop():
                return False
            join(round_number, "student")
            active[:] = self._student_round(active, round_number)
            if self.on_round is not None:
                self.on_round(round_number, len(active) + len(waiting))
            if not active and not waiting:
                return True
            if self.should_stop():
                return False
            join(round_number, "respond")
            active[:] = self._respond(active, round_number)
            if not active and not waiting:  # the rest wait for a person
                return True
        assert not active and not waiting, "the last round ends every dialogue"
        return True

    # --- The student's turn -------------------------------------------------------------------

    def _student_round(self, active: list[_Dialogue], round_number: int) -> list[_Dialogue]:
        """Every active student replies; returns the dialogues that go on."""
        requests = [dialogue.student_request(sharded=self.sharded) for dialogue in active]
        active, requests, generations = self._speak("student", active, requests, round_number)
        verdicts = [
            verify(dialogue.task, generation.text)
            for dialogue, generation in zip(active, generations, strict=True)
        ]
        kinds, judged = self._turn_kinds(active, requests, generations, verdicts)
        finished: list[_Dialogue] = []
        still_active: list[_Dialogue] = []
        for i, (dialogue, generation, verdict) in enumerate(
            zip(active, generations, verdicts, strict=True)
        ):
            kind = "attempt" if verdict.correct else kinds[i]
            judged_move = kind == "attempt" or not self.sharded
            dialogue.add_turn(
                round_number,
                "student",
                kind,
                generation.text,
                _Cost.of(generation),
                verdict=verdict if judged_move else None,
                private_context={**judged.get(i, {}), **_person_context(generation)},
                token_ids=generation.token_ids,
                token_logprobs=generation.token_logprobs,
                move=dialogue.check_move(verdict) if judged_move else None,
            )
            dialogue.end_reason = self._end_reason(dialogue, kind, verdict, round_number)
            if verdict.correct:
                dialogue.first_correct_turn = round_number
            (finished if dialogue.end_reason else still_active).append(dialogue)
        if finished:
            self.on_finished([dialogue.result() for dialogue in finished])
            self.dialogues_finished += len(finished)
        return still_active

    def _end_reason(
        self, dialogue: _Dialogue, kind: StudentTurnKind, verdict: Verdict, round_number: int
    ) -> EndReason | None:
        if verdict.correct:
            return "solved"
        if self.sharded and kind == "attempt" and dialogue.shards_revealed == dialogue.shards_total:
            return "shards_exhausted"
        if round_number == self.protocol.max_turns:
            return "max_turns"
        return None

    def _turn_kinds(
        self,
        active: list[_Dialogue],
        requests: list[GenerationRequest],
        generations: list[Generation],
        verdicts: list[Verdict],
    ) -> tuple[list[StudentTurnKind], dict[int, dict[str, Any]]]:
        """Rules for every reply; the judge for the ambiguous ones, in one batched call.
        Returns the kinds and, for the judged replies, what the judge said."""
        classifications = [
            classify.classify_reply(dialogue.task, generation.text, verdict)
            for dialogue, generation, verdict in zip(active, generations, verdicts, strict=True)
        ]
        kinds = [classification.kind for classification in classifications]
        ambiguous = [i for i, c in enumerate(classifications) if c.ambiguous]
        if not (self.protocol.judge_turn_kinds and self.judge is not None and ambiguous):
            return kinds, {}
        judge_requests = [
            classify.judge_request(
                context=requests[i].messages[-1].content if requests[i].messages else "",
                reply=generations[i].text,
                seed=active[i].job.seed,
                template=active[i].template("judge_turn_kind"),
            )
            for i in ambiguous
        ]
        replies = self._generate("judge", judge_requests)
        judged: dict[int, dict[str, Any]] = {}
        for i, reply in zip(ambiguous, replies, strict=True):
            label = classify.parse_judge_reply(reply.text)
            if label is not None:
                kinds[i] = label
            judged[i] = {"turn_kind_judge": {"reply": reply.text, "label": label}}
        return kinds, judged

    # --- Whoever answers the student ----------------------------------------------------------

    def _respond(self, active: list[_Dialogue], round_number: int) -> list[_Dialogue]:
        """Whoever answers the students speaks; returns the dialogues that go on (not parked)."""
        mode = self.protocol.mode
        if mode == "didactic":
            return self._teacher_round(active, round_number)
        if mode == "sharded":
            return self._simulator_round(active, round_number)
        if self.protocol.self_correction == "critique":
            return self._critique_round(active, round_number)
        for dialogue in active:
            dialogue.add_turn(round_number, "user", "feedback", dialogue.template("nudge"))
        return active

    def _teacher_round(self, active: list[_Dialogue], round_number: int) -> list[_Dialogue]:
        assert self.teacher is not None, "checked by _check_arguments"
        requests = [dialogue.teacher_request(self.protocol) for dialogue in active]
        active, requests, generations = self._speak("teacher", active, requests, round_number)
        costs = [_Cost.of(generation) for generation in generations]
        flags, judge_notes = self._leak_flags(active, generations)
        regenerations = [0] * len(active)
        retries = 0 if isinstance(self.teacher, Person) else self.protocol.regenerate_leaks
        for retry in range(1, retries + 1):
            flagged = [i for i, flag in enumerate(flags) if flag]
            if not flagged:
                break
            retry_requests = [
                replace(requests[i], seed=derive_seed(requests[i].seed, retry)) for i in flagged
            ]
            retried = self._generate("teacher", retry_requests)
            retried_flags, retried_notes = self._leak_flags([active[i] for i in flagged], retried)
            for position, i in enumerate(flagged):
                generations[i] = retried[position]
                costs[i].add(retried[position])
                flags[i] = retried_flags[position]
                judge_notes[i] = retried_notes[position]
                regenerations[i] = retry
        for i, (dialogue, request) in enumerate(zip(active, requests, strict=True)):
            context = {**request.private_context, **_person_context(generations[i])}
            if regenerations[i]:
                context["leak_regenerations"] = regenerations[i]
            if judge_notes[i] is not None:
                context["leak_judge"] = judge_notes[i]
            dialogue.add_turn(
                round_number,
                "teacher",
                "feedback",
                generations[i].text,
                costs[i],
                private_context=context,
                leak_flag=flags[i],
            )
        return active

    def _leak_flags(
        self, dialogues: list[_Dialogue], generations: list[Generation]
    ) -> tuple[list[bool], list[str | None]]:
        """Rule flags, then the judge (one batched call) for the turns the rules let through.
        Returns the flags and, per turn, the judge's raw reply (None when not asked)."""
        flags = [
            leak.leaks(generation.text, dialogue.leak_reference)
            for dialogue, generation in zip(dialogues, generations, strict=True)
        ]
        notes: list[str | None] = [None] * len(dialogues)
        if not (self.protocol.judge_leaks and self.judge is not None):
            return flags, notes
        asked = [
            i for i, flag in enumerate(flags) if not flag and dialogues[i].leak_reference.shown
        ]
        if not asked:
            return flags, notes
        requests = [
            leak.judge_request(
                reference=dialogues[i].leak_reference,
                text=generations[i].text,
                seed=dialogues[i].job.seed,
                template=dialogues[i].template("judge_leak"),
            )
            for i in asked
        ]
        for i, reply in zip(asked, self._generate("judge", requests), strict=True):
            notes[i] = reply.text
            flags[i] = leak.parse_judge_reply(reply.text) is True
        return flags, notes

    def _simulator_round(self, active: list[_Dialogue], round_number: int) -> list[_Dialogue]:
        requests = [dialogue.simulator_request() for dialogue in active]
        active, _, generations = self._speak("user_simulator", active, requests, round_number)
        for dialogue, generation in zip(active, generations, strict=True):
            cost = _Cost.of(generation)
            if dialogue.shards_revealed < dialogue.shards_total:
                dialogue.reveal_shard(round_number, generation.text, cost)
            else:
                context = {"shards_total": dialogue.shards_total}
                dialogue.add_turn(
                    round_number, "user", "other", generation.text, cost, private_context=context
                )
        return active

    def _critique_round(self, active: list[_Dialogue], round_number: int) -> list[_Dialogue]:
        instructions = {id(dialogue): dialogue.template("self_critique") for dialogue in active}
        requests = [
            dialogue.student_request(sharded=False, instruction=instructions[id(dialogue)])
            for dialogue in active
        ]
        active, _, generations = self._speak("student", active, requests, round_number)
        for dialogue, generation in zip(active, generations, strict=True):
            instruction = instructions[id(dialogue)]
            dialogue.add_turn(
                round_number,
                "student",
                "other",
                generation.text,
                _Cost.of(generation),
                private_context={
                    CRITIQUE_INSTRUCTION_KEY: instruction,
                    **_person_context(generation),
                },
                token_ids=generation.token_ids,
            )
        return active

    # --- Calls and accounting -----------------------------------------------------------------

    def _speak(
        self,
        role: PersonRole,
        dialogues: list[_Dialogue],
        requests: list[GenerationRequest],
        round_number: int,
    ) -> tuple[list[_Dialogue], list[GenerationRequest], list[Generation]]:
        """``role``'s replies to ``requests``: generated, or, for a person, the replies their
        jobs bring, the other dialogues being parked. Returns the dialogues that got a reply,
        their requests and the replies."""
        if not isinstance(self._generator(role), Person):
            return dialogues, requests, self._generate(role, requests)
        answered: list[tuple[_Dialogue, GenerationRequest, Generation]] = []
        parked: list[ParkedDialogue] = []
        for dialogue, request in zip(dialogues, requests, strict=True):
            reply, dialogue.person_reply = dialogue.person_reply, None
            if reply is not None:
                answered.append((dialogue, request, _PersonGeneration.of(reply)))
                continue
            parked.append(
                ParkedDialogue(dialogue.job, tuple(dialogue.turns), role, round_number, request)
            )
        self.person_turns += len(answered)
        if parked:
            self.dialogues_parked += len(parked)
            self.on_parked(parked)
        return (
            [dialogue for dialogue, _, _ in answered],
            [request for _, request, _ in answered],
            [generation for _, _, generation in answered],
        )

    def _generate(self, role: SpeakerRole, requests: list[GenerationRequest]) -> list[Generation]:
        if not requests:  # a round no dialogue has joined yet (forks that go on later)
            return []
        generator = self._generator(role)
        generations = generator.generate(requests)
        if len(generations) != len(requests):
            raise RuntimeError(
                f"{type(generator).__name__} returned {len(generations)} generations "
                f"for {len(requests)} requests"
            )
        self.generations[role] += len(generations)
        self.prompt_tokens += sum(generation.prompt_tokens for generation in generations)
        self.completion_tokens += sum(generation.completion_tokens for generation in generations)
        return generations

    def _generator(self, role: SpeakerRole) -> Generator:
        generator = {
            "student": self.student,
            "teacher": self.teacher,
            "user_simulator": self.user_simulator,
            "judge": self.judge,
        }[role]
        assert generator is not None, f"no {role} to call"
        return generator

    def stats(self, *, stopped_early: bool) -> EngineStats:
        return EngineStats(
            dialogues_finished=self.dialogues_finished,
            student_generations=self.generations["student"],
            teacher_calls=self.generations["teacher"],
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            wall_seconds=time.perf_counter() - self.started,
            stopped_early=stopped_early,
            user_simulator_calls=self.generations["user_simulator"],
            judge_calls=self.generations["judge"],
            person_turns=self.person_turns,
            dialogues_parked=self.dialogues_parked,
        )


@dataclass(frozen=True)
class _PersonGeneration(Generation):
    """A person's reply, standing where a generation goes: no tokens, no time counted."""

    by: str = ""

    @classmethod
    def of(cls, reply: PersonReply) -> _PersonGeneration:
        return cls(reply.text, prompt_tokens=0, completion_tokens=0, latency_ms=0.0, by=reply.by)


def _person_context(generation: Generation) -> dict[str, str]:
    """What a turn records of the person who wrote it (nothing for a model's)."""
    return {"person": generation.by} if isinstance(generation, _PersonGeneration) else {}


def _check_arguments(
    jobs: Sequence[DialogueJob],
    protocol: ProtocolSpec,
    teacher: Generator | None,
    batch_size: int,
) -> dict[str, str]:
    """Refuse what cannot run before any generation; returns the protocol's full templates."""
    problems = [f"{p.field}: {p.message}" for p in protocol_problems(protocol)]
    if protocol.has_teacher and teacher is None:
        problems.append("teacher: the didactic protocol needs a teacher")
    if batch_size < 1:
        problems.append(f"batch_size must be at least 1, got {batch_size}")
    if problems:
        raise ValueError("; ".join(problems))
    if protocol.mode == "sharded":
        unsharded = sorted({job.task.task_id for job in jobs if not job.task.shards})
        if unsharded:
            shown = ", ".join(map(str, unsharded[:20])) + (" ..." if len(unsharded) > 20 else "")
            raise ValueError(
                f"the sharded protocol needs tasks with shards; {len(unsharded)} task(s) have "
                f"none: {shown}"
            )
    return resolve_templates(protocol.templates)
