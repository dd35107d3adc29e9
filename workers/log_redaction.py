"""Secrets stay out of the worker's log lines (``webapp.core.redaction``).

Imported by the worker at start (the Celery app's ``include``), before it sets up logging.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import after_setup_logger, after_setup_task_logger
from celery.utils.log import get_multiprocessing_logger

from webapp.core.redaction import install_secret_redaction


@after_setup_logger.connect
@after_setup_task_logger.connect
def redact_secrets_in_worker_logs(*, logger: logging.Logger, **_: Any) -> None:
    """Celery swaps the root handlers settings.LOGGING installed (with their redacting filter)
    for its own, and gives task loggers one more: each gets the filter too, so nothing the
    worker writes (data/worker.log under scripts/demo.sh) shows a secret."""
    install_secret_redaction(logger, get_multiprocessing_logger())
