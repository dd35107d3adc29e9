"""Celery tasks: thin adapters from a run id to models_gpu and back through webapp services."""

from __future__ import annotations

import socket

from celery import Task

from workers.celery import app


@app.task(name="workers.tasks.run_evaluation", bind=True)
def run_evaluation(self: Task, run_id: int) -> None:
    # Imported here so that loading this module (which the worker does at start) stays cheap.
    from workers.evaluation import execute_evaluation

    execute_evaluation(run_id, worker=self.request.hostname or socket.gethostname())


@app.task(name="workers.tasks.verify_probe")
def verify_probe(probe_id: int) -> None:
    """Run a task's verifier on an author's trial answer and record the verdict."""
    from models_gpu.verifiers import verify
    from webapp.tasks.models import VerifierProbe
    from webapp.tasks.selectors import task_payload
    from webapp.tasks.services import probe_record
    from workers.specs import task_spec, verdict_row

    probe = VerifierProbe.objects.get(pk=probe_id)
    try:
        verdict = verify(task_spec(task_payload(task_id=probe.task_id)), probe.response)
    except ValueError as error:  # a task the verifier cannot use: tell the author why
        probe_record(probe_id=probe_id, verdict=None, error=str(error))
        return
    probe_record(probe_id=probe_id, verdict=verdict_row(verdict))
