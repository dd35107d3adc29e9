from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import TaskFactory, TaskSetFactory
from webapp.tasks.models import Task, TaskSet

pytestmark = pytest.mark.django_db


def test_researcher_creates_a_task_set_and_adds_tasks_in_order(researcher_client) -> None:  # type: ignore[no-untyped-def]
    response = researcher_client.post(
        reverse("task_set_create"), {"name": "Sums", "description": "small sums"}
    )
    task_set = TaskSet.objects.get(name="Sums")
    assert response["Location"] == reverse("task_set_detail", args=[task_set.pk])

    url = reverse("task_set_detail", args=[task_set.pk])
    for prompt, answer in [("What is 1 + 1?", "2"), ("What is 3/4 as a fraction?", "3/4")]:
        form = {"prompt": prompt, "answer": f" {answer} ", "verifier_kind": "numeric"}
        response = researcher_client.post(url, {**form, "domain": "arithmetic"})
        assert response.status_code == 200
    tasks = list(task_set.tasks.order_by("position"))
    assert [t.position for t in tasks] == [0, 1]
    assert tasks[1].reference == {"answer": "3/4"}
    assert "What is 3/4 as a fraction?" in response.content.decode()


def test_numeric_task_with_a_non_number_answer_is_refused(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    response = researcher_client.post(
        reverse("task_set_detail", args=[task_set.pk]),
        {"prompt": "Half of ten?", "answer": "five", "verifier_kind": "numeric"},
    )
    assert "The numeric verifier needs a number" in response.content.decode()
    assert not Task.objects.exists()


def test_htmx_add_returns_only_the_editor_fragment(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    response = researcher_client.post(
        reverse("task_set_detail", args=[task_set.pk]),
        {"prompt": "What is <b>2</b>?", "answer": "2", "verifier_kind": "exact"},
        headers={"HX-Request": "true"},
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="task-editor"')
    assert "<html" not in html
    assert "&lt;b&gt;2&lt;/b&gt;" in html, "prompts are escaped"


def test_task_list_is_paginated(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    TaskFactory.create_batch(55, task_set=task_set)
    url = reverse("task_set_detail", args=[task_set.pk])
    first = researcher_client.get(url).content.decode()
    assert "Page 1 of 2" in first and "55 in all" in first
    assert len(researcher_client.get(url, {"page": 2}).context["page"].object_list) == 5
