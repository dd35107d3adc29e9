"""Versions of a task set, as a newcomer meets them: a change to a frozen version goes to the
next version and the page moves there and says so; only the newest version takes changes, and
older ones point to it; every version, siblings made before that rule included, is listed."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import (
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TaskSetFactory,
    TeacherFactory,
)
from webapp.runs.services import evaluation_run_create
from webapp.tasks.models import Task, TaskSet
from webapp.tasks.services import OlderVersion, task_add

pytestmark = pytest.mark.django_db

QUICK_ADD = {"prompt": "What is 6 * 7?", "answer": "42", "verifier_kind": "numeric"}
HTMX = {"HX-Request": "true"}


def used_by_a_run(task_set: TaskSet) -> None:
    evaluation_run_create(
        name="uses it",
        task_set=task_set,
        student=StudentFactory(),
        teacher=TeacherFactory(),
        protocol=ProtocolFactory(),
        created_by=None,
    )


def frozen_set() -> TaskSet:
    task_set = TaskSetFactory(name="Sums")
    TaskFactory(task_set=task_set)
    used_by_a_run(task_set)
    return task_set


def test_quick_add_on_a_frozen_set_moves_the_whole_page_to_the_new_version(
    researcher_client,
) -> None:  # type: ignore[no-untyped-def]
    v1 = frozen_set()
    response = researcher_client.post(
        reverse("task_set_detail", args=[v1.pk]), QUICK_ADD, headers=HTMX
    )
    v2 = TaskSet.objects.get(parent=v1)
    # htmx follows a plain redirect inside the request and swaps v2's table into v1's page;
    # HX-Redirect makes the browser load v2's page: address, header and banners.
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("task_set_detail", args=[v2.pk])
    page = researcher_client.get(response["HX-Redirect"]).content.decode()
    assert "Saved as v2: v1 is frozen because runs used it." in page
    assert "<h1>Sums (v2)</h1>" in page
    assert 'id="locked-notice"' not in page, "v2 has no runs: it is not frozen"
    assert v2.tasks.filter(prompt=QUICK_ADD["prompt"]).exists()
    assert not v1.tasks.filter(prompt=QUICK_ADD["prompt"]).exists()

    # The next add goes to v2 in place, and the fragment is swapped as usual.
    again = researcher_client.post(
        reverse("task_set_detail", args=[v2.pk]),
        {**QUICK_ADD, "prompt": "What is 5 * 5?", "answer": "25"},
        headers=HTMX,
    )
    assert "HX-Redirect" not in again
    assert again.content.decode().lstrip().startswith('<div id="task-editor"')
    assert TaskSet.objects.count() == 2 and v2.tasks.count() == 3


def test_an_older_version_refuses_changes_and_points_to_the_newest(researcher_client) -> None:  # type: ignore[no-untyped-def]
    v1 = frozen_set()
    researcher_client.post(reverse("task_set_detail", args=[v1.pk]), QUICK_ADD)
    v2 = TaskSet.objects.get(parent=v1)

    page = researcher_client.get(reverse("task_set_detail", args=[v1.pk])).content.decode()
    assert 'id="newer-version"' in page
    assert f'href="{reverse("task_set_detail", args=[v2.pk])}">v2</a>' in page
    assert 'id="no-quick-add"' in page and "Add task</button>" not in page

    # A stale page (a tab opened before v2 existed) posts anyway: refused, nothing forks.
    response = researcher_client.post(
        reverse("task_set_detail", args=[v1.pk]), QUICK_ADD, headers=HTMX
    )
    assert response["HX-Redirect"] == reverse("task_set_detail", args=[v1.pk])
    message = researcher_client.get(response["HX-Redirect"]).content.decode()
    assert "v1 is an older version of Sums: its tasks no longer change." in message
    assert TaskSet.objects.count() == 2, "no v3 forked from v1"
    assert v1.tasks.count() == 1 and v2.tasks.count() == 2

    task = v1.tasks.get()
    edit = reverse("task_edit", args=[v1.pk, task.pk])
    researcher_client.post(edit, {"prompt": "Changed", "verifier_kind": "numeric", "answer": "1"})
    researcher_client.post(reverse("task_delete", args=[v1.pk, task.pk]))
    researcher_client.post(reverse("task_create", args=[v1.pk]), QUICK_ADD)
    assert TaskSet.objects.count() == 2 and v1.tasks.count() == 1 and v2.tasks.count() == 2
    task.refresh_from_db()
    assert task.prompt != "Changed"

    # The old version's editor links the same task in the newest version, and has no Save.
    editor = researcher_client.get(edit).content.decode()
    same = v2.tasks.get(position=task.position)
    assert reverse("task_edit", args=[v2.pk, same.pk]) in editor
    assert "Save task</button>" not in editor and "Delete task</button>" not in editor


def test_the_service_refuses_changes_to_an_older_version(db) -> None:  # type: ignore[no-untyped-def]
    v1 = frozen_set()
    change = task_add(task_set=v1, prompt="p", reference={"answer": "1"}, verifier_kind="exact")
    assert change.new_version and change.task_set.version == 2
    with pytest.raises(OlderVersion) as refusal:
        task_add(task_set=v1, prompt="q", reference={"answer": "2"}, verifier_kind="exact")
    assert refusal.value.newest == change.task_set
    assert TaskSet.objects.count() == 2


def test_a_frozen_newest_version_makes_the_next_one(researcher_client) -> None:  # type: ignore[no-untyped-def]
    v1 = frozen_set()
    researcher_client.post(reverse("task_set_detail", args=[v1.pk]), QUICK_ADD)
    v2 = TaskSet.objects.get(parent=v1)
    used_by_a_run(v2)
    response = researcher_client.post(reverse("task_set_detail", args=[v2.pk]), QUICK_ADD)
    v3 = TaskSet.objects.get(parent=v2)
    assert v3.version == 3
    assert response["Location"] == reverse("task_set_detail", args=[v3.pk])


def test_every_version_is_listed_siblings_included(researcher_client) -> None:  # type: ignore[no-untyped-def]
    # Two versions made from v1, as the old rule (a change to any frozen version forks it) left.
    v1 = frozen_set()
    v2 = TaskSetFactory(name="Sums", version=2, parent=v1)
    v3 = TaskSetFactory(name="Sums", version=3, parent=v1)
    page = researcher_client.get(reverse("task_set_detail", args=[v2.pk])).content.decode()
    versions = page[page.index('id="versions"') :]
    versions = versions[: versions.index("</p>")]
    assert "v1</a>\n  (1 run)" in versions
    assert "<strong>v2</strong>\n  (0 runs)" in versions
    assert "v3</a>\n  (from v1, 0 runs, newest)" in versions
    # v2 is not the newest: it points to v3 and takes no changes.
    assert f'href="{reverse("task_set_detail", args=[v3.pk])}">v3</a>. This version' in page
    researcher_client.post(reverse("task_set_detail", args=[v2.pk]), QUICK_ADD)
    assert not Task.objects.filter(prompt=QUICK_ADD["prompt"]).exists()
