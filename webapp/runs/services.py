"""Writes for runs: launch and cancel (web side), claim, progress, finished dialogues and finish
(worker side)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from models_gpu.spec.protocol import ProtocolSpec, protocol_problems
from models_gpu.spec.reports import Accounting
from models_gpu.spec.results import DialogueRow
from models_gpu.spec.run import (
    DEFAULT_BATCH_SIZE,
    FINGERPRINT_FIELDS,
    RoleSpec,
    RunConfig,
    RunConfigError,
    TaskSetRef,
    frozen_protocol,
    run_config_problems,
    task_fingerprint,
)
from models_gpu.spec.settings import Problem
from webapp.accounts.models import User
from webapp.core import queues
from webapp.core.dispatch import enqueue_on_commit, revoke
from webapp.core.heartbeat import time_until_stale
from webapp.dialogues.models import Dialogue, Turn
from webapp.dialogues.search import document_expression
from webapp.dialogues.summary import turn_summary
from webapp.metrics.partial import BatchInPlay
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Protocol, Run, Tag
from webapp.tasks.models import Task, TaskSet

logger = logging.getLogger(__name__)

# The worker task that plays each kind of run (on the gpu queue: settings.CELERY_TASK_ROUTES).
RUN_TASKS: dict[str, str] = {
    Run.Kind.EVAL: "workers.tasks.run_evaluation",
    Run.Kind.TRAIN: "workers.tasks.run_training",
}
# A run whose worker stopped this many times while playing it is failed rather than resumed
# again: the same run killing its worker over and over (say, out of memory) is not a hiccup.
MAX_RUN_ATTEMPTS = 3


# The settings a Protocol row and a ProtocolSpec share, under the same names.
PROTOCOL_SETTINGS = (
    "mode",
    "max_turns",
    "teacher_sees_reference",
    "teacher_sees_verifier_details",
    "self_correction",
    "regenerate_leaks",
    "judge_turn_kinds",
    "judge_leaks",
)


def protocol_create(*, name: str, spec: ProtocolSpec) -> Protocol:
    """Save a protocol; ``RunConfigError`` when it breaks a rule of ``protocol_problems``."""
    _refuse_invalid_protocol(spec)
    settings = {field: getattr(spec, field) for field in PROTOCOL_SETTINGS}
    return Protocol.objects.create(name=name, prompt_templates=dict(spec.templates), **settings)


def protocol_update(*, protocol: Protocol, name: str, spec: ProtocolSpec) -> Protocol:
    """Change a protocol, refused like ``protocol_create``. Safe for the runs that used it: each
    froze the protocol (settings and every template) into its configuration at launch, and
    only runs launched from now on see the change."""
    _refuse_invalid_protocol(spec)
    for setting in PROTOCOL_SETTINGS:
        setattr(protocol, setting, getattr(spec, setting))
    protocol.name, protocol.prompt_templates = name, dict(spec.templates)
    protocol.save(update_fields=["name", "prompt_templates", *PROTOCOL_SETTINGS])
    return protocol


def protocol_set_retired(*, protocol: Protocol, retired: bool) -> Protocol:
    """Retire a protocol (it leaves the run form and the default list) or bring it back.
    Never a deletion: runs still point at it."""
    protocol.retired = retired
    protocol.save(update_fields=["retired"])
    return protocol


def _refuse_invalid_protocol(spec: ProtocolSpec) -> None:
    problems = protocol_problems(spec)
    if problems:
        raise RunConfigError(problems)


def role_spec(model: ModelSpec | None) -> RoleSpec | None:
    """A registered model as a run freezes it."""
    if model is None:
        return None
    return RoleSpec(
        backend=model.backend,
        location=model.location,
        params=model.generation_params,
        id=model.pk,
        name=model.name,
    )


def protocol_spec(protocol: Protocol) -> ProtocolSpec:
    """A protocol row as the engine runs it (its templates as stored: complete them with
    ``frozen_protocol`` to freeze them)."""
    settings = {field: getattr(protocol, field) for field in PROTOCOL_SETTINGS}
    return ProtocolSpec(
        templates=protocol.prompt_templates, id=protocol.pk, name=protocol.name, **settings
    )


def task_set_ref(task_set: TaskSet) -> TaskSetRef:
    rows = task_set.tasks.order_by("position", "id").values_list(*FINGERPRINT_FIELDS)
    return TaskSetRef(
        id=task_set.pk,
        name=task_set.name,
        version=task_set.version,
        task_count=task_set.tasks.count(),
        fingerprint=task_fingerprint(rows.iterator(chunk_size=2000)),
    )


def evaluation_config(
    *,
    task_set: TaskSet,
    protocol: Protocol,
    student: ModelSpec,
    teacher: ModelSpec | None = None,
    user_simulator: ModelSpec | None = None,
    judge: ModelSpec | None = None,
    samples_per_task: int = 1,
    batch_size: int = DEFAULT_BATCH_SIZE,
    seed: int = 0,
    check: bool = True,
) -> RunConfig:
    """The frozen configuration of an evaluation of these rows; ``RunConfigError`` listing
    every problem (by field) when it could not run (``check=False``: as it is, for tests and
    benchmarks that store runs without playing them)."""
    config = RunConfig(
        task_set=task_set_ref(task_set),
        protocol=frozen_protocol(protocol_spec(protocol)),
        student=role_spec(student),  # type: ignore[arg-type]  # a student is never None
        teacher=role_spec(teacher),
        user_simulator=role_spec(user_simulator),
        judge=role_spec(judge),
        samples_per_task=samples_per_task,
        batch_size=batch_size,
        seed=seed,
    )
    if not check:
        return config
    problems = run_config_problems(config)
    unsharded = task_set.tasks.filter(shards=[]).count() if config.protocol.mode == "sharded" else 0
    if unsharded:
        problems.append(
            Problem(
                "task_set",
                f"{unsharded} task(s) in this set have no shards, and the sharded mode reveals a "
                "task one shard per turn: choose a set whose tasks all have shards.",
            )
        )
    if problems:
        raise RunConfigError(problems)
    return config


@transaction.atomic
def evaluation_run_create(
    *,
    name: str,
    task_set: TaskSet,
    protocol: Protocol,
    student: ModelSpec,
    teacher: ModelSpec | None = None,
    user_simulator: ModelSpec | None = None,
    judge: ModelSpec | None = None,
    samples_per_task: int = 1,
    batch_size: int = DEFAULT_BATCH_SIZE,
    seed: int = 0,
    people: Sequence[User] = (),
    created_by: User | None,
) -> Run:
    """Create a queued evaluation run with a frozen config and dispatch it after commit;
    ``RunConfigError`` (nothing created) when the choices cannot run. ``people`` answer the
    turns of the roles a person plays (none given: the creator)."""
    config = evaluation_config(
        task_set=task_set,
        protocol=protocol,
        student=student,
        teacher=teacher,
        user_simulator=user_simulator,
        judge=judge,
        samples_per_task=samples_per_task,
        batch_size=batch_size,
        seed=seed,
    )
    return evaluation_run_from_config(
        name=name, config=config, created_by=created_by, people=people
    )


@transaction.atomic
def evaluation_run_from_config(
    *, name: str, config: RunConfig, created_by: User | None, people: Sequence[User] = ()
) -> Run:
    """Create a queued evaluation run of a configuration already checked (by
    ``evaluation_config``, or frozen at a training launch) and dispatch it after commit;
    ``people`` as ``evaluation_run_create`` says."""
    assert config.protocol.id is not None, "a run's protocol is a stored one"
    roles = config.roles()
    models = {
        role: ModelSpec.objects.get(pk=spec.id) if spec is not None and spec.id else None
        for role, spec in roles.items()
    }
    run = Run.objects.create(
        name=name,
        kind=Run.Kind.EVAL,
        task_set_id=config.task_set.id,
        protocol_id=config.protocol.id,
        **models,
        config=config.to_json(),
        config_hash=config.config_hash(),
        progress_total=config.dialogue_count,
        created_by=created_by,
        queue=queues.run_queue(people=bool(config.people_roles())),
    )
    if config.people_roles():
        run.people.set(people or ([created_by] if created_by else []))
    run_dispatch_on_commit(run_id=run.pk, kind=run.kind, queue=run.queue)
    return run


def run_dispatch_on_commit(*, run_id: int, kind: str, queue: str) -> None:
    """Send the run's job to its ``queue`` after the transaction commits, and record that it
    reached the broker, and as which job.

    A run still queued with no ``dispatched_at`` was never sent (the web process died between
    the commit and the send, or the broker was down); ``runs_recover`` sends it again.
    """
    enqueue_on_commit(
        RUN_TASKS[kind], run_id, queue=queue, on_sent=partial(_mark_dispatched, run_id)
    )


def _mark_dispatched(run_id: int, job_id: str) -> None:
    Run.objects.filter(pk=run_id).update(
        job_id=job_id, dispatched_at=Coalesce("dispatched_at", Now())
    )


def run_cancel(*, run: Run) -> None:
    """A queued run, or one waiting for people, is cancelled at once (a queued one's job is
    revoked, so no worker spends time on it); a running one is asked to stop and does so within
    seconds, keeping the dialogues that finished."""
    now = timezone.now()
    idle = (Run.Status.QUEUED, Run.Status.WAITING)
    queued_job = (
        Run.objects.filter(pk=run.pk, status=Run.Status.QUEUED)
        .values_list("job_id", flat=True)
        .first()
    )
    cancelled_queued = Run.objects.filter(pk=run.pk, status__in=idle).update(
        status=Run.Status.CANCELLED, cancel_requested=True, finished_at=now
    )
    if not cancelled_queued:
        Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(cancel_requested=True)
    elif queued_job:
        transaction.on_commit(partial(revoke, queued_job))


def run_claim(*, run_id: int, worker: str, stale_after: timedelta) -> bool:
    """Take a run for this worker with one conditional update, so exactly one worker wins.

    A queued run is claimed; so is a running one whose heartbeat stopped (its worker died), which
    the new worker resumes from the dialogues already stored. Times come from the database's
    clock, so workers on hosts whose clocks disagree still judge staleness alike.
    """
    claimable = Q(status=Run.Status.QUEUED) | Q(
        status=Run.Status.RUNNING, heartbeat_at__lt=Now() - stale_after
    )
    claimed = Run.objects.filter(claimable, pk=run_id, cancel_requested=False).update(
        status=Run.Status.RUNNING, worker=worker, heartbeat_at=Now(), attempts=F("attempts") + 1
    )
    if claimed:
        Run.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=Now())
    return bool(claimed)


def run_heartbeat(*, run_id: int) -> None:
    """Record that the worker is alive (the job's heartbeat thread is the one caller)."""
    Run.objects.filter(pk=run_id).update(heartbeat_at=Now())


@transaction.atomic
def dialogues_store(
    *,
    run_id: int,
    dialogues: Sequence[DialogueRow],
    training_step: int | None = None,
    ended_by: str = "",
    end_note: str = "",
) -> int:
    """Insert finished dialogues and their turns in two bulk inserts; return how many were new.

    A dialogue already stored for the same (task, sample) is skipped, so a re-delivered or
    resumed job can hand the same results in again without duplicating them. Each dialogue
    gets the copies the transcript list reads (its task's position, the student's name as the
    run froze it, ``summary.turn_summary``, on PostgreSQL its search document). ``ended_by``
    and ``end_note``: who ended these dialogues by hand and why (``webapp.people``).
    """
    stored = set(
        Dialogue.objects.filter(
            run_id=run_id, task_id__in={d.task_id for d in dialogues}
        ).values_list("task_id", "sample_index")
    )
    fresh = [d for d in dialogues if (d.task_id, d.sample_index) not in stored]
    searchable = connection.vendor == "postgresql"  # see search.py
    positions = dict(
        Task.objects.filter(pk__in={d.task_id for d in fresh}).values_list("pk", "position")
    )
    # As the run froze it (RunConfig.student.name; a training run's rollouts are its base
    # model's), read from the JSON alone.
    student_name, base_name = Run.objects.values_list(
        "config__student__name", "config__base__name"
    ).get(pk=run_id)
    turns = [[asdict(turn) for turn in d.turns] for d in fresh]
    rows = Dialogue.objects.bulk_create(
        Dialogue(
            run_id=run_id,
            task_id=d.task_id,
            sample_index=d.sample_index,
            seed=d.seed,
            outcome=d.outcome,
            first_correct_turn=d.first_correct_turn,
            num_turns=d.num_turns,
            end_reason=d.end_reason,
            ended_by=ended_by,
            end_note=end_note,
            task_position=positions[d.task_id],
            student_name=student_name or base_name or "",
            training_step=training_step,
            parent_id=d.parent_id,
            fork_turns=d.fork_turns,
            **turn_summary(d_turns),
            search_document=(
                document_expression([turn["text"] for turn in d_turns]) if searchable else None
            ),
        )
        for d, d_turns in zip(fresh, turns, strict=True)
    )
    Turn.objects.bulk_create(
        Turn(dialogue_id=row.pk, **turn)
        for row, d_turns in zip(rows, turns, strict=True)
        for turn in d_turns
    )
    return len(rows)


@transaction.atomic
def run_round_store(*, run_id: int, dialogues: Sequence[DialogueRow], batch: BatchInPlay) -> None:
    """Store the dialogues that ended in a round with how far the rest of their batch got.

    One transaction, so the run page never counts a dialogue both as stored and as going (or
    as neither). Progress is the count of stored dialogues: true after a crash and a resume too.
    """
    dialogues_store(run_id=run_id, dialogues=dialogues)
    done = Dialogue.objects.filter(run_id=run_id).count()
    Run.objects.filter(pk=run_id).update(progress_done=done, batch_in_play=batch.to_json())


def run_finish(
    *, run_id: int, status: str, accounting: Accounting | None = None, error: str = ""
) -> None:
    """Close a run, adding this worker's accounting to what earlier attempts recorded."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        spent = Accounting.from_json(run.accounting).plus(accounting or Accounting())
        run.accounting = spent.to_json()
        run.status = status
        run.error = error
        run.finished_at = timezone.now()
        updated = ["accounting", "status", "error", "finished_at"]
        if run.kind == Run.Kind.EVAL:  # a training run's progress is its optimizer steps
            run.progress_done = Dialogue.objects.filter(run_id=run_id).count()
            updated.append("progress_done")
        run.save(update_fields=updated)


def run_wait(*, run_id: int, accounting: Accounting) -> None:
    """The worker is done with the run for now: what is left waits for people. It holds no
    worker and no batch; ``run_wake`` queues it again when someone answers."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        spent = Accounting.from_json(run.accounting).plus(accounting)
        Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).update(
            status=Run.Status.WAITING,
            accounting=spent.to_json(),
            batch_in_play={},
            progress_done=Dialogue.objects.filter(run_id=run_id).count(),
        )


