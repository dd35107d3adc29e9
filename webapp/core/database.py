"""What losing the database looks like to a job, so that jobs can tell it from their own errors.

A restarted or unreachable PostgreSQL raises these on the next query (``OperationalError``: the
server closed the connection; ``InterfaceError``: the connection was already closed). A job that
meets one cannot record anything; it must not mark itself failed when the database comes back
either, since nothing about the job itself went wrong: it stops and is resumed
(``workers.recovery.resume_after_database_loss``).
"""

from __future__ import annotations

from django.db import InterfaceError, OperationalError

DATABASE_LOST = (OperationalError, InterfaceError)
