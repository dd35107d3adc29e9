"""Authoring task sets in the browser: search, rename, duplicate, delete, versions, the editor,
the markdown preview and the verifier "try it" box."""

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
from webapp.tasks.models import Task, TaskSet, VerifierProbe

pytestmark = pytest.mark.django_db


def used_by_a_run(task_set: TaskSet):  # type: ignore[no-untyped-def]
    return evaluation_run_create(
        name="uses it",
        task_set=task_set,
        student=StudentFactory(),
        teacher=TeacherFactory(),
        protocol=ProtocolFactory(),
        created_by=None,
    )


def test_list_searches_and_counts_tasks_per_domain(researcher_client) -> None:  # type: ignore[no-untyped-def]
    algebra = TaskSetFactory(name="Algebra drills")
    TaskFactory.create_batch(3, task_set=algebra, domain="algebra")
    TaskFactory(task_set=algebra, domain="geometry")
    TaskSetFactory(name="Mazes")
    response = researcher_client.get(reverse("task_set_list"), {"q": "algebra"})
    html = response.content.decode()
    assert [s.name for s in response.context["page"]] == ["Algebra drills"]
    assert "algebra 3" in html and "geometry 1" in html
    empty = researcher_client.get(reverse("task_set_list"), {"q": "nothing like this"})
    assert "No task set matches" in empty.content.decode()


