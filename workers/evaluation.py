"""Run an evaluation: claim the run, read its frozen configuration (nothing else of the run's
rows), check that its tasks are still the ones it was launched on, drive the engine, store what
finishes.

The database is the truth: dialogues are stored as they finish, progress is their count, and a
restarted or re-delivered job runs only the (task, sample) pairs not stored yet. A run of forks
plays each parent's kept turns on (``RunConfig.forks``). A dialogue whose next speaker is a
person is parked as a pending turn (``webapp.people``); the job ends once the rest is played,
leaving the run waiting, and a person's answer queues the run again, whose next job plays the
answered dialogues on from their turns. With them, after
every round, goes how far the engine's batch in play got (``RoundRecorder``), so that live
accuracy counts the dialogues still going, not only the ones that ended (solved ones first). The
heartbeat thread is the one writer of the run's heartbeat; the engine's "should I stop?" only
reads.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace

from django.db import transaction

from models_gpu.backends import load_generator
from models_gpu.engine import EngineStats, run_dialogues
from models_gpu.results import dialogue_row, parked_row, turn_record
from models_gpu.spec.reports import Accounting
from models_gpu.spec.results import DialogueRow, TurnRow
from models_gpu.spec.run import FINGERPRINT_FIELDS, RoleSpec, RunConfig, task_fingerprint
from models_gpu.types import (
    DialogueJob,
    DialogueResult,
    Generator,
    ParkedDialogue,
    PersonReply,
    TaskSpec,
)
from webapp.dialogues.selectors import fork_parents
from webapp.metrics.partial import BatchInPlay
from webapp.people import selectors as people_selectors
from webapp.people import services as people_services
from webapp.runs import services
from webapp.runs.models import Run
from webapp.runs.selectors import run_stored_dialogue_keys, run_to_play
from webapp.tasks.selectors import task_payloads
from workers.claimed import CancelWatch, execute_claimed
from workers.specs import dialogue_seed, role_key, task_spec

logger = logging.getLogger(__name__)


class TaskSetChanged(Exception):
    """The run's tasks are not the ones its configuration was frozen with."""


def run_tasks(config: RunConfig) -> list[TaskSpec]:
    """The tasks of the run's task set, in order; ``TaskSetChanged`` when the set's content
    differs from what the run was launched on."""
    payloads = task_payloads(task_set_id=config.task_set.id)
    fingerprint = task_fingerprint(
        [payload[name] for name in FINGERPRINT_FIELDS] for payload in payloads
    )
    if fingerprint != config.task_set.fingerprint:
        raise TaskSetChanged(
            f"the tasks of {config.task_set.name!r} v{config.task_set.version} changed since "
            "this run was launched (their fingerprint differs), so its results would not be "
            "what its configuration says: launch a new run on the set as it is now"
        )
    return [task_spec(payload) for payload in payloads]


def dialogue_jobs(
    config: RunConfig, tasks: list[TaskSpec], skip: set[tuple[int, int]] | None = None
) -> list[DialogueJob]:
    """Every (task, sample) of the run but those in ``skip``, each with its seed."""
    if config.task_ids is not None:
        chosen = set(config.task_ids)
        tasks = [task for task in tasks if task.task_id in chosen]
    return [
        DialogueJob(
            task=task,
            sample_index=sample_index,
            seed=dialogue_seed(config.seed, task.task_id, sample_index),
        )
        for task in tasks
        for sample_index in range(config.samples_per_task)
        if (task.task_id, sample_index) not in (skip or set())
    ]


def fork_jobs(config: RunConfig, tasks: list[TaskSpec]) -> list[DialogueJob]:
    """A run of forks: fork i plays on from its parent's first turns, with the parent's seed,
    as sample i (so two forks of one task stay two dialogues)."""
    assert config.forks is not None
    parents = fork_parents(ids=[parent for parent, _ in config.forks.parents])
    by_id = {task.task_id: task for task in tasks}
    return [
        DialogueJob(
            task=by_id[parents[parent]["task_id"]],
            sample_index=i,
            seed=parents[parent]["seed"],
            prefix=tuple(turn_record(TurnRow(**turn)) for turn in parents[parent]["turns"][:keep]),
        )
        for i, (parent, keep) in enumerate(config.forks.parents)
    ]


