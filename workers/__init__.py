"""Celery app and tasks: the only place where webapp and models_gpu meet."""
