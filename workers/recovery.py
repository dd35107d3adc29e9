"""Resume runs and imports whose worker died, and send runs that never reached the broker.

A worker killed mid-run (SIGKILL, out of memory, a host lost) leaves its run "running" with a
heartbeat that stops. Broker redelivery cannot be relied on to bring it back: the file broker
forgets a message once a worker has taken it, and Redis gives an unacknowledged message back
only after its visibility timeout (an hour). So the database decides: when a worker starts
(Celery's ``worker_ready``) and whenever ``manage.py resume_stale_runs`` runs, every evaluation
run that is running with a heartbeat older than three heartbeats, or queued but never sent, is
sent again. The job that takes it claims it by the stale heartbeat (one conditional update, so
one worker wins) and plays only the (task, sample) pairs without a stored dialogue.

A worker that starts right after a crash usually finds the dead run's heartbeat still fresh, so
it looks again once that heartbeat would have gone stale (one follow-up check, in a timer
thread, so that it happens even while this worker is busy with a job). A message for a run that
is running (a duplicate, or a job given back because its prefork child died:
``task_reject_on_worker_lost``) likewise schedules one sweep for when the run would be stale.

Task imports left "running" by a dead worker are sent again by the same sweeps
(``webapp.tasks.imports.claims``): an import commits all its tasks or none, so it starts over.
So are the Try it checks and training previews whose worker died while a person waited for them
(``webapp.core.interactive_jobs``): each is done again from the start.
After a broker lost its messages, ``resume_stale_runs --all-queued`` also sends again every
interactive job no worker has taken (``resend_interactive_jobs``).
The sweeps also end the dialogues whose turn waited for a person past its deadline
(``webapp.people.services.pending_expire``; an inbox that opens does it too).

Every worker also keeps sweeping while it lives, every ``DIALAB_RECOVERY_SWEEP_SECONDS``
(``watch``): a worker lost while others run has its work sent again by them within that long of
its heartbeat going stale, not only once some worker starts. Each sweep is a few indexed queries,
and several workers sweeping at once send a job twice at worst, which its claim makes harmless.

A worker, and each pool process it starts in place of one that died, also kills the code
sandboxes a killed worker left waiting forever (``models_gpu.sandbox.orphans``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery.signals import worker_process_init, worker_ready
from django.conf import settings
from django.db import DatabaseError, connection

from webapp.celery import app
from webapp.core.heartbeat import stale_after

logger = logging.getLogger(__name__)

# Added to the wait before the follow-up check, for clock skew between hosts and the database.
FOLLOW_UP_MARGIN = timedelta(seconds=2)
# After a job lost the database: how often, and how many times, to try the sweep again.
DATABASE_RETRY_WAIT = timedelta(seconds=10)
DATABASE_RETRIES = 60


def recover_runs(*, all_queued: bool = False) -> Any:
    """One sweep (``webapp.runs.services.runs_recover``) with the configured staleness."""
    from webapp.runs import services

    return services.runs_recover(stale_after=stale_after(), all_queued=all_queued)


def recover_imports() -> list[int]:
    """Send again the imports whose worker is gone; returns their ids."""
    from webapp.tasks.imports.claims import task_imports_recover

    return task_imports_recover()


def resend_interactive_jobs() -> list[str]:
    """Send again every interactive job no worker has taken (imports, Try it checks, training
    previews: the Workers page's "Other jobs waiting"), after the broker lost its messages.
    A duplicate message does nothing: an import is claimed by one conditional update, and a
    check or a preview that has its answer is not done again. Returns what was sent, as
    "kind id"."""
    from webapp.tasks.imports.claims import task_imports_resend
    from webapp.tasks.services import probes_resend
    from webapp.training.services import previews_resend

    return [
        f"{kind} {job_id}"
        for kind, resend in (
            ("import", task_imports_resend),
            ("Try it", probes_resend),
            ("preview", previews_resend),
        )
        for job_id in resend()
    ]


@dataclass
class InteractiveRecovery:
    """What a sweep did with the Try it checks and previews whose worker died, as "kind id"."""

    sent: list[str]
    failed: list[str]
    next_check_in: timedelta | None


def recover_interactive_jobs() -> InteractiveRecovery:
    """Send again the Try it checks and training previews whose worker died (or fail those that
    wore out their attempts). ``next_check_in``: when the oldest one still being worked on
    would be judged dead (None if none is)."""
    from webapp.tasks.services import probes_recover
    from webapp.training.services import previews_recover

    recoveries = {"Try it": probes_recover(), "preview": previews_recover()}
    return InteractiveRecovery(
        sent=[f"{kind} {i}" for kind, found in recoveries.items() for i in found.sent],
        failed=[f"{kind} {i}" for kind, found in recoveries.items() for i in found.failed],
        next_check_in=sooner(*(found.next_check_in for found in recoveries.values())),
    )


def sooner(*waits: timedelta | None) -> timedelta | None:
    """The shortest of these waits; None if there is none."""
    return min((wait for wait in waits if wait is not None), default=None)


def expire_person_turns() -> int:
    """End the dialogues whose person did not answer in time; returns how many."""
    from webapp.people.services import pending_expire

    return pending_expire()


def sweep(*, all_queued: bool = False) -> None:
    """Everything a sweep sends again or ends: imports, Try it checks and previews, people's
    turns past their deadline, runs."""
    recover_imports()
    recover_interactive_jobs()
    expire_person_turns()
    recover_runs(all_queued=all_queued)


def recover_on_start(*, follow_up: bool = True) -> threading.Timer | None:
    """The sweep a starting worker makes; returns the follow-up timer when one was set."""
    recover_imports()
    expire_person_turns()
    jobs = recover_interactive_jobs()
    next_check_in = sooner(recover_runs().next_check_in, jobs.next_check_in)
    if not follow_up or next_check_in is None:
        return None
    wait = next_check_in + FOLLOW_UP_MARGIN
    logger.info("jobs running elsewhere: checking again in %.0f s", wait.total_seconds())
    return _sweep_later(wait)


def resume_after_database_loss(
    job: str, *, release: Callable[[], object] | None = None
) -> threading.Timer:
    """A job lost the database midway (``webapp.core.database``): it recorded nothing and is
    not marked failed. Drop the broken connection and sweep once the job's heartbeat would be
    stale, and again while the database stays away; the sweep sends the job again, and its new
    claim plays only what is missing (a run) or starts over (an import, which committed nothing).
    ``release`` gives back this worker's own claim first, for jobs whose claim is kept while
    their worker lives (imports). Every queued run is sent again too: a database that restarted
    may come with a broker that lost its messages."""
    logger.error("%s: lost the database; it will be resumed once the database answers", job)
    with contextlib.suppress(DatabaseError):
        connection.close()
    wait = stale_after() + FOLLOW_UP_MARGIN
    return _sweep_later(wait, retries=DATABASE_RETRIES, all_queued=True, release=release)


def _sweep_later(
    wait: timedelta,
    *,
    retries: int = 0,
    all_queued: bool = False,
    release: Callable[[], object] | None = None,
) -> threading.Timer:
    """One sweep after ``wait``, in a timer thread (so that it happens even while this worker
    is busy with a job); ``retries`` more, DATABASE_RETRY_WAIT apart, while the database fails."""
    options = {"retries": retries, "all_queued": all_queued, "release": release}
    timer = threading.Timer(wait.total_seconds(), _follow_up, kwargs=options)
    timer.daemon = True
    timer.start()
    return timer


def _follow_up(
    *, retries: int = 0, all_queued: bool = False, release: Callable[[], object] | None = None
) -> None:
    try:
        if release is not None:
            release()
        sweep(all_queued=all_queued)
    except DatabaseError:
        if retries > 0:
            logger.warning("recovery sweep: the database does not answer yet; trying again")
            _sweep_later(
                DATABASE_RETRY_WAIT, retries=retries - 1, all_queued=all_queued, release=release
            )
        else:
            logger.exception("recovery sweep failed: the database does not answer")
    except Exception:
        logger.exception("follow-up recovery sweep failed")
    finally:
        with contextlib.suppress(DatabaseError):
            connection.close()  # the timer thread's own connection


def check_again_later(run_id: int, *, queue: str | None = None) -> None:
    """Schedule one sweep for when this running run's heartbeat would be stale if its worker
    were dead; a live worker keeps it fresh and the sweep then does nothing."""
    from webapp.runs.selectors import run_is_running

    if run_is_running(run_id=run_id):
        sweep_once_stale(queue=queue)


def sweep_once_stale(*, queue: str | None = None) -> None:
    """Schedule one sweep, as a job on ``queue``, for when a heartbeat fresh now would be
    stale."""
    wait = stale_after() + FOLLOW_UP_MARGIN
    resume_stale_runs.apply_async(countdown=wait.total_seconds(), queue=queue)


@app.task(name="workers.recovery.resume_stale_runs")
def resume_stale_runs() -> None:
    """The sweep as a job: what ``check_again_later`` schedules."""
    sweep()


class Watch:
    """A daemon thread that sweeps every ``every`` until stopped (or its process ends)."""

    def __init__(self, every: timedelta) -> None:
        self.every = every
        self._stopped = threading.Event()
        self.thread = threading.Thread(target=self._keep_watching, name="dialab-recovery-watch")
        self.thread.daemon = True
        self.thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self.thread.join()

    def _keep_watching(self) -> None:
        while not self._stopped.wait(self.every.total_seconds()):
            try:
                sweep()
            except DatabaseError:  # the next turn tries again; jobs that lost it say so
                logger.warning("recovery watch: the database does not answer; trying again")
            except Exception:
                logger.exception("recovery watch: the sweep failed")
            finally:
                with contextlib.suppress(DatabaseError):
                    connection.close()  # the thread's own connection, not held between turns


def watch() -> Watch | None:
    """This worker's watch (``DIALAB_RECOVERY_SWEEP_SECONDS``; None when that is 0)."""
    seconds = settings.DIALAB_RECOVERY_SWEEP_SECONDS
    return Watch(timedelta(seconds=seconds)) if seconds else None


@worker_ready.connect
def _on_worker_ready(**_: Any) -> None:
    sweep_orphaned_sandboxes()
    try:
        recover_on_start()
    except Exception:  # a worker still starts when the sweep cannot run (database down)
        logger.exception("recovery sweep at worker start failed")
    watch()


@worker_process_init.connect
def _on_pool_process_start(**_: Any) -> None:
    """A pool process starts, often in place of one killed mid-job: its sandboxes may be left."""
    sweep_orphaned_sandboxes()


def sweep_orphaned_sandboxes() -> None:
    from models_gpu.sandbox.orphans import kill_orphaned_sandboxes as kill

    try:
        killed = kill()
    except OSError:  # no /proc (not Linux): bubblewrap does not run there either
        return
    if killed:
        logger.warning("killed %d sandbox(es) a killed worker left behind: %s", len(killed), killed)
