"""Writes for task sets and tasks.

A task set that runs have used is never changed in place: a change to its tasks goes to a new
version (a copy with ``version + 1`` and ``parent`` set), so every run keeps pointing at exactly
the tasks it ran on. Name and description are labels, not content, and change in place.

Only the newest version of a set takes changes. An edit made while reading an older version was
made against that version's tasks: applied to the newest it could overwrite a task that changed
since, and applied to a fork of the old version it would make sibling versions nobody asked
for. So it is refused (:class:`OlderVersion`) and the pages point to the newest version; an
independent branch of an old version is what **Duplicate** makes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max

from webapp.accounts.models import User
from webapp.core.dispatch import enqueue_on_commit
from webapp.core.interactive_jobs import JobRecovery, job_claim, jobs_recover
from webapp.tasks.models import Task, TaskSet, VerifierProbe
from webapp.tasks.selectors import probes_waiting, task_set_newest_version

# The fields that make a task what it is; copying a task copies exactly these.
TASK_CONTENT_FIELDS = (
    "position",
    "external_id",
    "prompt",
    "reference",
    "verifier_kind",
    "verifier_config",
    "domain",
    "difficulty",
    "tags",
    "shards",
    "metadata",
)


class TaskSetInUse(Exception):
    """Raised when deleting a task set that runs still point at."""


class OlderVersion(Exception):
    """Raised when changing the tasks of a version that a newer version of its set replaced."""

    def __init__(self, *, task_set: TaskSet, newest: TaskSet) -> None:
        self.task_set = task_set
        self.newest = newest
        super().__init__(
            f"v{task_set.version} is an older version of {task_set.name}: its tasks no longer "
            f"change. Make the change in v{newest.version}, the newest version."
        )


def task_set_create(*, name: str, description: str = "", created_by: User | None) -> TaskSet:
    return TaskSet.objects.create(name=name, description=description, created_by=created_by)


def task_set_is_locked(task_set: TaskSet) -> bool:
    """Used by at least one run: its tasks can no longer change in place."""
    return task_set.runs.exists()


def task_set_rename(*, task_set: TaskSet, name: str, description: str) -> TaskSet:
    task_set.name = name
    task_set.description = description
    task_set.save(update_fields=["name", "description", "updated_at"])
    return task_set


def _copy_tasks(source: TaskSet, target: TaskSet) -> None:
    rows = source.tasks.order_by("position", "id").values(*TASK_CONTENT_FIELDS)
    batch: list[Task] = []
    for row in rows.iterator(chunk_size=2000):
        batch.append(Task(task_set=target, **row))
        if len(batch) == 2000:
            Task.objects.bulk_create(batch)
            batch = []
    Task.objects.bulk_create(batch)


@transaction.atomic
def task_set_duplicate(*, task_set: TaskSet, created_by: User | None) -> TaskSet:
    """An independent copy (version 1 of a new set), made by what made the original."""
    copy = TaskSet.objects.create(
        name=f"Copy of {task_set.name}",
        description=task_set.description,
        provenance=task_set.provenance,
        created_by=created_by,
    )
    _copy_tasks(task_set, copy)
    return copy


@transaction.atomic
def task_set_new_version(*, task_set: TaskSet, created_by: User | None) -> TaskSet:
    """The next version of a set: same name, all its tasks copied, ``parent`` pointing back.
    Only the newest version gets a next one (see :func:`_writable`), so ``version + 1`` is new."""
    version = TaskSet.objects.create(
        name=task_set.name,
        description=task_set.description,
        version=task_set.version + 1,
        parent=task_set,
        provenance=task_set.provenance,
        created_by=created_by,
    )
    _copy_tasks(task_set, version)
    return version


CONCAT_OF = "concat_of"  # provenance key of a set whose prompts are another set's shards, joined


@transaction.atomic
def task_set_with_shards_concatenated(*, task_set: TaskSet, created_by: User | None) -> TaskSet:
    """The tasks of a sharded set with each prompt replaced by all its shards in one message
    (Lost in Conversation's CONCAT condition): same references, verifiers and shards. Made once
    per version of ``task_set`` and reused after; ``ValueError`` when a task has no shards."""
    unsharded = task_set.tasks.filter(shards=[]).count()
    if unsharded:
        raise ValueError(
            f"{unsharded} task(s) of {task_set.name} v{task_set.version} have no shards: "
            "CONCAT joins each task's shards into one prompt."
        )
    existing = TaskSet.objects.filter(**{f"provenance__{CONCAT_OF}": task_set.pk}).first()
    if existing is not None:
        return existing
    concat = TaskSet.objects.create(
        # Named as the set is shown (its version after the name only past v1): pages add the
        # CONCAT set's own version after this name.
        name=f"{task_set} (CONCAT)",
        description=f"The tasks of {task_set.name} v{task_set.version}, each prompt being its "
        "shards joined into one message.",
        provenance={CONCAT_OF: task_set.pk},
        created_by=created_by,
    )
    tasks = []
    for row in task_set.tasks.order_by("position", "id").values(*TASK_CONTENT_FIELDS):
        tasks.append(Task(task_set=concat, **{**row, "prompt": " ".join(row["shards"])}))
    Task.objects.bulk_create(tasks, batch_size=2000)
    return concat


def task_set_delete(*, task_set: TaskSet) -> None:
    run_count = task_set.runs.count()
    if run_count:
        raise TaskSetInUse(
            f"{task_set} was used by {run_count} run{'s' if run_count != 1 else ''}; "
            "it is kept so that their results stay reproducible."
        )
    task_set.delete()


@dataclass(frozen=True)
class TaskChange:
    """Where a change to a task landed: the set it is in now and whether that is a new version."""

    task_set: TaskSet
    task: Task | None
    new_version: bool


def _writable(task_set: TaskSet, user: User | None) -> tuple[TaskSet, bool]:
    """The set a change to ``task_set``'s tasks goes to: itself, or its next version when runs
    used it. OlderVersion when a newer version replaced it."""
    # Lock the row first, so two authors changing the same frozen version at once make one next
    # version: the second waits, then finds it and is refused (PostgreSQL; SQLite serialises
    # writers anyway).
    TaskSet.objects.select_for_update().filter(pk=task_set.pk).first()
    newest = task_set_newest_version(task_set=task_set)
    if newest.pk != task_set.pk:
        raise OlderVersion(task_set=task_set, newest=newest)
    if task_set_is_locked(task_set):
        return task_set_new_version(task_set=task_set, created_by=user), True
    return task_set, False


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
    tags: list[str] | None = None,
    shards: list[str] | None = None,
    user: User | None = None,
) -> TaskChange:
    """Append a task at the end of its set (of a new version if runs used the set).
    OlderVersion if a newer version of the set replaced this one."""
    target, new_version = _writable(task_set, user)
    # Lock the set so two authors adding at once do not get the same position.
    TaskSet.objects.select_for_update().filter(pk=target.pk).first()
    last = target.tasks.aggregate(last=Max("position"))["last"]
    task = Task.objects.create(
        task_set=target,
        position=0 if last is None else last + 1,
        prompt=prompt,
        reference=reference,
        verifier_kind=verifier_kind,
        verifier_config=verifier_config or {},
        domain=domain,
        difficulty=difficulty,
        tags=tags or [],
        shards=shards or [],
    )
    return TaskChange(target, task, new_version)


@transaction.atomic
def tasks_add_many(*, task_set: TaskSet, tasks: list[Task], user: User | None = None) -> TaskChange:
    """Append unsaved tasks at the end of their set, in order, all or none (to a new version if
    runs used the set). OlderVersion if a newer version of the set replaced this one."""
    target, new_version = _writable(task_set, user)
    TaskSet.objects.select_for_update().filter(pk=target.pk).first()
    last = target.tasks.aggregate(last=Max("position"))["last"]
    start = 0 if last is None else last + 1
    for offset, task in enumerate(tasks):
        task.task_set = target
        task.position = start + offset
    Task.objects.bulk_create(tasks, batch_size=2000)
    return TaskChange(target, None, new_version)


@transaction.atomic
def task_update(*, task: Task, changes: dict[str, Any], user: User | None = None) -> TaskChange:
    """Change a task's content; in a set that runs used, the change goes to a new version.
    OlderVersion if a newer version of the set replaced this one."""
    unknown = set(changes) - set(TASK_CONTENT_FIELDS)
    if unknown:
        raise ValueError(f"Not task content fields: {sorted(unknown)}")
    target, new_version = _writable(task.task_set, user)
    if new_version:
        task = target.tasks.get(position=task.position)
    for field, value in changes.items():
        setattr(task, field, value)
    task.save(update_fields=list(changes))
    return TaskChange(target, task, new_version)


@transaction.atomic
def task_delete(*, task: Task, user: User | None = None) -> TaskChange:
    """Delete a task; in a set that runs used, from a new version. OlderVersion as above."""
    target, new_version = _writable(task.task_set, user)
    target.tasks.filter(position=task.position).delete()
    return TaskChange(target, None, new_version)


VERIFY_PROBE_TASK = "workers.tasks.verify_probe"


def probe_create(*, task: Task, response: str, user: User | None) -> VerifierProbe:
    """Record an author's trial answer and have a worker run the task's verifier on it."""
    probe = VerifierProbe.objects.create(task=task, response=response, created_by=user)
    enqueue_on_commit(VERIFY_PROBE_TASK, probe.pk)
    return probe


def probe_claim(*, probe_id: int) -> bool:
    """Take the probe (``webapp.core.interactive_jobs.job_claim``); False once it has its
    answer, so that a message sent again does nothing then."""
    return job_claim(VerifierProbe, probe_id)


def probes_recover() -> JobRecovery:
    """Send again the probes whose worker died while checking them (``jobs_recover``)."""
    return jobs_recover(VerifierProbe, task_name=VERIFY_PROBE_TASK, doing="checking this answer")


def probes_resend() -> list[int]:
    """Send again every probe no worker has taken, after the broker lost its messages (a Redis
    restart without persistence); returns their ids. A duplicate of an answered one does nothing
    (``probe_claim``)."""
    waiting = list(probes_waiting().values_list("pk", flat=True))
    for probe_id in waiting:
        enqueue_on_commit(VERIFY_PROBE_TASK, probe_id)
    return waiting


def probe_record(*, probe_id: int, verdict: dict[str, Any] | None, error: str = "") -> None:
    VerifierProbe.objects.filter(pk=probe_id).update(verdict=verdict, error=error)
