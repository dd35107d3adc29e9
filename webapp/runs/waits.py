"""What each worker is doing, what each queue holds, and what a queued run waits for: the
Workers page, and the note on a queued run's page, the playground and the inbox ("waiting for
the batch worker: run #22, about 4 min left"; "no worker serves this queue", with the
command that starts one).

Two sources, each for what it knows best: Celery's inspection (``webapp.core.workers``) says
which workers are online, the queues they serve and the jobs they run; the runs' own rows say
which run each worker plays and how far it got, and which runs wait, in order. A heartbeat
younger than ``stale_after`` means a worker is alive even when it cannot answer inspection (a
solo-pool worker busy with a job), so a busy worker never reads as gone.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F, QuerySet
from django.db.models.functions import Now

from webapp.core.heartbeat import stale_after
from webapp.core.queues import QUEUES, Queue, queue_named
from webapp.core.workers import remembered_queues, workers_online
from webapp.runs.models import Run
from webapp.runs.services import RUN_TASKS


@dataclass(frozen=True)
class WorkerState:
    hostname: str
    queues: tuple[str, ...]
    answered: bool  # False: it did not answer inspection, but its run's heartbeat is fresh
    runs: tuple[Run, ...]  # the runs it plays now
    jobs: tuple[str, ...]  # its other jobs now, by task name (imports, previews, Try it, …)

    @property
    def busy(self) -> bool:
        return bool(self.runs or self.jobs)


@dataclass(frozen=True)
class QueueState:
    queue: Queue
    workers: tuple[WorkerState, ...]
    waiting: tuple[Run, ...]  # its queued runs, in the order its workers will take them

    @property
    def served(self) -> bool:
        return bool(self.workers)

    @property
    def has_idle_worker(self) -> bool:
        return any(not worker.busy for worker in self.workers)

    @property
    def playing(self) -> tuple[Run, ...]:
        return tuple(run for worker in self.workers for run in worker.runs)


@dataclass(frozen=True)
class RunWait:
    """Why a queued run has not started: its queue's state and the runs taken before it."""

    run: Run
    state: QueueState
    ahead: tuple[Run, ...]

    @property
    def queue(self) -> Queue:
        return self.state.queue


def worker_states() -> tuple[WorkerState, ...]:
    """Every worker online, by hostname (one inspection a few seconds old at most, one query)."""
    playing: dict[str, list[Run]] = {}
    for run in _live_runs().select_related("student").order_by("started_at"):
        playing.setdefault(run.worker, []).append(run)
    answered = {worker.hostname: worker for worker in workers_online()}
    states = []
    for hostname in sorted(answered.keys() | playing.keys()):
        runs = tuple(playing.get(hostname, ()))
        seen = answered.get(hostname)
        queues = seen.queues if seen else remembered_queues(hostname)
        states.append(
            WorkerState(
                hostname=hostname,
                queues=queues or tuple(sorted({queue_named(run.queue).name for run in runs})),
                answered=seen is not None,
                runs=runs,
                jobs=tuple(job for job in seen.jobs if job not in _RUN_JOBS) if seen else (),
            )
        )
    return tuple(states)


_RUN_JOBS = frozenset(RUN_TASKS.values())  # a run's job shows as its run, with its progress


def queue_states(workers: tuple[WorkerState, ...] | None = None) -> tuple[QueueState, ...]:
    """Every queue: the workers serving it (``workers``, else asked now) and its waiting runs
    (one more query)."""
    workers = worker_states() if workers is None else workers
    waiting = list(_waiting_runs().select_related("student"))
    return tuple(
        QueueState(
            queue=queue,
            workers=tuple(worker for worker in workers if queue.name in worker.queues),
            waiting=tuple(run for run in waiting if queue_named(run.queue) == queue),
        )
        for queue in QUEUES
    )


def run_wait(run: Run) -> RunWait | None:
    """What ``run`` waits for, while it is queued (None once a worker took it or it ended)."""
    if run.status != Run.Status.QUEUED or run.cancel_requested:
        return None
    queue = queue_named(run.queue)
    state = next(state for state in queue_states() if state.queue == queue)
    ids = [other.pk for other in state.waiting]
    ahead = state.waiting[: ids.index(run.pk)] if run.pk in ids else state.waiting
    return RunWait(run=run, state=state, ahead=ahead)


def _live_runs() -> QuerySet[Run]:
    """Runs a worker plays now: running, with a heartbeat fresher than a dead worker's."""
    return Run.objects.filter(status=Run.Status.RUNNING, heartbeat_at__gte=Now() - stale_after())


def _waiting_runs() -> QuerySet[Run]:
    """Queued runs in the order their jobs reached the broker (never sent ones last)."""
    return Run.objects.filter(status=Run.Status.QUEUED, cancel_requested=False).order_by(
        F("dispatched_at").asc(nulls_last=True), "pk"
    )
