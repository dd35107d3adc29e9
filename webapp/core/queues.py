"""Dialab's Celery queues, one per kind of work, and the worker that serves each (defined once:
the settings route by them, the pages name them, the docs and scripts start workers on them).

A person at the keyboard never waits behind a batch job: everything someone waits for in front
of a page (a playground reply, a person's turn in a run, "Try it", a training preview, a task
generation or import) goes to the interactive queue, whose worker process is its own; evaluation
and training runs go to the batch queue. Only this module's names are used in code.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.apps import apps

INTERACTIVE = "interactive"
# Named "gpu" since the first deployments: its workers live where the models' accelerators are.
BATCH = "gpu"


@dataclass(frozen=True)
class Queue:
    name: str
    worker: str  # what the pages call the worker that serves it
    serves: str
    start_command: str

    @property
    def title(self) -> str:
        return self.worker[0].upper() + self.worker[1:]


QUEUES: tuple[Queue, ...] = (
    Queue(
        name=INTERACTIVE,
        worker="the interactive worker",
        serves="what a person waits for at the page: playground replies, a person's turns in a "
        "run, Try it, training previews, task generation and imports",
        start_command=f".venv/bin/celery -A webapp worker --queues={INTERACTIVE} "
        "--concurrency=1 --prefetch-multiplier=1 --hostname=interactive@%h",
    ),
    Queue(
        name=BATCH,
        worker="the batch worker",
        serves="evaluation and training runs",
        start_command=f".venv/bin/celery -A webapp worker --queues={BATCH} "
        "--concurrency=1 --prefetch-multiplier=1 --hostname=batch@%h",
    ),
)
BY_NAME = {queue.name: queue for queue in QUEUES}


def queue_named(name: str) -> Queue:
    """The queue called ``name``; a queue this version no longer routes to (a run stored by an
    older one) reads as the batch queue, which plays every run that is not interactive."""
    return BY_NAME.get(name, BY_NAME[BATCH])


@dataclass(frozen=True)
class JobWaiting:
    """A job on the interactive queue, other than a run's, that no worker has taken yet, or
    whose worker died (``webapp.core.interactive_jobs``)."""

    name: str  # what it works on: a task set, a task, a base model
    kind: str  # what the pages call it: "Try it", "training preview", an import's source
    since: datetime  # when it was sent; for one whose worker died, that worker's last sign


def interactive_jobs_waiting(limit: int = 50) -> list[JobWaiting]:
    """Every app's jobs on the interactive queue not taken yet (a run's jobs aside): the oldest
    ``limit``, in the order its worker takes them, as jobs reach the broker when they are
    created. Each app that sends such jobs lists its own in a method of its AppConfig of the
    same name, taking ``limit``, so that this layer imports none of them."""
    jobs = [
        job
        for config in apps.get_app_configs()
        for job in getattr(config, "interactive_jobs_waiting", lambda limit: [])(limit)
    ]
    return sorted(jobs, key=lambda job: job.since)[:limit]


def interactive_jobs_stalled(limit: int = 50) -> list[JobWaiting]:
    """Every app's jobs on the interactive queue whose worker died while working on them, the
    longest dead first (``limit`` of them): no broker holds them any more, and the next
    recovery sweep sends them again. Listed by each app's AppConfig method of the same name."""
    jobs = [
        job
        for config in apps.get_app_configs()
        for job in getattr(config, "interactive_jobs_stalled", lambda limit: [])(limit)
    ]
    return sorted(jobs, key=lambda job: job.since)[:limit]


def run_queue(*, people: bool) -> str:
    """Where a run's jobs go: a run with a person in it is interactive (each of its jobs plays
    only up to the next person's turn, so it is short), every other run is batch work."""
    return INTERACTIVE if people else BATCH
