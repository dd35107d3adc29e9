from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max

from webapp.accounts.models import User
from webapp.tasks.models import Task, TaskSet


def task_set_create(*, name: str, description: str = "", created_by: User | None) -> TaskSet:
    return TaskSet.objects.create(name=name, description=description, created_by=created_by)


@transaction.atomic
def task_add(
    *,
    task_set: TaskSet,
    prompt: str,
    reference: dict[str, Any],
    verifier_kind: str,
    domain: str = "",
    difficulty: float | None = None,
    verifier_config: dict[str, Any] | None = None,
) -> Task:
    """Append a task at the end of its set."""
    # Lock the set so two authors adding at once do not get the same position.
    TaskSet.objects.select_for_update().filter(pk=task_set.pk).first()
    last = task_set.tasks.aggregate(last=Max("position"))["last"]
    return Task.objects.create(
        task_set=task_set,
        position=0 if last is None else last + 1,
        prompt=prompt,
        reference=reference,
        verifier_kind=verifier_kind,
        verifier_config=verifier_config or {},
        domain=domain,
        difficulty=difficulty,
    )
