"""Is an evaluation held out? Which tasks a model trained on, and how many of an evaluation's
tasks are among them.

Tasks are compared by ``task_key`` (their prompt and reference): the same task in another task
set, another version of a set, or a duplicate within one is the same task. A model's training
tasks are those of its training run: for training on a dataset snapshot, the tasks of the
snapshot's dialogues (recorded when the snapshot was frozen); for online training, the rollout
task set's tasks and, with a priming stage, its snapshot's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import QuerySet

from webapp.dialogues.models import Dialogue
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.tasks.models import Task
from webapp.tasks.selectors import task_key
from webapp.training.models import DatasetSnapshot


@dataclass(frozen=True)
class Overlap:
    """How many of ``tasks`` evaluation tasks (distinct by ``task_key``) were trained on."""

    trained_on: int
    tasks: int

    @property
    def held_out(self) -> bool:
        return self.trained_on == 0

    @property
    def description(self) -> str:
        return (
            f"not held out: {self.trained_on} of its {self.tasks} task"
            f"{'' if self.tasks == 1 else 's'} were trained on"
        )


def _keys(rows: Iterable[tuple[str, object]]) -> frozenset[str]:
    return frozenset(task_key(prompt, reference) for prompt, reference in rows)


def selection_task_keys(dialogues: QuerySet[Dialogue]) -> frozenset[str]:
    """The tasks of these dialogues, in one query (rows: one per distinct task)."""
    tasks = Task.objects.filter(pk__in=dialogues.values("task_id"))
    return _keys(tasks.values_list("prompt", "reference"))


def task_set_task_keys(task_set_id: int) -> frozenset[str]:
    return _keys(Task.objects.filter(task_set_id=task_set_id).values_list("prompt", "reference"))


def training_run_task_keys(run: Run) -> frozenset[str]:
    """The tasks a training run trains on (module docstring)."""
    config = run.training_config
    keys: frozenset[str] = frozenset()
    if config.rollouts is not None:
        keys |= task_set_task_keys(config.rollouts.task_set.id)
    if config.dataset is not None:
        snapshot = DatasetSnapshot.objects.filter(pk=config.dataset.id).first()
        if snapshot is not None:
            keys |= frozenset(snapshot.task_keys)
    return keys


def trained_task_keys(model: ModelSpec) -> frozenset[str]:
    """The tasks ``model`` was trained on (none for a model no run of Dialab trained)."""
    run = model.trained_by_run
    return training_run_task_keys(run) if run is not None else frozenset()


def overlap(training: frozenset[str], evaluation: Iterable[str]) -> Overlap:
    evaluated = set(evaluation)
    return Overlap(len(evaluated & training), len(evaluated))
