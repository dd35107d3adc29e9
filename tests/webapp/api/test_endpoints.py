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
from webapp.dialogues.models import Dialogue

pytestmark = pytest.mark.django_db


@pytest.fixture
def world() -> dict[str, Any]:
    return build_world()


def call(world: dict[str, Any], who: str, method: str, path: str, **params: Any) -> Any:
    headers = {"Authorization": f"Bearer {world[who]}"} if world[who] else {}
    client = Client()
    send = client.post if method == "post" else client.get
    return send(f"/api/v1{path}", params, headers=headers)


ENDPOINTS = [
    ("get", "/me"),
    ("get", "/runs"),
    ("get", "/runs/{first}"),
    ("get", "/runs/{first}/figures"),
    ("post", "/runs/{first}/cancel"),
    ("get", "/dialogues"),
    ("get", "/dialogues/export.jsonl"),
    ("get", "/dialogues/{queued}"),
    ("get", "/dialogues/{hidden}"),
]
EXPECTED = {  # endpoint -> status for researcher, annotator, revoked, anonymous
    "/me": (200, 200, 401, 401),
    "/runs": (200, 403, 401, 401),
    "/runs/{first}": (200, 403, 401, 401),
    "/runs/{first}/figures": (200, 403, 401, 401),
    "/runs/{first}/cancel": (200, 403, 401, 401),
    "/dialogues": (200, 200, 401, 401),
    "/dialogues/export.jsonl": (200, 403, 401, 401),  # the export page is the researchers'
    "/dialogues/{queued}": (200, 200, 401, 401),
    "/dialogues/{hidden}": (200, 404, 401, 401),  # not in her queues: as if it did not exist
}


@pytest.mark.parametrize(("method", "path"), ENDPOINTS, ids=[path for _m, path in ENDPOINTS])
def test_the_permission_matrix(world: dict[str, Any], method: str, path: str) -> None:
    ids = {"first": world["first"].pk, "queued": world["queued"].pk, "hidden": world["hidden"].pk}
    for who, expected in zip(
        ("researcher", "annotator", "revoked", "anonymous"), EXPECTED[path], strict=True
    ):
        response = call(world, who, method, path.format(**ids))
        assert response.status_code == expected, (who, response.content)
        if expected != 200:
            assert "detail" in response.json()


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
    from webapp.dialogues import exporting

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
