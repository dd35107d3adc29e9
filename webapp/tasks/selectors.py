from __future__ import annotations

from django.db.models import Count, QuerySet

from webapp.tasks.models import Task, TaskSet


def task_set_list() -> QuerySet[TaskSet]:
    return TaskSet.objects.annotate(task_count=Count("tasks")).order_by("-created_at", "-id")


def task_list(*, task_set: TaskSet) -> QuerySet[Task]:
    return task_set.tasks.order_by("position", "id")