def test_rename_and_duplicate(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory(name="Old")
    TaskFactory.create_batch(3, task_set=task_set, tags=["t"], shards=["a", "b"])
    researcher_client.post(
        reverse("task_set_edit", args=[task_set.pk]), {"name": "New", "description": "d"}
    )
    task_set.refresh_from_db()
    assert (task_set.name, task_set.description) == ("New", "d")

    response = researcher_client.post(reverse("task_set_duplicate", args=[task_set.pk]))
    copy = TaskSet.objects.exclude(pk=task_set.pk).get()
    assert response["Location"] == reverse("task_set_detail", args=[copy.pk])
    assert copy.name == "Copy of New" and copy.version == 1
    fields = ("position", "prompt", "reference", "tags", "shards")
    assert list(copy.tasks.values_list(*fields)) == list(task_set.tasks.values_list(*fields))


def test_delete_asks_first_and_refuses_a_set_that_runs_used(researcher_client) -> None:  # type: ignore[no-untyped-def]
    unused = TaskSetFactory()
    TaskFactory(task_set=unused)
    url = reverse("task_set_delete", args=[unused.pk])
    assert "cannot be undone" in researcher_client.get(url).content.decode()
    assert TaskSet.objects.filter(pk=unused.pk).exists(), "GET deletes nothing"
    researcher_client.post(url)
    assert not TaskSet.objects.filter(pk=unused.pk).exists()

    used = TaskSetFactory()
    TaskFactory(task_set=used)
    used_by_a_run(used)
    url = reverse("task_set_delete", args=[used.pk])
    assert "cannot be deleted" in researcher_client.get(url).content.decode()
    response = researcher_client.post(url, follow=True)
    assert "kept so that their results stay reproducible" in response.content.decode()
    assert TaskSet.objects.filter(pk=used.pk).exists()


def test_editing_a_set_that_runs_used_makes_a_new_version(researcher_client) -> None:  # type: ignore[no-untyped-def]
    original = TaskSetFactory(name="Sums")
    first, second = TaskFactory.create_batch(2, task_set=original)
    run = used_by_a_run(original)
    fingerprint = run.config["task_set"]["fingerprint"]

    url = reverse("task_edit", args=[original.pk, second.pk])
    form = {"prompt": "What is 2 + 2?", "verifier_kind": "numeric", "answer": "4"}
    response = researcher_client.post(url, form, follow=True)
    assert "Saved as v2: v1 is frozen because runs used it." in response.content.decode()

    version_2 = TaskSet.objects.get(parent=original)
    assert (version_2.name, version_2.version) == ("Sums", 2)
    assert list(version_2.tasks.values_list("prompt", flat=True)) == [
        first.prompt,
        "What is 2 + 2?",
    ]
    second.refresh_from_db()
    assert second.prompt != "What is 2 + 2?", "the run's version is untouched"
    run.refresh_from_db()
    assert run.task_set_id == original.pk
    assert run.config["task_set"]["fingerprint"] == fingerprint

    # version 2 has no runs yet: it changes in place.
    researcher_client.post(
        reverse("task_set_detail", args=[version_2.pk]),
        {"prompt": "What is 3 + 3?", "verifier_kind": "numeric", "answer": "6"},
    )
    assert TaskSet.objects.count() == 2
    assert version_2.tasks.count() == 3
    detail = researcher_client.get(reverse("task_set_detail", args=[original.pk]))
    assert "A newer version of this set exists" in detail.content.decode()


def test_deleting_a_task_of_a_used_set_goes_to_a_new_version(researcher_client) -> None:  # type: ignore[no-untyped-def]
    original = TaskSetFactory()
    task = TaskFactory(task_set=original)
    TaskFactory(task_set=original)
    used_by_a_run(original)
    researcher_client.post(reverse("task_delete", args=[original.pk, task.pk]))
    assert original.tasks.count() == 2
    assert TaskSet.objects.get(parent=original).tasks.count() == 1


def test_editor_saves_code_tasks_with_shards_and_tags(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    form = {
        "prompt": "Write `add(a, b)`.",
        "verifier_kind": "code",
        "tests": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
        "entry_point": "add",
        "verifier_config": '{"timeout_seconds": 5}',
        "domain": "code",
        "tags": "easy, python",
        "shards": "Write a function.\nIt is called add.\nIt returns the sum.",
    }
    response = researcher_client.post(reverse("task_create", args=[task_set.pk]), form)
    task = Task.objects.get()
    assert response["Location"] == reverse("task_edit", args=[task_set.pk, task.pk])
    assert task.reference == {"tests": form["tests"].strip(), "entry_point": "add"}
    assert task.verifier_config == {"timeout_seconds": 5}
    assert task.tags == ["easy", "python"]
    assert task.shards == ["Write a function.", "It is called add.", "It returns the sum."]
    page = researcher_client.get(reverse("task_edit", args=[task_set.pk, task.pk]))
    assert "It is called add." in page.content.decode()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"verifier_kind": "code", "answer": ""}, "code verifier needs the tests; none was given."),
        ({"verifier_config": "{oops"}, "Not valid JSON"),
        ({"verifier_config": "[1, 2]"}, "Expected a JSON object"),
        (
            {"answer": "", "verifier_kind": "exact"},
            "exact verifier needs the answer; none was given.",
        ),
    ],
)
def test_editor_explains_what_is_wrong(researcher_client, change, message) -> None:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    form = {"prompt": "p", "verifier_kind": "numeric", "answer": "1", **change}
    response = researcher_client.post(reverse("task_create", args=[task_set.pk]), form)
    assert message in response.content.decode()
    assert not Task.objects.exists()


