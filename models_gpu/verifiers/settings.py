"""Reading a task's verifier configuration and reference, loudly refusing what is wrong.

A misspelt option (``reltol``) silently falling back to its default would quietly change a
research result, so unknown keys are an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models_gpu.types import TaskSpec


def verifier_settings(task: TaskSpec, defaults: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(task.verifier_config) - set(defaults))
    if unknown:
        raise ValueError(
            f"task {task.task_id}: unknown {task.verifier_kind!r} verifier option(s) {unknown}; "
            f"known options: {sorted(defaults)}"
        )
    return {**defaults, **task.verifier_config}


def reference_answer(task: TaskSpec) -> Any:
    if "answer" not in task.reference:
        raise ValueError(f"task {task.task_id}: the reference has no 'answer' key")
    return task.reference["answer"]
