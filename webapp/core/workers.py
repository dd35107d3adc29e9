"""Which Celery workers are online, the queues each serves and the jobs each runs now, from
Celery's own inspection (a broadcast the workers answer).

Asked only when a page needs it, and kept for ``DIALAB_WORKER_INSPECT_CACHE_SECONDS`` in the
cache, so however many pages poll, the workers are asked at most that often: no loop wakes them
for nothing. Inspection waits ``DIALAB_WORKER_INSPECT_SECONDS`` for the answers (it cannot know
how many workers there are), so pages ask for it in a fragment loaded after them.

A worker with the solo pool cannot answer while it plays a job; the queues it served when it
last answered are remembered (a day), so the pages can still say which queues a busy worker
serves (``webapp.runs.waits`` knows it is busy from its run's heartbeat).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from kombu.exceptions import OperationalError

from webapp.celery import app as celery_app
from webapp.core.queues import INTERACTIVE, queue_named

if TYPE_CHECKING:
    from webapp.core.interactive_jobs import InteractiveJob

_CACHE_KEY = "dialab:workers-online"
_QUEUES_KEY = "dialab:worker-queues:{}"
_REMEMBER_QUEUES_SECONDS = 24 * 3600


@dataclass(frozen=True)
class WorkerSeen:
    hostname: str
    queues: tuple[str, ...]
    jobs: tuple[str, ...]  # the Celery task names of the jobs it runs now


def workers_online() -> tuple[WorkerSeen, ...]:
    """The workers that answered inspection (a few seconds old at most), by hostname."""
    seen = cache.get(_CACHE_KEY)
    if seen is None:
        seen = _inspect()
        cache.set(_CACHE_KEY, seen, settings.DIALAB_WORKER_INSPECT_CACHE_SECONDS)
        for worker in seen:
            cache.set(_QUEUES_KEY.format(worker.hostname), worker.queues, _REMEMBER_QUEUES_SECONDS)
    return tuple(seen)


# A preview, a "Try it" or an import usually starts within a second; past this, its page says
# why not (and only then asks the workers, so the fast path never waits for inspection).
INTERACTIVE_NOTICE_AFTER = timedelta(seconds=5)


@dataclass(frozen=True)
class InteractiveWait:
    """Why a job on the interactive queue has not started: ``workers`` serving the queue
    answered, all busy; none answered (a solo-pool worker busy with a long job cannot answer,
    so "none" also reads as "busy or not running"). For a job whose worker died, ``lost_at``
    is that worker's last sign of life, and ``worker_free`` says that a worker serving the queue
    is free to take the job once a sweep sends it again (``workers`` is then empty)."""

    workers: tuple[WorkerSeen, ...]
    lost_at: datetime | None = None
    worker_free: bool = False

    @property
    def start_command(self) -> str:
        return queue_named(INTERACTIVE).start_command

    @property
    def resent_within(self) -> int:
        """How long a lost job waits for a live worker's sweep, at most (0: no worker sweeps
        while it runs)."""
        return int(settings.DIALAB_RECOVERY_SWEEP_SECONDS)


def interactive_wait(sent_at: datetime, *, now: datetime | None = None) -> InteractiveWait | None:
    """What a job sent to the interactive queue at ``sent_at`` waits for; None while it is
    young or when a worker serving the queue is idle (it takes the job within seconds)."""
    if (now or timezone.now()) - sent_at < INTERACTIVE_NOTICE_AFTER:
        return None
    serving = _serving_interactive()
    if any(not worker.jobs for worker in serving):
        return None
    return InteractiveWait(serving)


def job_wait(job: InteractiveJob) -> InteractiveWait | None:
    """What a Try it check or a preview waits for: a worker to take it, or, once the worker
    that took it stopped beating, a sweep that sends it again (the note says so even while a
    worker is free: that worker takes it only once it is sent)."""
    lost_at = job.worker_lost_at()
    if lost_at is None:
        waiting_since = job.waiting_since()
        return None if waiting_since is None else interactive_wait(waiting_since)
    serving = _serving_interactive()
    if any(not worker.jobs for worker in serving):
        return InteractiveWait((), lost_at=lost_at, worker_free=True)
    return InteractiveWait(serving, lost_at=lost_at)


def _serving_interactive() -> tuple[WorkerSeen, ...]:
    return tuple(worker for worker in workers_online() if INTERACTIVE in worker.queues)


def remembered_queues(hostname: str) -> tuple[str, ...]:
    """The queues ``hostname`` served when it last answered (empty if it never did lately)."""
    return tuple(cache.get(_QUEUES_KEY.format(hostname)) or ())


def _inspect() -> list[WorkerSeen]:
    inspect = celery_app.control.inspect(timeout=settings.DIALAB_WORKER_INSPECT_SECONDS)
    # Both broadcasts wait out the same timeout: side by side, the page waits for one.
    with ThreadPoolExecutor(max_workers=2) as pool:
        queues_reply = pool.submit(inspect.active_queues)
        active_reply = pool.submit(inspect.active)
        queues = _reply(queues_reply.result)
        active = _reply(active_reply.result)
    return [
        WorkerSeen(
            hostname=hostname,
            queues=tuple(sorted(queue["name"] for queue in queues[hostname])),
            jobs=tuple(str(job.get("name") or "") for job in active.get(hostname) or ()),
        )
        for hostname in sorted(queues)
    ]


def _reply(ask: Any) -> dict[str, Any]:
    """One inspection's answers by hostname; none when the broker cannot be reached (the pages
    then say no worker answered, which is what the researcher needs to know)."""
    try:
        return ask() or {}
    except (OSError, OperationalError):
        return {}
