"""The Celery application, configured from Django settings (the CELERY_* names).

Kept free of task imports so the web process can enqueue by name without loading model code.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

# workers.recovery connects the worker_ready sweep that resumes runs a dead worker left behind.
app = Celery("dialab", include=["workers.tasks", "workers.task_imports", "workers.recovery"])
app.config_from_object("django.conf:settings", namespace="CELERY")
