"""The training pages' world: stored dialogues of a source run on a task set, a tiny
transformers base model, a held-out task set (none of the source's tasks) with a protocol and a
scripted teacher."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory, TeacherFactory, frozen_run
from tests.transcript_builders import attempt, feedback, store
from webapp.models_registry.models import ModelSpec


@pytest.fixture
def world(settings: Any, tmp_path: Path, tiny_model_dir: Path) -> dict[str, Any]:
    settings.DIALAB_DATASETS_DIR = tmp_path / "datasets"
    settings.DIALAB_TRAINING_DIR = tmp_path / "training"
    task_set = TaskSetFactory(name="collected sums")
    task = TaskFactory(task_set=task_set, prompt="What is 1 + 2?", reference={"answer": "3"})
    held_out = TaskSetFactory(name="held out")
    TaskFactory(task_set=held_out, prompt="What is 2 + 5?", reference={"answer": "7"})
    protocol = ProtocolFactory(max_turns=2)
    source = frozen_run(name="collected", task_set=task_set, protocol=protocol)
    for sample in range(2):
        store(source, task.pk, sample, "a_late", [
            attempt("4", "4", False), feedback("Too high."), attempt("3", "3", True),
        ])  # fmt: skip
    store(source, task.pk, 2, "b_same", [attempt("5", "5", False), feedback("No.")])
    base = ModelSpec.objects.create(
        name="tiny", backend="transformers", location=str(tiny_model_dir)
    )
    return {
        "task_set": task_set, "held_out": held_out, "protocol": protocol, "source": source,
        "base": base, "teacher": TeacherFactory(),
    }  # fmt: skip