def answered_jobs(run_id: int, tasks: list[TaskSpec]) -> list[DialogueJob]:
    """The parked dialogues a person answered, to play on from their turns with the answer."""
    by_id = {task.task_id: task for task in tasks}
    return [
        DialogueJob(
            task=by_id[pending.task_id],
            sample_index=pending.sample_index,
            seed=pending.seed,
            prefix=tuple(turn_record(TurnRow(**turn)) for turn in pending.turns),
            person_reply=PersonReply(
                pending.answer, pending.answered_by.username if pending.answered_by else ""
            ),
        )
        for pending in people_selectors.answered_turns(run_id=run_id)
    ]


def pending_jobs(
    run_id: int, config: RunConfig, tasks: list[TaskSpec] | None = None
) -> list[DialogueJob]:
    """What is left of the run: the dialogues a person answered (first: someone waits for
    them), then every dialogue neither stored nor waiting for a person. ``tasks`` are the run's
    (``run_tasks``, whose ``TaskSetChanged`` this raises when it reads them itself)."""
    tasks = run_tasks(config) if tasks is None else tasks
    skip = run_stored_dialogue_keys(run_id=run_id) | people_selectors.waiting_keys(run_id=run_id)
    if config.forks is not None:
        fresh = [
            j for j in fork_jobs(config, tasks) if (j.task.task_id, j.sample_index) not in skip
        ]
    else:
        fresh = dialogue_jobs(config, tasks, skip)
    return answered_jobs(run_id, tasks) + fresh


class AnswersGivenMeanwhile:
    """The engine's ``take_up`` for a run with people: the dialogues a person answered since
    this job started, each once (those answered before are among the job's own), so an answer
    waits for the chunk in play, not for the whole job."""

    def __init__(self, run_id: int, tasks: list[TaskSpec], jobs: list[DialogueJob]) -> None:
        self.run_id = run_id
        self.tasks = tasks
        self.taken = {_key(job) for job in jobs if job.person_reply is not None}

    def __call__(self) -> list[DialogueJob]:
        fresh = [
            job for job in answered_jobs(self.run_id, self.tasks) if _key(job) not in self.taken
        ]
        self.taken.update(_key(job) for job in fresh)
        return fresh


def _key(job: DialogueJob) -> tuple[int, int]:
    return job.task.task_id, job.sample_index


class RoundRecorder:
    """Stores each round of the engine's batch: the dialogues that ended in it, and how far the
    others got (``BatchInPlay``), in one transaction (``services.run_round_store``).

    The engine hands the ended dialogues to ``ended``, then reports the round to
    ``round_played``: they are held until then. A resumed run's recorder starts from what the
    last worker recorded (``previous``): if that batch was cut short, its first batch replays
    the batch's unfinished dialogues from round 1 and carries the ones that had ended, so they
    are counted with their batch-mates once it ends (``BatchInPlay.resumed``).
    """

    def __init__(self, run_id: int, config: RunConfig, previous: BatchInPlay) -> None:
        self.run_id = run_id
        self.forks = dict(enumerate(config.forks.parents)) if config.forks else {}
        self.carried = previous.resumed()
        self.batch = self.carried
        self.batches_started = 0
        self.ended_in_round: list[DialogueResult] = []

    def ended(self, results: list[DialogueResult]) -> None:
        self.ended_in_round.extend(results)

    def round_played(self, round_number: int, going: int) -> None:
        ended, self.ended_in_round = self.ended_in_round, []
        if round_number == 1:  # a new batch starts
            self.batch = self.carried if self.batches_started == 0 else BatchInPlay()
            self.batches_started += 1
        self.batch = self.batch.after_round(round_number, going, len(ended))
        with transaction.atomic():
            services.run_round_store(
                run_id=self.run_id, dialogues=[self.row(r) for r in ended], batch=self.batch
            )
            keys = [(result.task_id, result.sample_index) for result in ended]
            people_services.pending_settle(run_id=self.run_id, keys=keys)

    def parked(self, parked: list[ParkedDialogue]) -> None:
        """Dialogues left waiting for a person: stored at once, so the person sees them now."""
        people_services.pending_park(run_id=self.run_id, parked=[parked_row(p) for p in parked])

    def row(self, result: DialogueResult) -> DialogueRow:
        row = dialogue_row(result)
        if result.sample_index in self.forks:
            parent, keep = self.forks[result.sample_index]
            row = replace(row, parent_id=parent, fork_turns=keep)
        return row


