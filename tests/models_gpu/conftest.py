from __future__ import annotations

from collections.abc import Callable

import pytest

from models_gpu.backends import load_generator
from models_gpu.generators.arithmetic import arithmetic_tasks
from models_gpu.spec.run import RoleSpec
from models_gpu.types import DialogueJob, Generator, TaskSpec


@pytest.fixture
def make_jobs() -> Callable[..., list[DialogueJob]]:
    """Arithmetic dialogue jobs with the numeric verifier; one sample per task, seed = task id."""

    def make(
        n: int, *, seed: int = 0, digits: int = 2, operations: str = "+-*"
    ) -> list[DialogueJob]:
        tasks = arithmetic_tasks(n, seed=seed, digits=digits, operations=operations)
        return [
            DialogueJob(
                task=TaskSpec(
                    task_id=index,
                    prompt=task["prompt"],
                    reference={"answer": task["answer"]},
                    verifier_kind="numeric",
                ),
                sample_index=0,
                seed=1000 * seed + index,
            )
            for index, task in enumerate(tasks)
        ]

    return make


@pytest.fixture
def scripted_student() -> Generator:
    return load_generator(RoleSpec(backend="scripted", location="arithmetic-student"))


@pytest.fixture
def scripted_teacher() -> Generator:
    return load_generator(RoleSpec(backend="scripted", location="feedback-teacher"))
