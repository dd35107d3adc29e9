"""Celery app and tasks: the only place where the web side (webapp) and model code (models_gpu) meet."""
