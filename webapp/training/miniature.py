"""The miniature reproduction's task sets (``manage.py sml_miniature --demo-task-sets`` adds
them; the demo's button trains the house model on them: ``webapp.demo``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from webapp.accounts.models import User
from webapp.tasks.models import TaskSet
from webapp.tasks.services import task_add, task_set_create

MINIATURE_TASK_SET = "Guess the number (miniature: training)"
MINIATURE_HELDOUT_TASK_SET = "Guess the number (miniature: held out)"


@transaction.atomic
def miniature_task_sets_create(
    *,
    owner_username: str,
    training: Sequence[Mapping[str, Any]],
    heldout: Sequence[Mapping[str, Any]],
) -> bool:
    """The miniature reproduction's task sets (``task_add``'s fields of each task), owned by
    ``owner_username``, once; False when they exist or there is no such user."""
    user = User.objects.filter(username=owner_username).first()
    if user is None or TaskSet.objects.filter(name=MINIATURE_TASK_SET).exists():
        return False
    for name, tasks, what in (
        (MINIATURE_TASK_SET, training, "trained on"),
        (MINIATURE_HELDOUT_TASK_SET, heldout, "held out: ranges never trained on"),
    ):
        task_set = task_set_create(
            name=name,
            description=f"Guess a hidden number in a range of 8 from too high / too low ({what}).",
            created_by=user,
        )
        for task in tasks:
            task_add(task_set=task_set, **task)
    return True