def run_wake(*, run_id: int) -> bool:
    """Queue a run that waits for people again (someone answered) and send its job after
    commit; False when it was not waiting (its worker is still playing it, or it ended)."""
    waiting = Run.objects.filter(pk=run_id, status=Run.Status.WAITING)
    queue = waiting.values_list("queue", flat=True).first()
    woken = waiting.update(status=Run.Status.QUEUED, dispatched_at=None)
    if woken and queue is not None:
        run_dispatch_on_commit(run_id=run_id, kind=Run.Kind.EVAL, queue=queue)
    return bool(woken)


@dataclass
class Recovery:
    """What ``runs_recover`` did, and when a run that still looks alive would turn stale."""

    dispatched: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)
    next_check_in: timedelta | None = None


def runs_recover(
    *,
    stale_after: timedelta,
    all_queued: bool = False,
    max_attempts: int = MAX_RUN_ATTEMPTS,
) -> Recovery:
    """Send again the evaluation and training runs that no worker will otherwise play.

    - queued runs that never reached the broker (``dispatched_at`` empty), or with
      ``all_queued`` every queued run (after a broker lost its messages: Redis keeps none on
      disk here); a duplicate message is harmless, since only one claim can win;
    - running runs whose heartbeat is older than ``stale_after``: their worker died. The new job
      claims them by the stale heartbeat (``run_claim``) and plays only the (task, sample) pairs
      not stored yet. A run that already wore out ``max_attempts`` workers is failed instead,
      and one whose cancel was asked for is closed as cancelled, keeping its dialogues.
    """
    recovery = Recovery()
    played = Run.objects.filter(kind__in=RUN_TASKS)
    queued = played.filter(status=Run.Status.QUEUED, cancel_requested=False)
    if not all_queued:
        queued = queued.filter(dispatched_at__isnull=True)
    recovery.dispatched.extend(queued.values_list("pk", flat=True))

    running = played.filter(status=Run.Status.RUNNING)
    stale = running.filter(Q(heartbeat_at__lt=Now() - stale_after) | Q(heartbeat_at__isnull=True))
    for run_id, attempts, cancel_requested in stale.values_list(
        "pk", "attempts", "cancel_requested"
    ):
        if cancel_requested:
            if _close_if_still_stale(stale, run_id, status=Run.Status.CANCELLED):
                recovery.cancelled.append(run_id)
        elif attempts >= max_attempts:
            message = (
                f"The worker playing this run stopped {attempts} times without finishing it "
                "(killed, or out of memory?); it was not resumed again."
            )
            if _close_if_still_stale(stale, run_id, status=Run.Status.FAILED, error=message):
                recovery.failed.append(run_id)
        else:
            recovery.dispatched.append(run_id)
    routes = {
        run_id: (kind, queue)
        for run_id, kind, queue in played.filter(pk__in=recovery.dispatched).values_list(
            "pk", "kind", "queue"
        )
    }
    for run_id in recovery.dispatched:
        kind, queue = routes[run_id]
        run_dispatch_on_commit(run_id=run_id, kind=kind, queue=queue)  # sends at once
    recovery.next_check_in = time_until_stale(running, stale_after)
    if recovery.dispatched or recovery.failed or recovery.cancelled:
        logger.info(
            "recovered runs: dispatched %s, failed %s, cancelled %s",
            recovery.dispatched,
            recovery.failed,
            recovery.cancelled,
        )
    return recovery


def _close_if_still_stale(stale: Any, run_id: int, *, status: str, error: str = "") -> bool:
    """Close a stale run, unless a worker claimed it since it was found stale (checked under a
    row lock, so a sweep never closes a run that another worker has just resumed)."""
    with transaction.atomic():
        if not stale.select_for_update().filter(pk=run_id).exists():
            return False
        run_finish(run_id=run_id, status=status, error=error)
    return True


def run_relabel(*, run: Run, name: str, tags: Sequence[str]) -> None:
    """Rename a run and set its tags (created as needed; a tag no run carries any more is
    deleted, so the filter offers only tags in use)."""
    with transaction.atomic():
        run.name = name
        run.save(update_fields=["name"])
        run.tags.set([Tag.objects.get_or_create(name=tag)[0] for tag in tags])
        Tag.objects.filter(runs=None).delete()


def runs_tag(*, run_ids: Sequence[int], tag: str) -> int:
    """Add ``tag`` to these runs; how many runs there were."""
    with transaction.atomic():
        tagged, _ = Tag.objects.get_or_create(name=tag)
        runs = list(Run.objects.filter(pk__in=run_ids))
        tagged.runs.add(*runs)
    return len(runs)
