"""Writes for runs: launch and cancel (web side), claim, progress and finish (worker side)."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from webapp.accounts.models import User
from webapp.core.dispatch import enqueue_on_commit
from webapp.dialogues.models import Dialogue
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Protocol, Run
from webapp.tasks.models import TaskSet

EVALUATION_TASK = "workers.tasks.run_evaluation"


def model_spec_snapshot(spec: ModelSpec | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    return {
        "id": spec.pk,
        "name": spec.name,
        "backend": spec.backend,
        "location": spec.location,
        "generation_params": spec.generation_params,
    }


def protocol_snapshot(protocol: Protocol) -> dict[str, Any]:
    return {
        "id": protocol.pk,
        "name": protocol.name,
        "mode": protocol.mode,
        "max_turns": protocol.max_turns,
        "teacher_sees_reference": protocol.teacher_sees_reference,
        "teacher_sees_verifier_details": protocol.teacher_sees_verifier_details,
        "prompt_templates": protocol.prompt_templates,
        "stop_rules": protocol.stop_rules,
    }


def task_set_fingerprint(task_set: TaskSet) -> str:
    """A hash of every task's content, so a run's config names exactly what it ran on."""
    digest = hashlib.sha256()
    rows = task_set.tasks.order_by("position", "id").values_list(
        "id", "prompt", "reference", "verifier_kind", "verifier_config", "shards"
    )
    for row in rows.iterator(chunk_size=2000):
        digest.update(json.dumps(row, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


@transaction.atomic
def evaluation_run_create(
    *,
    name: str,
    task_set: TaskSet,
    student: ModelSpec,
    teacher: ModelSpec | None,
    protocol: Protocol,
    samples_per_task: int = 1,
    seed: int = 0,
    created_by: User | None,
) -> Run:
    """Create a queued evaluation run with a frozen config and dispatch it after commit."""
    task_count = task_set.tasks.count()
    config = {
        "task_set": {
            "id": task_set.pk,
            "name": task_set.name,
            "version": task_set.version,
            "task_count": task_count,
            "fingerprint": task_set_fingerprint(task_set),
        },
        "student": model_spec_snapshot(student),
        "teacher": model_spec_snapshot(teacher),
        "protocol": protocol_snapshot(protocol),
        "samples_per_task": samples_per_task,
        "seed": seed,
    }
    run = Run.objects.create(
        name=name,
        kind=Run.Kind.EVAL,
        task_set=task_set,
        student=student,
        teacher=teacher,
        protocol=protocol,
        samples_per_task=samples_per_task,
        seed=seed,
        config=config,
        config_hash=config_hash(config),
        progress_total=task_count * samples_per_task,
        created_by=created_by,
    )
    enqueue_on_commit(EVALUATION_TASK, run.pk)
    return run


def run_cancel(*, run: Run) -> None:
    """A queued run is cancelled at once; a running one is asked to stop and does so within
    seconds, keeping the dialogues that finished."""
    now = timezone.now()
    cancelled_queued = Run.objects.filter(pk=run.pk, status=Run.Status.QUEUED).update(
        status=Run.Status.CANCELLED, cancel_requested=True, finished_at=now
    )
    if not cancelled_queued:
        Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(cancel_requested=True)


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
        status=Run.Status.RUNNING, worker=worker, heartbeat_at=Now()
    )
    if claimed:
        Run.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=Now())
    return bool(claimed)


def run_heartbeat(*, run_id: int) -> bool:
    """Record that the worker is alive; returns whether a cancel was requested."""
    Run.objects.filter(pk=run_id).update(heartbeat_at=Now())
    return Run.objects.filter(pk=run_id, cancel_requested=True).exists()


def run_progress_refresh(*, run_id: int) -> None:
    """Progress is the count of stored dialogues: true after a crash and a resume too."""
    done = Dialogue.objects.filter(run_id=run_id).count()
    Run.objects.filter(pk=run_id).update(progress_done=done, heartbeat_at=Now())


def run_finish(
    *, run_id: int, status: str, accounting: dict[str, float] | None = None, error: str = ""
) -> None:
    """Close a run, adding this worker's accounting to what earlier attempts recorded."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        totals = dict(run.accounting)
        for key, value in (accounting or {}).items():
            totals[key] = totals.get(key, 0) + value
        run.accounting = totals
        run.status = status
        run.error = error
        run.finished_at = timezone.now()
        run.progress_done = Dialogue.objects.filter(run_id=run_id).count()
        run.save(update_fields=["accounting", "status", "error", "finished_at", "progress_done"])
