"""Heartbeats of long jobs (evaluation runs, task imports): a thread that records, every
``DIALAB_HEARTBEAT_SECONDS`` while the job lives, that its worker is alive. A killed worker takes
the thread with it, so its heartbeat stops as it should, and a job whose heartbeat is older than
``stale_after()`` is taken for one whose worker died."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Self

from django.conf import settings
from django.db import connection
from django.db.models import QuerySet
from django.db.models.functions import Now
from django.utils import timezone

logger = logging.getLogger(__name__)

MISSED_BEATS = 3


def stale_after() -> timedelta:
    """A job whose heartbeat is older than this lost its worker: three missed heartbeats."""
    return timedelta(seconds=MISSED_BEATS * settings.DIALAB_HEARTBEAT_SECONDS)


def time_until_stale(beating: QuerySet[Any], after: timedelta | None = None) -> timedelta | None:
    """How long until the oldest ``heartbeat_at`` still fresh among ``beating`` turns stale
    (older than ``after``, by default ``stale_after()``); None if none is fresh."""
    after = stale_after() if after is None else after
    oldest: datetime | None = (
        beating.filter(heartbeat_at__gte=Now() - after)
        .order_by("heartbeat_at")
        .values_list("heartbeat_at", flat=True)
        .first()
    )
    if oldest is None:
        return None
    return max(oldest + after - timezone.now(), timedelta(0))


class Heartbeat:
    """Calls ``beat`` from a background thread every ``interval_seconds`` while it is used as a
    context manager, and once more soon after each ``wake()``; nothing after it exits. The
    thread has its own database connection (closed when it ends), so what ``beat`` writes is
    committed at once, even while the job's own transaction is open. A failed beat is logged
    and tried again at the next one. With ``enabled`` false it never starts a thread."""

    def __init__(
        self,
        beat: Callable[[], object],
        *,
        interval_seconds: float,
        name: str,
        enabled: bool = True,
    ) -> None:
        self.beat = beat
        self.interval_seconds = interval_seconds
        self.enabled = enabled
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self) -> Self:
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stopping = True
        self._wake.set()
        if self.enabled:
            self._thread.join()

    def wake(self) -> None:
        """Beat now rather than at the end of the interval (e.g. to report progress)."""
        self._wake.set()

    def _run(self) -> None:
        try:
            while True:
                self._wake.wait(self.interval_seconds)
                self._wake.clear()
                if self._stopping:
                    return
                try:
                    self.beat()
                except Exception:  # a database hiccup: try again at the next beat
                    logger.exception("%s: heartbeat failed", self._thread.name)
        finally:
            connection.close()  # this thread's own connection