def test_markdown_preview_renders_math_and_code_but_never_script(researcher_client) -> None:  # type: ignore[no-untyped-def]
    text = "Find $\\frac{1}{2}$.\n\n```python\nprint(1)\n```\n<script>alert(1)</script>"
    html = researcher_client.post(reverse("markdown_preview"), {"prompt": text}).content.decode()
    assert "<math" in html and "<mfrac>" in html
    assert 'class="codehilite"' in html
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_try_it_runs_the_verifier_in_a_worker_task(
    researcher_client, eager_celery, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory(reference={"answer": "42"})
    url = reverse("probe_create", args=[task.task_set_id, task.pk])
    with django_capture_on_commit_callbacks(execute=True):
        pending = researcher_client.post(url, {"response": "I think \\boxed{41}"})
    assert "Checking" in pending.content.decode()
    probe = VerifierProbe.objects.get()
    assert probe.verdict["correct"] is False and probe.verdict["extracted"] == "41"
    done = researcher_client.get(reverse("probe_detail", args=[probe.pk]))
    assert done.status_code == 286
    assert "✘ wrong" in done.content.decode() and "too_low" in done.content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(url, {"response": "The answer is 42."})
    assert VerifierProbe.objects.latest("pk").verdict["correct"] is True


def test_try_it_reports_a_task_the_verifier_cannot_use(
    researcher_client, eager_celery, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory(reference={"answer": "42"}, verifier_config={"no_such_option": 1})
    url = reverse("probe_create", args=[task.task_set_id, task.pk])
    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(url, {"response": "42"})
    probe = VerifierProbe.objects.get()
    assert probe.verdict is None and "no_such_option" in probe.error
    page = researcher_client.get(reverse("probe_detail", args=[probe.pk])).content.decode()
    assert "could not check this task" in page


@pytest.mark.parametrize(
    ("name", "method"),
    [
        ("task_set_edit", "get"),
        ("task_set_duplicate", "post"),
        ("task_set_delete", "post"),
        ("task_create", "get"),
    ],
)
def test_annotators_cannot_author(annotator_client, name, method) -> None:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    response = getattr(annotator_client, method)(reverse(name, args=[task_set.pk]))
    assert response.status_code == 403
    assert TaskSet.objects.count() == 1


def test_annotators_cannot_edit_tasks_or_probe(annotator_client) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory()
    args = [task.task_set_id, task.pk]
    assert annotator_client.get(reverse("task_edit", args=args)).status_code == 403
    assert annotator_client.post(reverse("task_delete", args=args)).status_code == 403
    assert (
        annotator_client.post(reverse("probe_create", args=args), {"response": "1"}).status_code
        == 403
    )
    assert annotator_client.post(reverse("markdown_preview"), {"prompt": "x"}).status_code == 403
    assert Task.objects.count() == 1 and not VerifierProbe.objects.exists()


def test_browser_line_endings_are_stored_as_plain_newlines(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    form = {
        "prompt": "Line one\r\nLine two",
        "verifier_kind": "code",
        "tests": "def check(candidate):\r\n    assert candidate() == 1\r\n",
        "entry_point": "f",
    }
    researcher_client.post(reverse("task_create", args=[task_set.pk]), form)
    task = Task.objects.get()
    assert task.prompt == "Line one\nLine two"
    assert task.reference["tests"] == "def check(candidate):\n    assert candidate() == 1"


def test_tasks_are_numbered_as_transcripts_number_them(researcher_client) -> None:  # type: ignore[no-untyped-def]
    """Transcripts, dialogue and labelling pages call a task "#<id>"; the set page and the
    editor used its place in the set ("Task 1"), so one task had two numbers."""
    TaskFactory.create_batch(3)  # other sets' tasks: ids and places differ
    task_set = TaskSetFactory()
    task = TaskFactory(task_set=task_set, position=0, external_id="gsm-7")
    assert task.pk != task.position + 1
    page = researcher_client.get(reverse("task_set_detail", args=[task_set.pk])).content.decode()
    editor_url = reverse("task_edit", args=[task_set.pk, task.pk])
    assert f'<a href="{editor_url}">#{task.pk}</a> <span class="muted">gsm-7</span>' in page
    assert f">{task.position + 1}</a>" not in page
    editor = researcher_client.get(editor_url).content.decode()
    assert f"<title>Task #{task.pk} · " in editor
    assert f"<h1>Task #{task.pk} " in editor and "Task 1" not in editor


def test_try_it_shows_the_number_the_numeric_verifier_judged(
    researcher_client, eager_celery, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory(reference={"answer": "40"})
    url = reverse("probe_create", args=[task.task_set_id, task.pk])
    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(url, {"response": "I think it is 40"})
    probe = VerifierProbe.objects.get()
    assert probe.verdict["correct"] is True and probe.verdict["extracted"] == "40"
    page = researcher_client.get(reverse("probe_detail", args=[probe.pk])).content.decode()
    assert "extracted answer: <code>40</code>" in page
    assert "I think it is 40</code>" not in page
