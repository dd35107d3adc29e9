"""Models and protocols through the API, by their pages' forms: registered with the same checks
and messages, retired out of the launch form's choices and restored."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.api_world import post_json, token_client
from webapp.models_registry.models import ModelSpec
from webapp.runs.forms import EvaluationRunForm
from webapp.runs.models import Protocol

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(researcher: Any) -> Client:
    return token_client(researcher)


def test_a_model_is_registered_retired_and_restored(api: Client, tmp_path: Any) -> None:
    answer = post_json(api, "/models", {
        "name": "tiny", "backend": "transformers", "location": str(tmp_path / "nowhere"),
        "generation_params": {"temperature": 0.7},
    })  # fmt: skip
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["backend"] == "transformers" and "not a directory" in body["warnings"][0]
    model = ModelSpec.objects.get(pk=body["id"])
    assert model.generation_params == {"temperature": 0.7}
    assert post_json(api, f"/models/{model.pk}/retire", {}).json()["retired"] is True
    assert model.pk not in {m["id"] for m in api.get("/api/v1/models").json()}
    assert model not in EvaluationRunForm().fields["student"].queryset
    everything = api.get("/api/v1/models", {"include_retired": True}).json()
    assert model.pk in {m["id"] for m in everything}
    restored = post_json(api, f"/models/{model.pk}/retire", {"retired": False}).json()
    assert restored["retired"] is False


def test_a_model_the_form_refuses_is_refused_field_by_field(api: Client) -> None:
    keyed = post_json(api, "/models", {
        "name": "leaky", "backend": "openai", "location": "https://api.example.com/v1",
        "generation_params": {"api_key": "sk-secret-value"},
    })  # fmt: skip
    assert keyed.status_code == 422 and "generation_params" in keyed.json()["problems"]
    assert "sk-secret-value" not in keyed.content.decode()
    scripted = post_json(api, "/models", {"name": "s", "backend": "scripted", "location": "nope"})
    assert scripted.status_code == 422 and "location" in scripted.json()["problems"]
    assert not ModelSpec.objects.filter(name__in=["leaky", "s"]).exists()


def test_a_protocol_is_created_with_the_forms_defaults_and_rules(api: Client) -> None:
    answer = post_json(api, "/protocols", {
        "name": "Three turns", "max_turns": 3, "templates": {"teacher_system": "Be brief."},
    })  # fmt: skip
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["mode"] == "didactic" and body["max_turns"] == 3
    assert body["templates"]["teacher_system"] == "Be brief."
    protocol = Protocol.objects.get(pk=body["id"])
    assert protocol.teacher_sees_reference is True
    too_long = post_json(api, "/protocols", {"name": "Long", "max_turns": 10_000})
    assert too_long.status_code == 422 and "max_turns" in too_long.json()["problems"]
    unknown = post_json(api, "/protocols", {"name": "T", "templates": {"teacher_sytem": "x"}})
    assert unknown.status_code == 422
    assert "teacher_sytem" in unknown.json()["problems"]["templates"][0]
    retired = post_json(api, f"/protocols/{protocol.pk}/retire", {})
    assert retired.json()["retired"] and protocol.pk not in {
        p["id"] for p in api.get("/api/v1/protocols").json()
    }
