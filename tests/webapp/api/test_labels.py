"""Labels through the API, by the labelling page's rules: an annotator's queues and items, her
answers checked and saved as the page saves them (all or none), a submission refused while a
required question is unanswered, nobody answering somebody else's item; researchers read the
labels given."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api_world import post_json, token_client
from tests.factories import TaskFactory, TaskSetFactory, UserFactory
from tests.transcript_builders import attempt, feedback, make_run, store
from webapp.annotations import services
from webapp.annotations.models import Annotation, LabelSchema, QueueAssignment

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue(researcher: Any, annotator: Any) -> Any:
    task_set = TaskSetFactory()
    run = make_run("run", task_set)
    store(run, TaskFactory(task_set=task_set).pk, 0, "a_late", [
        attempt("It is 4.", "4", False), feedback("Check the carry."),
        attempt("It is 3.", "3", True),
    ])  # fmt: skip
    return services.queue_create(
        name="feedback", schema=LabelSchema.objects.get(name="Feedback quality"),
        filter_query="", dialogue_ids=list(run.dialogues.values_list("pk", flat=True)),
        annotators=[annotator], annotators_per_item=1, created_by=researcher,
    )  # fmt: skip


COMPLETE = [
    {"question": "helpfulness", "turn": 1, "value": 4},
    {"question": "correct", "turn": 1, "value": True},
    {"question": "reveals_answer", "turn": 1, "value": False},
    {"question": "feedback_kind", "turn": 1, "value": "hint"},
]


def test_an_annotator_answers_and_submits_her_item(
    queue: Any, annotator: Any, researcher: Any
) -> None:
    api = token_client(annotator)
    (listed,) = api.get("/api/v1/labels/queues").json()
    assert listed["id"] == queue.pk and listed["my_total"] == 1
    assert [q["key"] for q in listed["questions"]][:2] == ["helpfulness", "correct"]
    (item,) = api.get(f"/api/v1/labels/queues/{queue.pk}/items").json()
    assert item["status"] == "pending"
    partial = post_json(api, f"/labels/items/{item['id']}/answers", {
        "answers": COMPLETE[:1], "submit": True,
    })  # fmt: skip
    assert partial.status_code == 422 and "correct" in partial.json()["problems"]["submit"][0]
    assert not Annotation.objects.exists()  # the refused submission kept nothing
    done = post_json(api, f"/labels/items/{item['id']}/answers", {
        "answers": COMPLETE, "submit": True, "nonce": "abc",
    })  # fmt: skip
    assert done.status_code == 200, done.content
    assert done.json()["status"] == "done"
    labels = token_client(researcher).get("/api/v1/labels", {"queue": queue.pk}).json()
    given = {(label["question"], label["turn"]): label["value"] for label in labels}
    assert given == {
        ("helpfulness", 1): 4, ("correct", 1): True, ("reveals_answer", 1): False,
        ("feedback_kind", 1): "hint",
    }  # fmt: skip
    assert {label["is_draft"] for label in labels} == {False}
    own = api.get("/api/v1/labels").json()
    assert {label["author"] for label in own} == {annotator.username}


def test_answers_the_page_would_refuse_are_refused_all_together(queue: Any, annotator: Any) -> None:
    api = token_client(annotator)
    item = QueueAssignment.objects.get()
    refused = post_json(api, f"/labels/items/{item.pk}/answers", {"answers": [
        {"question": "helpfulness", "turn": 1, "value": 9},
        {"question": "helpfulness", "turn": 0, "value": 3},  # a student turn
        {"question": "helpfulnes", "turn": 1, "value": 3},
        {"question": "feedback_kind", "turn": 7, "value": "hint"},
        {"question": "correct", "turn": 1, "value": True},  # fine, but not saved alone
    ]})  # fmt: skip
    assert refused.status_code == 422
    problems = refused.json()["problems"]
    assert "between 1 and 5" in problems["answers.0"][0]
    assert "teacher turns" in problems["answers.1"][0]
    assert "No question 'helpfulnes'" in problems["answers.2"][0]
    assert "no turn 7" in problems["answers.3"][0]
    assert "answers.4" not in problems and not Annotation.objects.exists()
    drafted = post_json(api, f"/labels/items/{item.pk}/answers", {"answers": COMPLETE[:1]})
    assert drafted.status_code == 200 and Annotation.objects.get().is_draft


def test_nobody_answers_somebody_elses_item(queue: Any, researcher: Any) -> None:
    item = QueueAssignment.objects.get()
    other = token_client(UserFactory(role="annotator"))
    assert other.get("/api/v1/labels/queues").json() == []
    assert other.get(f"/api/v1/labels/queues/{queue.pk}/items").status_code == 404
    answer = post_json(other, f"/labels/items/{item.pk}/answers", {"answers": COMPLETE})
    assert answer.status_code == 404
    by_researcher = post_json(token_client(researcher), f"/labels/items/{item.pk}/answers", {})
    assert by_researcher.status_code == 404  # a researcher does not answer an annotator's item
    assert token_client(researcher).get(f"/api/v1/labels/queues/{queue.pk}/items").json() == []


def test_an_item_is_skipped_with_a_reason(queue: Any, annotator: Any) -> None:
    api = token_client(annotator)
    item = QueueAssignment.objects.get()
    assert post_json(api, f"/labels/items/{item.pk}/skip", {"reason": " "}).status_code == 422
    skipped = post_json(api, f"/labels/items/{item.pk}/skip", {"reason": "Not English."})
    assert skipped.json()["status"] == "skipped" and skipped.json()["skip_reason"] == "Not English."
