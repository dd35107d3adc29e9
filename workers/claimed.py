"""What every kind of run's job shares (evaluation, training): claim the run, keep the claim
fresh with a heartbeat while the job plays it, mark it failed when playing raises, and answer
"was it cancelled?" while it plays.

A job's ``play(run_id)`` only plays: it finishes the run itself when it ends (succeeded,
waiting for a person, cancelled) and raises when it cannot go on. An error is the run's fault
and fails it, with the error's last line; a lost database is not (``DATABASE_LOST`` goes up to
the task, which resumes the run once the database answers: ``workers.recovery``).
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from functools import partial

from django.conf import settings

from webapp.core.database import DATABASE_LOST
from webapp.core.heartbeat import Heartbeat, stale_after
from webapp.runs import services
from webapp.runs.models import Run
from webapp.runs.selectors import run_cancel_requested

logger = logging.getLogger(__name__)


def execute_claimed(
    run_id: int, play: Callable[[int], None], *, worker: str, background_heartbeat: bool
) -> bool:
    """Claim a run (evaluation or training) and ``play`` it while a heartbeat thread keeps the
    claim fresh; False when it could not be claimed.

    ``background_heartbeat`` is off only in eager unit tests, where the job runs inside the
    test's own transaction.
    """
    claimed = services.run_claim(run_id=run_id, worker=worker, stale_after=stale_after())
    if not claimed:
        logger.info("run %s: not claimable (taken, finished or cancelled); skipping", run_id)
        return False
    # From a thread, so that a long model load, one long batched round or one long training
    # step is not taken for a dead worker (and resumed by another while this one still plays).
    with Heartbeat(
        partial(services.run_heartbeat, run_id=run_id),
        interval_seconds=settings.DIALAB_HEARTBEAT_SECONDS,
        name=f"heartbeat-run-{run_id}",
        enabled=background_heartbeat,
    ):
        try:
            play(run_id)
        except DATABASE_LOST:
            raise  # not the run's fault: the task resumes it (workers.recovery)
        except Exception as error:
            logger.exception("run %s failed", run_id)
            summary = "".join(traceback.format_exception_only(error)).strip()
            services.run_finish(run_id=run_id, status=Run.Status.FAILED, error=summary)
    return True


class CancelWatch:
    """Answers a playing job's "should I stop?" from the database, at most once per interval
    (by default a second, or the heartbeat's interval when that is shorter)."""

    def __init__(self, run_id: int, interval_seconds: float | None = None) -> None:
        self.run_id = run_id
        self.interval_seconds = (
            min(1.0, settings.DIALAB_HEARTBEAT_SECONDS)
            if interval_seconds is None
            else interval_seconds
        )
        self.last_check = 0.0
        self.cancelled = False

    def __call__(self) -> bool:
        now = time.monotonic()
        if not self.cancelled and now - self.last_check >= self.interval_seconds:
            self.last_check = now
            self.cancelled = run_cancel_requested(run_id=self.run_id)
        return self.cancelled
