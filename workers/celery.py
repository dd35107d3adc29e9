"""The Celery application, configured from Django settings (the CELERY_* names).

Kept free of task imports so the web process can enqueue by name without loading model code.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger
from celery.utils.log import get_multiprocessing_logger

from webapp.core.redaction import install_secret_redaction

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

# workers.recovery connects the worker_ready sweep that resumes runs a dead worker left behind.
app = Celery("dialab", include=["workers.tasks", "workers.task_imports", "workers.recovery"])
app.config_from_object("django.conf:settings", namespace="CELERY")


@after_setup_logger.connect
@after_setup_task_logger.connect
def redact_secrets_in_worker_logs(*, logger: logging.Logger, **_: Any) -> None:
    """Celery swaps the root handlers settings.LOGGING installed (with their redacting filter)
    for its own, and gives task loggers one more: each gets the filter too, so nothing the
    worker writes (data/worker.log under scripts/demo.sh) shows a secret."""
    install_secret_redaction(logger, get_multiprocessing_logger())
