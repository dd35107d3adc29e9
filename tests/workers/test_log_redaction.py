"""The worker's hook (``workers.log_redaction``) puts the redacting filter on the handlers Celery
installs, once however often the logging signals fire."""

from __future__ import annotations

import io
import logging

from webapp.core.redaction import SecretRedactingFilter
from workers.log_redaction import redact_secrets_in_worker_logs


def test_the_celery_worker_filters_the_handlers_it_installs() -> None:
    logger = logging.getLogger("dialab.test.celery-like")
    handler = logging.StreamHandler(io.StringIO())
    logger.addHandler(handler)
    try:
        redact_secrets_in_worker_logs(logger=logger)
        redact_secrets_in_worker_logs(logger=logger)  # the task logger signal may repeat it
        assert len(handler.filters) == 1
        assert isinstance(handler.filters[0], SecretRedactingFilter)
    finally:
        logger.removeHandler(handler)
