"""The Celery application of the Django project, configured from Django settings (CELERY_*).

The web process sends tasks through it by name (``webapp.core.dispatch``) and never imports
them: the tasks live in ``workers``, which imports this app. A worker (``celery -A webapp
worker``) imports the modules named in ``include`` before it sets up logging or reports ready,
so the signal handlers they connect are in place: ``workers.log_redaction`` (secrets stay out
of the worker's log lines) and ``workers.recovery`` (the ``worker_ready`` sweep that resumes
runs a dead worker left behind).
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery(
    "dialab",
    include=[
        "workers.log_redaction",
        "workers.recovery",
        "workers.tasks",
        "workers.task_imports",
    ],
)
app.config_from_object("django.conf:settings", namespace="CELERY")
