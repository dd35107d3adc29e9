"""The API against the pages' rules: every endpoint for a researcher's token, an annotator's,
no credentials and a revoked token; the transcript list's filter and scope; a run's figures
equal to its metrics CSV; session requests need their CSRF token to write."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.api_world import build_world
from tests.transcript_builders import attempt, make_run, store
from webapp.dialogues.models import Dialogue

pytestmark = pytest.mark.django_db


@pytest.fixture
def world() -> dict[str, Any]:
    return build_world()


def call(world: dict[str, Any], who: str, method: str, path: str, **params: Any) -> Any:
    headers = {"Authorization": f"Bearer {world[who]}"} if world[who] else {}
    client = Client()
    if method == "post" and path.endswith("/import"):  # a file upload: a multipart form
        return client.post(f"/api/v1{path}", params, headers=headers)
    if method == "post":
        body = json.dumps(params)
        return client.post(f"/api/v1{path}", body, "application/json", headers=headers)
    return client.get(f"/api/v1{path}", params, headers=headers)


# Every operation of the schema -> its status for a researcher's token, an annotator's, a revoked
# token and none. A POST sends an empty body: a researcher is then told what is missing (422),
# everyone else is refused before anything is read. A new operation fails
# test_every_operation_is_in_the_matrix until it is listed here.
EXPECTED = {
    "GET /me": (200, 200, 401, 401),
    "GET /runs": (200, 403, 401, 401),
    "POST /runs/evaluations": (422, 403, 401, 401),
    "GET /runs/training-settings": (200, 403, 401, 401),
    "POST /runs/training": (422, 403, 401, 401),
    "POST /runs/online-training": (422, 403, 401, 401),
    "GET /runs/{run_id}": (200, 403, 401, 401),
    "GET /runs/{run_id}/figures": (200, 403, 401, 401),
    "POST /runs/{run_id}/cancel": (200, 403, 401, 401),
    "GET /dialogues": (200, 200, 401, 401),
    "GET /dialogues/export.jsonl": (200, 403, 401, 401),  # the export page is the researchers'
    "GET /dialogues/{dialogue_id}": (200, 200, 401, 401),  # the queued dialogue
    "GET /task-sets": (200, 403, 401, 401),
    "POST /task-sets": (422, 403, 401, 401),
    "GET /task-sets/families": (200, 403, 401, 401),
    "POST /task-sets/generate": (422, 403, 401, 401),
    "POST /task-sets/import": (422, 403, 401, 401),
    "GET /task-sets/imports/{import_id}": (404, 403, 401, 401),  # none was made
    "GET /task-sets/{task_set_id}": (200, 403, 401, 401),
    "GET /task-sets/{task_set_id}/tasks": (200, 403, 401, 401),
    "POST /task-sets/{task_set_id}/tasks": (422, 403, 401, 401),
    "GET /labels/queues": (200, 200, 401, 401),
    "GET /labels/queues/{queue_id}/items": (200, 200, 401, 401),
    "POST /labels/items/{item_id}/answers": (404, 200, 401, 401),  # the annotator's item
    "POST /labels/items/{item_id}/skip": (422, 422, 401, 401),  # a reason is required, first
    "GET /labels": (200, 200, 401, 401),
    "GET /experiments/compare": (422, 403, 401, 401),  # which runs is required
    "GET /experiments/transfer": (200, 403, 401, 401),
    "GET /experiments/lost-in-conversation": (200, 403, 401, 401),
    "GET /experiments/lost-in-conversation/{experiment_id}": (404, 403, 401, 401),
    "GET /models": (200, 403, 401, 401),
    "POST /models": (422, 403, 401, 401),
    "POST /models/{model_id}/retire": (200, 403, 401, 401),
    "GET /protocols": (200, 403, 401, 401),
    "POST /protocols": (422, 403, 401, 401),
    "POST /protocols/{protocol_id}/retire": (200, 403, 401, 401),
}
MISSING = 10**6


def test_every_operation_is_in_the_matrix(client: Client) -> None:
    schema = client.get("/api/v1/openapi.json").json()
    operations = {
        f"{method.upper()} {path.removeprefix('/api/v1')}"
        for path, methods in schema["paths"].items()
        for method in methods
    }
    assert operations == set(EXPECTED)


@pytest.mark.parametrize("operation", list(EXPECTED))
def test_the_permission_matrix(world: dict[str, Any], operation: str) -> None:
    first = world["first"]
    ids = {
        "run_id": first.pk, "dialogue_id": world["queued"].pk, "import_id": MISSING,
        "task_set_id": first.task_set_id, "queue_id": world["queue"].pk,
        "item_id": world["item"].pk, "experiment_id": MISSING, "model_id": first.student_id,
        "protocol_id": first.protocol_id,
    }  # fmt: skip
    method, path = operation.split(" ")
    for who, expected in zip(
        ("researcher", "annotator", "revoked", "anonymous"), EXPECTED[operation], strict=True
    ):
        response = call(world, who, method.lower(), path.format(**ids))
        assert response.status_code == expected, (who, response.content)
        if expected != 200:
            assert "detail" in response.json()


def test_an_annotator_reads_only_the_dialogues_her_queues_hold(world: dict[str, Any]) -> None:
    assert call(world, "annotator", "get", f"/dialogues/{world['hidden'].pk}").status_code == 404
    assert call(world, "researcher", "get", f"/dialogues/{world['hidden'].pk}").status_code == 200


def test_an_annotator_lists_only_her_queues_dialogues(world: dict[str, Any]) -> None:
    listed = call(world, "annotator", "get", "/dialogues").json()
    assert [item["id"] for item in listed["items"]] == [world["queued"].pk]
    everything = call(world, "researcher", "get", "/dialogues").json()
    assert everything["count"] == Dialogue.objects.count() == 6


def test_the_list_takes_the_pages_filter_syntax_and_names_what_it_ignored(
    world: dict[str, Any],
) -> None:
    second = world["second"]
    listed = call(
        world, "researcher", "get", "/dialogues", run=second.pk, first_correct="2+", turns="x"
    ).json()
    assert {item["run_id"] for item in listed["items"]} == {second.pk}
    assert listed["count"] == 3 and listed["count_is_exact"]
    assert all(item["first_correct_turn"] == 2 for item in listed["items"])
    assert len(listed["ignored"]) == 1 and listed["ignored"][0].startswith("Ignored turns='x'")
    paged = call(world, "researcher", "get", "/dialogues", per_page=2, page=2).json()
    assert paged["page"] == 2 and len(paged["items"]) == 2 and paged["has_next"]


def walk(world: dict[str, Any], who: str, on_page=lambda page: None, **params: Any) -> list[int]:  # type: ignore[no-untyped-def]
    """Every id a walk of the list (``after=``) reads, page after page, in order;
    ``on_page(body)`` sees each page before the next is asked for."""
    seen: list[int] = []
    after = 0
    while after is not None:
        body = call(world, who, "get", "/dialogues", after=after, **params).json()
        seen += [item["id"] for item in body["items"]]
        on_page(body)
        after = body["next_after"]
    return seen


def test_a_walk_reads_every_transcript_once_while_a_newer_run_adds_more(
    world: dict[str, Any],
) -> None:
    # Numbered pages list the newest run first: a dialogue stored while they are read shifts
    # every row after it by one, so page 2 would repeat page 1's last row. A walk does not.
    newer = make_run("newer", world["first"].task_set)
    counts: list[int] = []

    def store_one_after_the_first_page(body: dict[str, Any]) -> None:
        counts.append(body["count"])
        assert body["page"] == 1 and body["per_page"] == 4 and body["count_is_exact"]
        assert body["has_next"] == (body["next_after"] is not None) and not body["ignored"]
        if len(counts) == 1:
            store(newer, world["first"].task_set.tasks.first().pk, 0, "a_first", [
                attempt("3", "3", True),
            ])  # fmt: skip

    seen = walk(world, "researcher", store_one_after_the_first_page, per_page=4)
    assert seen == sorted(Dialogue.objects.values_list("pk", flat=True)) and len(seen) == 7
    assert counts == [6, 7]
    assert walk(world, "researcher", run=world["second"].pk, per_page=2) == sorted(
        world["second"].dialogues.values_list("pk", flat=True)
    )
    assert walk(world, "annotator") == [world["queued"].pk]


def test_a_walk_says_it_ignores_the_page_and_the_sort(world: dict[str, Any]) -> None:
    body = call(world, "researcher", "get", "/dialogues", after=0, page=2, sort="-created").json()
    assert [item["id"] for item in body["items"]] == sorted(
        Dialogue.objects.values_list("pk", flat=True)
    )
    assert [note.split(":")[0] for note in body["ignored"]] == [
        "Ignored page='2'", "Ignored sort='-created'"
    ]  # fmt: skip
    assert call(world, "researcher", "get", "/dialogues", after=-1).status_code == 422
    numbered = call(world, "researcher", "get", "/dialogues").json()
    assert numbered["next_after"] is None and numbered["has_next"] is False


@pytest.mark.parametrize(
    ("path", "after"),
    [
        ("/runs", "after"),
        ("/task-sets", "after"),
        ("/labels", "after"),
        ("/tasks", "after_position"),
    ],
)
def test_every_list_walks_from_where_it_was_left_and_refuses_an_offset_with_it(
    world: dict[str, Any], path: str, after: str
) -> None:
    from tests.factories import TaskSetFactory, UserFactory
    from webapp.annotations.models import Annotation, LabelQuestion
    from webapp.annotations.selectors import given_labels
    from webapp.runs.models import Run
    from webapp.tasks.models import TaskSet

    TaskSetFactory()  # the world has one; a walk of one row would show little
    question = LabelQuestion.objects.create(
        schema=world["queue"].schema, key="notes", text="Notes", kind="free_text",
        target="dialogue",
    )  # fmt: skip
    for dialogue in world["first"].dialogues.all()[:2]:
        Annotation.objects.create(
            question=question, dialogue=dialogue, author=UserFactory(), value="clear"
        )
    key, start = "id", 0
    if path == "/runs":
        keys = Run.objects.values_list("pk", flat=True)
    elif path == "/task-sets":
        keys = TaskSet.objects.values_list("pk", flat=True)
    elif path == "/labels":
        keys = given_labels().values_list("pk", flat=True)
    else:
        task_set = world["first"].task_set
        path = f"/task-sets/{task_set.pk}/tasks"
        keys = task_set.tasks.values_list("position", flat=True)
        key, start = "position", -1
    walked = sorted(keys)
    assert len(walked) >= 2, f"the world needs two rows of {path} to walk"
    first = call(world, "researcher", "get", path, **{after: start, "limit": 1}).json()
    rest = call(world, "researcher", "get", path, **{after: first[0][key]}).json()
    assert [item[key] for item in first + rest] == walked
    refused = call(world, "researcher", "get", path, **{after: start, "offset": 1})
    assert refused.status_code == 422
    assert "offset" in refused.json()["problems"]


def test_a_dialogue_comes_with_its_turns(world: dict[str, Any]) -> None:
    hidden = world["hidden"]
    body = call(world, "researcher", "get", f"/dialogues/{hidden.pk}").json()
    assert body["num_turns"] == 2 and [t["role"] for t in body["turns"]] == [
        "student", "teacher", "student"
    ]  # fmt: skip
    assert body["turns"][0]["extracted_answer"] == "4" and body["turns"][2]["is_correct"]


def test_figures_are_the_rows_of_the_runs_metrics_csv(
    world: dict[str, Any], researcher_client: Any
) -> None:
    run = world["second"]
    rows = call(world, "researcher", "get", f"/runs/{run.pk}/figures").json()["rows"]
    downloaded = researcher_client.get(reverse("run_metrics_csv", args=[run.pk]))
    table = list(csv.DictReader(io.StringIO(downloaded.content.decode())))
    assert len(rows) == len(table)
    for row, line in zip(rows, table, strict=True):
        assert row["metric"] == line["metric"]
        for column in ("value", "low", "high"):
            if line[column] not in ("", None) and row[column] is not None:
                assert float(row[column]) == pytest.approx(float(line[column]), abs=1e-4)
    after = {row["k"]: row["value"] for row in rows if row["metric"] == "accuracy_after_turn"}
    assert after[1] == 0.0 and after[max(after)] == 1.0


def test_a_session_needs_its_csrf_token_to_write(world: dict[str, Any]) -> None:
    from webapp.accounts.models import User

    client = Client(enforce_csrf_checks=True)
    client.force_login(User.objects.get(role="researcher"))
    path = f"/api/v1/runs/{world['first'].pk}/cancel"
    assert client.get("/api/v1/me").status_code == 200  # reading needs no token
    assert client.post(path).status_code == 403
    client.get(reverse("api_tokens"))  # sets the CSRF cookie, as any page does
    token = client.cookies["csrftoken"].value
    assert client.post(path, headers={"X-CSRFToken": token}).status_code == 200


def test_the_schema_and_its_documentation_page_are_served(client: Client) -> None:
    schema = client.get("/api/v1/openapi.json").json()
    assert "/api/v1/runs/{run_id}/figures" in schema["paths"]
    assert "bearer" in str(schema["components"]["securitySchemes"]).lower()
    assert client.get("/api/v1/docs").status_code in (200, 401)


def test_requests_past_the_rate_are_refused_until_it_allows_more(
    world: dict[str, Any], monkeypatch: Any
) -> None:
    from django.core.cache import cache

    from webapp.api.api import api

    (throttle,) = api.throttle  # type: ignore[misc]
    monkeypatch.setattr(throttle, "num_requests", 2)  # 600 a minute in use
    cache.clear()
    statuses = [call(world, "researcher", "get", "/me").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    assert call(world, "annotator", "get", "/me").status_code == 200  # each person has a rate
    cache.clear()


def test_the_export_streams_the_export_pages_records_and_refuses_a_bad_filter(
    world: dict[str, Any],
) -> None:
    from webapp.transcripts import exporting

    second = world["second"]
    response = call(world, "researcher", "get", "/dialogues/export.jsonl", run=second.pk)
    assert response.streaming and response["Content-Type"].startswith("application/x-ndjson")
    records = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    filters = exporting.filters_from_query(f"run={second.pk}")
    assert records == list(exporting.dialogue_records(filters=filters))
    assert all("reference" not in record["task"] for record in records)
    private = call(
        world, "researcher", "get", "/dialogues/export.jsonl", run=second.pk, include_private=True
    )
    assert all("reference" in json.loads(line)["task"] for line in private.streaming_content)
    for bad in ({"turns": "many"}, {"outcom": "solved"}):
        refused = call(world, "researcher", "get", "/dialogues/export.jsonl", **bad)
        assert refused.status_code == 422 and refused.json()["ignored"]
