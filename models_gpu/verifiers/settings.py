"""Reading a task's verifier configuration and reference, loudly refusing what is wrong.

A misspelt option (``reltol``) silently falling back to its default would quietly change a
research result, so unknown keys are an error.
"""

from __future__ import annotations

from typing import Any

from models_gpu.spec.verifiers import read_verifier_settings
from models_gpu.types import TaskSpec


def verifier_settings(task: TaskSpec) -> dict[str, Any]:
    """The task's verifier options, defaults filled in (``models_gpu.spec.verifiers``)."""
    return read_verifier_settings(task.verifier_kind, task.verifier_config, task_id=task.task_id)


def reference_answer(task: TaskSpec) -> Any:
    if "answer" not in task.reference:
        raise ValueError(f"task {task.task_id}: the reference has no 'answer' key")
    return task.reference["answer"]
