"""Celery tasks: thin adapters from a run id to models_gpu and back through webapp services."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

from celery import Task

from webapp.celery import app

if TYPE_CHECKING:
    from webapp.core.interactive_jobs import InteractiveJob


@app.task(name="workers.tasks.run_evaluation", bind=True)
def run_evaluation(self: Task, run_id: int) -> None:
    # Imported here so that loading this module (which the worker does at start) stays cheap.
    from workers.evaluation import execute_evaluation

    _execute_run(self, run_id, execute_evaluation)


@app.task(name="workers.tasks.run_training", bind=True)
def run_training(self: Task, run_id: int) -> None:
    from workers.training import execute_training

    _execute_run(self, run_id, execute_training)


def _execute_run(task: Task, run_id: int, execute: Callable[..., bool]) -> None:
    """Claim and play a run with ``execute`` (``execute_evaluation`` or ``execute_training``)."""
    from webapp.core.database import DATABASE_LOST
    from workers.recovery import check_again_later, resume_after_database_loss

    try:
        played = execute(
            run_id,
            worker=task.request.hostname or socket.gethostname(),
            background_heartbeat=not task.request.is_eager,
        )
    except DATABASE_LOST:
        resume_after_database_loss(f"run {run_id}")
        return
    if not played and not task.request.is_eager:
        # A message for a run that is running: a duplicate, or the job of a worker process that
        # died a moment ago (a prefork child killed by the OOM killer comes back here through
        # task_reject_on_worker_lost). Look again once a dead worker's heartbeat would be stale.
        # On the queue this job came from: a worker that plays these runs is listening there.
        check_again_later(run_id, queue=(task.request.delivery_info or {}).get("routing_key"))


@app.task(name="workers.tasks.training_preview", bind=True)
def training_preview(self: Task, preview_id: int) -> None:
    """Tokenize a sample of a training selection for the launch form's preview."""
    from webapp.training.models import TrainingPreview
    from workers.training import build_preview

    if not build_preview(preview_id, heartbeat=not self.request.is_eager):
        _claim_refused(self, TrainingPreview, preview_id)


@app.task(name="workers.tasks.verify_probe", bind=True)
def verify_probe(self: Task, probe_id: int) -> None:
    """Run a task's verifier on an author's trial answer and record the verdict."""
    from models_gpu.sandbox import SandboxUnavailable
    from models_gpu.verifiers import verify
    from webapp.core.interactive_jobs import JobHeartbeat
    from webapp.tasks.models import VerifierProbe
    from webapp.tasks.selectors import probe_to_verify
    from webapp.tasks.services import probe_claim, probe_record
    from workers.specs import task_spec, verdict_row

    if not probe_claim(probe_id=probe_id):
        _claim_refused(self, VerifierProbe, probe_id)
        return
    task, response = probe_to_verify(probe_id=probe_id)
    with JobHeartbeat(VerifierProbe, probe_id, enabled=not self.request.is_eager):
        try:
            verdict = verify(task_spec(task), response)
        except (ValueError, SandboxUnavailable) as error:
            # A task the verifier cannot use, or a worker that cannot run code safely: say why.
            probe_record(probe_id=probe_id, verdict=None, error=str(error))
            return
    probe_record(probe_id=probe_id, verdict=verdict_row(verdict))


def _claim_refused(task: Task, model: type[InteractiveJob], job_id: int) -> None:
    """A Try it or a preview not taken: a duplicate message of one that has its answer, or one
    that wore out its workers, whose message Celery handed back when the last one's pool process
    died. That one's worker lives on and starts no sweep, so schedule one for when the dead
    process's heartbeat is stale: it fails the job, saying why."""
    from webapp.core.interactive_jobs import job_unanswered
    from workers.recovery import sweep_once_stale

    if job_unanswered(model, job_id):
        sweep_once_stale(queue=(task.request.delivery_info or {}).get("routing_key"))
