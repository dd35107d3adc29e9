"""Reading the real broker in tests: which queue holds a job's message."""

from __future__ import annotations

from webapp.celery import app
from webapp.core.queues import QUEUES


def queue_holding(job_id: str) -> str | None:
    """Which of Dialab's queues holds the message of job ``job_id``. The messages read on the
    way are consumed: each test's jobs are its own, and no worker runs in these tests.

    A connection per queue: on Redis, the blocking pop still pending for the queue read before
    kept the next queue's message from coming back on a shared connection (seen in CI)."""
    for queue in QUEUES:
        with (
            app.connection_for_read() as connection,
            connection.SimpleQueue(queue.name, no_ack=True) as messages,
        ):
            while True:
                try:
                    message = messages.get(timeout=0.5)
                except messages.Empty:
                    break
                if message.headers.get("id") == job_id:
                    return queue.name
    return None
