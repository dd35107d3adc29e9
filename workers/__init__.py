"""Celery tasks (on webapp's Celery app): the only place where webapp and models_gpu meet."""
