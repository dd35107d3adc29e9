"""Short jobs a person waits for on a page (a Try it check, a training preview), and taking them
up again when their worker died.

Such a job is one row: a worker takes it (``job_claim``), keeps its heartbeat fresh while it
works (``JobHeartbeat``), and writes its answer or its error. A worker killed mid-job (SIGKILL,
the OOM killer, a lost host) leaves the row taken and unanswered, and its page waiting. Broker
redelivery cannot be relied on to bring it back (the file broker forgets a taken message; Redis
gives it back after an hour), so the same sweeps that resume runs (``workers.recovery``) send
again every such job whose heartbeat is older than three heartbeats. A job that wore out
``MAX_JOB_ATTEMPTS`` workers gets an error instead, since one that kills every worker (a
tokenizer too big for its memory, say) would loop forever.

The claim stays open to a job already taken: Celery also redelivers the job of a prefork child
that died (``task_reject_on_worker_lost``) while its heartbeat is still fresh. Doing a job twice
is harmless: both workers write the same answer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import ClassVar, Self

from django.conf import settings
from django.db import models
from django.db.models import F, QuerySet
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from webapp.core.dispatch import enqueue_on_commit
from webapp.core.heartbeat import Heartbeat, stale_after, time_until_stale

logger = logging.getLogger(__name__)

MAX_JOB_ATTEMPTS = 3
# How the error of a job failed for killing its workers ends: it says nothing of the job's
# input, so a page that reads errors as findings about the input (a preview's, about a model)
# leaves these out.
WORKERS_GAVE_OUT = "before answering (killed, or out of memory?); it was not tried again."


class InteractiveJob(models.Model):
    """The fields and states every such job shares. A subclass names the field its answer is
    written to (``ANSWER_FIELD``, None until a worker wrote it)."""

    ANSWER_FIELD: ClassVar[str]

    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True, help_text="When a worker took it.")
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Its worker's last sign of life while it worked."
    )
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="How many times a worker took it."
    )

    class Meta:
        abstract = True

    @classmethod
    def unanswered(cls) -> QuerySet[Self]:
        return cls._default_manager.filter(**{f"{cls.ANSWER_FIELD}__isnull": True}, error="")

    @classmethod
    def taken(cls) -> QuerySet[Self]:
        """Taken by a worker and unanswered: being worked on, or left by a worker that died."""
        return cls.unanswered().filter(started_at__isnull=False)

    @classmethod
    def stalled(cls) -> QuerySet[Self]:
        """Taken and unanswered, its worker's last sign of life (``last_seen_at``, as
        ``last_sign`` for ordering) older than three heartbeats: the worker died."""
        last_sign = Coalesce("heartbeat_at", "started_at")
        stalled: QuerySet[Self] = (
            cls.taken().alias(last_sign=last_sign).filter(last_sign__lt=Now() - stale_after())
        )
        return stalled

    @property
    def last_seen_at(self) -> datetime:
        """Its worker's last sign of life (a row taken before heartbeats were recorded has
        only its start); for a job no worker took yet, when it was sent."""
        return self.heartbeat_at or self.started_at or self.created_at

    @property
    def is_done(self) -> bool:
        return getattr(self, self.ANSWER_FIELD) is not None or bool(self.error)

    def waiting_since(self) -> datetime | None:
        """Since when the job has waited for a worker: since it was sent while none has taken
        it, or since its worker's last heartbeat once that is stale (``worker_lost_at``). None
        while a live worker has it, and once it is done."""
        if not self.is_done and self.started_at is None:
            return self.created_at
        return self.worker_lost_at()

    def worker_lost_at(self) -> datetime | None:
        """The last sign of life of the worker that took the job, once that is older than
        three heartbeats (the worker died: a sweep sends the job again); else None."""
        if self.is_done or self.started_at is None:
            return None
        stale = timezone.now() - self.last_seen_at > stale_after()
        return self.last_seen_at if stale else None


def job_claim(model: type[InteractiveJob], job_id: int) -> bool:
    """Take the job; False once it has its answer, so that a message sent again does nothing,
    and once MAX_JOB_ATTEMPTS workers took it, so that a job whose worker process dies each time
    is not handed back by Celery for ever (the next sweep fails it, saying why)."""
    claim = {"started_at": Now(), "heartbeat_at": Now(), "attempts": F("attempts") + 1}
    unanswered = model.unanswered().filter(pk=job_id, attempts__lt=MAX_JOB_ATTEMPTS)
    return bool(unanswered.update(**claim))


def job_unanswered(model: type[InteractiveJob], job_id: int) -> bool:
    return model.unanswered().filter(pk=job_id).exists()


class JobHeartbeat(Heartbeat):
    """Keeps a taken job's ``heartbeat_at`` fresh while its worker works on it (a job run
    eagerly, in the web process's tests, passes ``enabled=False``)."""

    def __init__(self, model: type[InteractiveJob], job_id: int, *, enabled: bool = True):
        super().__init__(
            lambda: model.unanswered().filter(pk=job_id).update(heartbeat_at=Now()),
            interval_seconds=settings.DIALAB_HEARTBEAT_SECONDS,
            name=f"heartbeat-{model._meta.model_name}-{job_id}",
            enabled=enabled,
        )


@dataclass
class JobRecovery:
    sent: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    next_check_in: timedelta | None = None


def jobs_recover(model: type[InteractiveJob], *, task_name: str, doing: str) -> JobRecovery:
    """Send again the jobs of this kind whose worker died (taken, unanswered, heartbeat stale);
    fail those that wore out MAX_JOB_ATTEMPTS workers, saying so (``doing``: what the worker
    was doing, e.g. "checking this answer"). ``next_check_in``: when the oldest heartbeat still
    fresh would be stale."""
    recovery = JobRecovery()
    stale = model.stalled()
    for job_id, attempts in stale.values_list("pk", "attempts"):
        if attempts >= MAX_JOB_ATTEMPTS:
            error = f"The worker {doing} stopped {attempts} times {WORKERS_GAVE_OUT}"
            # Only if no worker took it meanwhile (its attempts would have moved on).
            if stale.filter(pk=job_id, attempts=attempts).update(error=error):
                recovery.failed.append(job_id)
        else:
            enqueue_on_commit(task_name, job_id)
            recovery.sent.append(job_id)
    recovery.next_check_in = time_until_stale(model.taken())
    if recovery.sent or recovery.failed:
        kind = model._meta.verbose_name_plural
        logger.info(
            "%s whose worker died: sent again %s, failed %s", kind, recovery.sent, recovery.failed
        )
    return recovery
