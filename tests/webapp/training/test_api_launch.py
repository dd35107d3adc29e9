"""Training launched through the API: the launch forms' checks and defaults, the same frozen
configuration as a launch from the page, and refusals named by field."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from models_gpu.spec.training_run import TrainingRunConfig
from tests.api_world import post_json, token_client
from tests.webapp.training.launch_form import form_data
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(researcher: Any) -> Client:
    return token_client(researcher)


def held_out(world: dict[str, Any]) -> dict[str, Any]:
    return {
        "base_model": world["base"].pk, "eval_task_set": world["held_out"].pk,
        "eval_protocol": world["protocol"].pk, "eval_teacher": world["teacher"].pk,
    }  # fmt: skip


def test_offline_training_freezes_what_the_page_would(
    api: Client, researcher_client: Any, world: dict[str, Any]
) -> None:
    settings = {"method": "sft", "max_steps": 2, "device": "cpu", "precision": "float32"}
    answer = post_json(api, "/runs/training", {
        **held_out(world), "selection": "outcome=solved", "name": "api", "settings": settings,
    })  # fmt: skip
    assert answer.status_code == 201, answer.content
    from_api = Run.objects.get(pk=answer.json()["id"])
    page = researcher_client.post(reverse("training_create"), form_data(world, name="page"))
    assert page.status_code == 302
    from_page = Run.objects.exclude(pk=from_api.pk).get(kind=Run.Kind.TRAIN)
    api_config = TrainingRunConfig.from_json(from_api.config)
    page_config = TrainingRunConfig.from_json(from_page.config)
    assert api_config.evaluation == page_config.evaluation
    assert api_config.training.max_steps == 2 and api_config.training.method == "sft"
    assert api_config.dataset and api_config.dataset.dialogues == 2  # the two solved ones


def test_offline_training_is_refused_by_field(api: Client, world: dict[str, Any]) -> None:
    empty = post_json(api, "/runs/training", {**held_out(world), "selection": "turns=9"})
    assert empty.status_code == 422 and "selection" in empty.json()["problems"]
    bad = post_json(api, "/runs/training", {
        **held_out(world), "selection": "outcome=solved", "settings": {"learning_rate": 0},
    })  # fmt: skip
    assert bad.status_code == 422 and "learning_rate" in bad.json()["problems"]
    typo = post_json(api, "/runs/training", {
        **held_out(world), "selection": "outcome=solved", "settings": {"learnin_rate": 1},
    })  # fmt: skip
    assert typo.status_code == 422 and "learnin_rate" in typo.json()["problems"]["settings"][0]
    assert not Run.objects.filter(kind=Run.Kind.TRAIN).exists()


def test_online_training_launches_the_run_and_its_single_turn_sibling(
    api: Client, world: dict[str, Any]
) -> None:
    body = {
        **held_out(world), "task_set": world["task_set"].pk, "protocol": world["protocol"].pk,
        "teacher": world["teacher"].pk,
        "settings": {"group_size": 4, "horizon": 2, "max_steps": 2, "device": "cpu"},
    }  # fmt: skip
    refused = post_json(api, "/runs/online-training", {**body, "teacher": None})
    assert refused.status_code == 422
    assert "needs a teacher" in refused.json()["problems"]["teacher"][0]
    answer = post_json(api, "/runs/online-training", body)
    assert answer.status_code == 201, answer.content
    run, sibling = Run.objects.filter(kind=Run.Kind.TRAIN).order_by("pk")
    assert answer.json()["id"] == run.pk
    config = TrainingRunConfig.from_json(run.config)
    assert config.online and (config.online.group_size, config.online.horizon) == (4, 2)
    assert config.training.learning_rate == 1e-4  # the online form's own default
    sibling_config = TrainingRunConfig.from_json(sibling.config)
    assert sibling_config.online and sibling_config.online.horizon == 1


def test_the_settings_are_listed_with_the_forms_defaults(api: Client) -> None:
    listed = api.get("/api/v1/runs/training-settings").json()
    offline = {s["name"]: s for s in listed["offline"]}
    online = {s["name"]: s for s in listed["online"]}
    assert "method" in offline and "method" not in online and "group_size" in online
    assert online["learning_rate"]["default"] == 1e-4 != offline["learning_rate"]["default"]
