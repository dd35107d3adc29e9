"""Real runs played in-process for the transcript pages' tests: the launch service, the worker
task (eager Celery), the engine and the scripted models, as a run plays in production."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from webapp.runs.models import Run
from webapp.runs.services import evaluation_run_create


@pytest.fixture
def play(eager_celery: Any, django_capture_on_commit_callbacks: Any) -> Callable[..., Run]:
    """``play(task_set=, protocol=, student=, ...)``: launch an evaluation run and return it
    finished (the worker task runs when the launch commits)."""

    def play_run(*, name: str = "run", samples_per_task: int = 1, **roles: Any) -> Run:
        with django_capture_on_commit_callbacks(execute=True):
            run = evaluation_run_create(
                name=name, samples_per_task=samples_per_task, created_by=None, **roles
            )
        run.refresh_from_db()
        assert run.status == Run.Status.SUCCEEDED, run.error
        return run

    return play_run
