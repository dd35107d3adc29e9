"""Dialab's Django project, with its Celery app (webapp.celery). Never imports workers, torch,
transformers or vllm, and of models_gpu only models_gpu.spec (pyproject.toml's import contracts)."""
