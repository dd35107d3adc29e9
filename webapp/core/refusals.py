"""A refused request is one log line, not a traceback.

Django logs each PermissionDenied on ``django.request`` as a warning with the exception's
traceback attached ("Forbidden (Permission denied): /models/" and twenty lines of frames). A
refusal is a permission check doing its job, not a fault to debug, and the tracebacks buried
the real errors. ``OneLineRefusals`` (on that logger: settings.LOGGING) rewrites every 403
record to ``refused GET /models/ for user ada: Only researchers can do this.`` and drops the
traceback; every other record passes untouched.
"""

from __future__ import annotations

import logging
from typing import Any


def _escaped(text: str) -> str:
    # As Django escapes a logged path: a newline in a URL cannot forge a second log line.
    return text.encode("unicode_escape").decode("ascii")


def _username(request: Any) -> str:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return "anonymous"
    return str(user.get_username())


class OneLineRefusals(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        if getattr(record, "status_code", None) != 403 or request is None:
            return True
        # Logging configured twice (a Celery app set up in the web process) leaves two of these
        # filters on the logger: the second must not rewrite the line the first wrote.
        if getattr(record, "refusal", False):
            return True
        record.refusal = True
        exception = record.exc_info[1] if record.exc_info else None
        reason = str(exception) if exception is not None and str(exception) else "forbidden"
        record.msg = "refused %s %s for user %s: %s"
        record.args = (
            request.method,
            _escaped(request.path),
            _escaped(_username(request)),
            _escaped(reason),
        )
        record.exc_info = None
        record.exc_text = None
        return True
