"""gunicorn's settings for Dialab: ``gunicorn -c python:webapp.core.gunicorn_conf webapp.wsgi``.

gunicorn writes its error log and its access log (each request line, query string and referrer
included) through handlers of its own, on loggers that do not propagate: settings.LOGGING's
redacting filter never sees them. ``RedactingLogger`` puts ``SecretRedactingFilter`` on every
handler gunicorn sets up (again after a reload), in the master and in each worker, so
``GET /healthz?api_key=sk-...`` is logged as ``GET /healthz?api_key=[redacted]``.

Other settings stay on the command line (``--bind``, ``--access-logfile``, ...), where each
invocation states them.
"""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

from webapp.core.redaction import SecretRedactingFilter, install_secret_redaction

logger_class = "webapp.core.gunicorn_conf.RedactingLogger"


class RedactingLogger(Logger):  # type: ignore[misc]
    """gunicorn's logger, with every handler it installs redacting secrets."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        install_secret_redaction(self.error_log, self.access_log)


def post_worker_init(worker: Any) -> None:
    """Once a worker has loaded the application, Django's settings are configured, so the
    literal secrets they hold (a generated SECRET_KEY, the database password) are known: the
    worker's handlers get a filter that knows them too (the master's knew only the
    environment's)."""
    redacting = SecretRedactingFilter()
    for log in (worker.log.error_log, worker.log.access_log):
        for handler in log.handlers:
            for old in [
                each for each in handler.filters if isinstance(each, SecretRedactingFilter)
            ]:
                handler.removeFilter(old)
            handler.addFilter(redacting)
