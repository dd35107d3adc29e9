from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db.models import Count, Q, QuerySet

from webapp.tasks.models import Task, TaskSet, VerifierProbe


def task_set_list(*, query: str = "") -> QuerySet[TaskSet]:
    task_sets = TaskSet.objects.annotate(
        task_count=Count("tasks", distinct=True), run_count=Count("runs", distinct=True)
    )
    if query:
        task_sets = task_sets.filter(Q(name__icontains=query) | Q(description__icontains=query))
    return task_sets.order_by("-created_at", "-id")


def task_set_domain_counts(*, task_set_ids: Iterable[int]) -> dict[int, list[tuple[str, int]]]:
    """Tasks per domain for each set, in one grouped query."""
    rows = (
        Task.objects.filter(task_set_id__in=list(task_set_ids))
        .values_list("task_set_id", "domain")
        .annotate(n=Count("id"))
        .order_by("task_set_id", "-n", "domain")
    )
    counts: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for task_set_id, domain, n in rows:
        counts[task_set_id].append((domain or "—", n))
    return dict(counts)


def task_set_lineage(*, task_set: TaskSet) -> list[TaskSet]:
    """Every version of a set: its ancestors, itself and its descendants, oldest first, each
    with ``run_count``. Sets made before only the newest version could change may hold sibling
    versions (two made from the same parent); they are all here."""
    root = task_set
    while root.parent_id is not None and root.parent is not None:
        root = root.parent
    with_runs = TaskSet.objects.select_related("parent").annotate(run_count=Count("runs"))
    lineage = list(with_runs.filter(pk=root.pk))
    frontier = [root.pk]
    while frontier:
        children = list(with_runs.filter(parent_id__in=frontier))
        lineage.extend(children)
        frontier = [child.pk for child in children]
    return sorted(lineage, key=_version_order)


def _version_order(task_set: TaskSet) -> tuple[int, int]:
    return (task_set.version, task_set.pk)


def task_set_newest_version(*, task_set: TaskSet, lineage: list[TaskSet] | None = None) -> TaskSet:
    """The newest version of ``task_set``'s set (the highest number; the later made, if two
    share it): the only one whose tasks may change. ``lineage`` if already fetched."""
    return max(lineage or task_set_lineage(task_set=task_set), key=_version_order)


# What the worker needs of a task to verify answers and play dialogues (see workers.specs).
TASK_PAYLOAD_FIELDS = (
    "id", "prompt", "reference", "verifier_kind", "verifier_config", "shards", "domain",
)  # fmt: skip


def task_payloads(*, task_set_id: int) -> list[dict[str, Any]]:
    """A set's tasks as plain data, in order."""
    tasks = Task.objects.filter(task_set_id=task_set_id).order_by("position", "id")
    return list(tasks.values(*TASK_PAYLOAD_FIELDS))


def task_payload(*, task_id: int) -> dict[str, Any]:
    payload: dict[str, Any] = Task.objects.values(*TASK_PAYLOAD_FIELDS).get(pk=task_id)
    return payload


def probe_to_verify(*, probe_id: int) -> tuple[dict[str, Any], str]:
    """An author's "try it" as the worker checks it: the task's payload and the typed answer."""
    probe = VerifierProbe.objects.only("task_id", "response").get(pk=probe_id)
    return task_payload(task_id=probe.task_id), probe.response


def task_list(*, task_set: TaskSet, query: str = "") -> QuerySet[Task]:
    tasks = task_set.tasks.order_by("position", "id")
    if query:
        tasks = tasks.filter(Q(prompt__icontains=query) | Q(external_id__icontains=query))
    return tasks


def task_key(prompt: str, reference: Any) -> str:
    """Which task this is, whatever task set or version holds it: a hash of its prompt and
    reference. Comparisons pair tasks by it, and held-out checks find overlaps by it."""
    canonical = json.dumps([prompt, reference], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def task_keys(*, task_ids: Iterable[int]) -> dict[int, str]:
    """``{task id: task_key}`` in one query."""
    tasks = Task.objects.filter(pk__in=list(task_ids)).values_list("pk", "prompt", "reference")
    return {pk: task_key(prompt, reference) for pk, prompt, reference in tasks}


def probes_waiting() -> QuerySet[VerifierProbe]:
    """The probes no worker has taken yet (nor answered: probes older than ``started_at``)."""
    return VerifierProbe.unanswered().filter(started_at=None)
