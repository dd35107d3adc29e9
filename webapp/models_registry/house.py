"""The house model's name in the registry, where it is built (``manage.py build_house_model``)
and where its build reports its progress, which the home page reads while the build runs."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

HOUSE_MODEL_NAME = "house"  # the ModelSpec build_house_model registers


def house_model_dir() -> Path:
    return Path(settings.DATA_DIR) / "models" / "house"


def house_build_progress_path() -> Path:
    """The file ``manage.py build_house_model`` keeps its progress in
    (``models_gpu.house.progress.BuildProgressFile``, which documents its keys)."""
    return Path(settings.DATA_DIR) / "models" / "house-build.json"