def accounting(stats: EngineStats) -> Accounting:
    return Accounting(
        dialogues=stats.dialogues_finished,
        student_generations=stats.student_generations,
        teacher_calls=stats.teacher_calls,
        user_simulator_calls=stats.user_simulator_calls,
        judge_calls=stats.judge_calls,
        person_turns=stats.person_turns,
        prompt_tokens=stats.prompt_tokens,
        completion_tokens=stats.completion_tokens,
        wall_seconds=round(stats.wall_seconds, 3),
    )


def load_role_generators(specs: Mapping[str, RoleSpec | None]) -> dict[str, Generator | None]:
    """One generator per distinct model: when the student and the teacher are the same
    checkpoint with the same settings, its weights are loaded (and held in memory) once."""
    loaded: dict[str, tuple[str, Generator]] = {}
    generators: dict[str, Generator | None] = {}
    for role, spec in specs.items():
        if spec is None:
            generators[role] = None
            continue
        key = role_key(spec)
        if key in loaded:
            first_role, generator = loaded[key]
            logger.info("the %s shares the %s's model (loaded once)", role, first_role)
        else:
            generator = load_generator(spec)
            loaded[key] = (role, generator)
        generators[role] = generator
    return generators


def execute_evaluation(run_id: int, *, worker: str, background_heartbeat: bool = True) -> bool:
    """Claim the run and play what is left of it; False when it could not be claimed
    (``workers.claimed``)."""
    return execute_claimed(run_id, _play, worker=worker, background_heartbeat=background_heartbeat)


def _play(run_id: int) -> None:
    run = run_to_play(run_id=run_id)
    tasks = run_tasks(run.config)
    jobs = pending_jobs(run_id, run.config, tasks)
    if not jobs:  # a worker died between storing the last dialogue and closing the run, or
        # woke for an answer another job has played
        people_services.run_rest(run_id=run_id, accounting=Accounting())
        return
    if run.attempts > 1:
        logger.info(
            "run %s: resumed (attempt %s), %s dialogues to play", run_id, run.attempts, len(jobs)
        )
    generators = load_role_generators(run.config.roles())
    assert generators["student"] is not None, "every run has a student"

    recorder = RoundRecorder(run_id, run.config, run.batch_in_play)
    watch = CancelWatch(run_id)
    stats = run_dialogues(
        jobs,
        run.config.protocol,
        student=generators["student"],
        teacher=generators["teacher"],
        user_simulator=generators["user_simulator"],
        judge=generators["judge"],
        on_finished=recorder.ended,
        on_round=recorder.round_played,
        on_parked=recorder.parked,
        should_stop=watch,
        batch_size=run.config.batch_size,
        take_up=AnswersGivenMeanwhile(run_id, tasks, jobs) if run.config.people_roles() else list,
    )
    if watch.cancelled:
        services.run_finish(
            run_id=run_id, status=Run.Status.CANCELLED, accounting=accounting(stats)
        )
    else:
        people_services.run_rest(run_id=run_id, accounting=accounting(stats))
