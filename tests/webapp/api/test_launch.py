"""Launching an evaluation through the API: the launch form's checks, refused field by field,
and the same frozen run as the page makes; the lists a launch picks its ids from."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from tests.factories import (
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TaskSetFactory,
    TeacherFactory,
)
from webapp.api import tokens
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db


def post(token: str, path: str, body: dict[str, Any]) -> Any:
    return Client().post(
        f"/api/v1{path}",
        json.dumps(body),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )


def get(token: str, path: str) -> Any:
    return Client().get(f"/api/v1{path}", headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def launch(researcher: Any) -> dict[str, Any]:
    task_set = TaskSetFactory()
    TaskFactory.create_batch(4, task_set=task_set)
    return {
        "task_set": task_set.pk,
        "protocol": ProtocolFactory().pk,
        "student": StudentFactory().pk,
        "teacher": TeacherFactory().pk,
        "samples_per_task": 3,
        "seed": 7,
    }


def token(user: Any) -> str:
    """A fresh token of ``user``'s."""
    return tokens.issue_token(user=user, name=f"t{user.api_tokens.count()}")[1]


def test_a_launch_queues_the_run_the_page_would(
    researcher: Any, launch: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        response = post(token(researcher), "/runs/evaluations", launch)
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == Run.Status.QUEUED and run.progress_total == 12
    assert run.config["protocol"]["max_turns"] == 5 and run.config["seed"] == 7
    assert run.created_by == researcher
    assert len(callbacks) == 1, "dispatched after the commit, as from the page"


def test_a_refusal_names_each_field_and_launches_nothing(
    researcher: Any, launch: dict[str, Any]
) -> None:
    response = post(
        token(researcher),
        "/runs/evaluations",
        {**launch, "teacher": None, "samples_per_task": 0, "student": 999999},
    )
    assert response.status_code == 422
    problems = response.json()["problems"]
    assert set(problems) >= {"student", "samples_per_task"}
    assert not Run.objects.exists()
    missing = post(token(researcher), "/runs/evaluations", {"protocol": launch["protocol"]})
    assert missing.status_code == 422  # the schema's own check: task_set and student required


def test_the_protocol_decides_which_roles_are_needed(
    researcher: Any, launch: dict[str, Any]
) -> None:
    response = post(token(researcher), "/runs/evaluations", {**launch, "teacher": None})
    assert response.status_code == 422
    assert "teacher" in response.json()["problems"]


def test_an_annotator_may_not_launch(annotator: Any, launch: dict[str, Any]) -> None:
    assert post(token(annotator), "/runs/evaluations", launch).status_code == 403
    assert get(token(annotator), "/task-sets").status_code == 403
    assert not Run.objects.exists()


def test_the_lists_a_launch_picks_from(researcher: Any, launch: dict[str, Any]) -> None:
    from webapp.models_registry.models import ModelSpec

    retired = StudentFactory(name="old one")
    ModelSpec.objects.filter(pk=retired.pk).update(retired=True)
    mine = token(researcher)
    sets = get(mine, "/task-sets").json()
    assert [s["id"] for s in sets] == [launch["task_set"]] and sets[0]["task_count"] == 4
    names = {m["name"] for m in get(mine, "/models").json()}
    assert "old one" not in names and len(names) == 2
    assert [p["id"] for p in get(mine, "/protocols").json()] == [launch["protocol"]]
