"""A model may name only the environment variables the operator allowed for its key: the form,
the services and run launch refuse any other, stating the rule, and a row stored before the rule
shows why it cannot be used (models_gpu.spec.credentials)."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from models_gpu.spec.credentials import KEY_ENV_ALLOWED_VARIABLE, KEY_ENV_PREFIX_VARIABLE
from models_gpu.spec.run import RunConfigError
from tests.factories import ProtocolFactory, TaskFactory
from webapp.models_registry.forms import ModelSpecForm
from webapp.models_registry.models import ModelSpec
from webapp.models_registry.services import model_spec_create, model_spec_update
from webapp.runs.services import evaluation_config

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:8000/v1"


@pytest.fixture(autouse=True)
def default_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped rule, whatever the environment running the tests says."""
    monkeypatch.delenv(KEY_ENV_PREFIX_VARIABLE, raising=False)
    monkeypatch.delenv(KEY_ENV_ALLOWED_VARIABLE, raising=False)


def model_form(key_env: str) -> ModelSpecForm:
    params = {"model": "m", "api_key_env": key_env}
    return ModelSpecForm(
        {"name": "hosted", "backend": "openai", "location": URL,
         "generation_params": json.dumps(params)}
    )  # fmt: skip


def states_the_rule(message: str) -> bool:
    return "starting with DIALAB_MODEL_KEY_" in message and "one of OPENAI_API_KEY" in message


@pytest.mark.parametrize("name", ["SECRET_KEY", "POSTGRES_PASSWORD", "HF_TOKEN", "MY_LLM"])
def test_the_form_refuses_a_variable_the_operator_did_not_allow(name: str) -> None:
    form = model_form(name)
    assert not form.is_valid()
    message = " ".join(form.errors["generation_params"])
    assert states_the_rule(message), message
    assert name not in message


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL"])
def test_the_services_refuse_it_too(name: str) -> None:
    params = {"model": "m", "api_key_env": name}
    with pytest.raises(ValidationError) as refused:
        model_spec_create(name="hosted", backend="openai", location=URL, generation_params=params)
    assert states_the_rule(" ".join(refused.value.message_dict["generation_params"]))
    assert not ModelSpec.objects.exists()
    model = model_spec_create(
        name="ok", backend="openai", location=URL, generation_params={"model": "m"}
    )
    with pytest.raises(ValidationError):
        model_spec_update(
            model=model, name="ok", backend="openai", location=URL, generation_params=params
        )


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "DIALAB_MODEL_KEY_ACME"])
def test_the_default_name_and_the_prefix_are_accepted(name: str) -> None:
    form = model_form(name)
    assert form.is_valid(), form.errors


def test_the_operator_can_allow_other_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV_ALLOWED_VARIABLE, "OPENAI_API_KEY,MY_LLM")
    assert model_form("MY_LLM").is_valid()
    assert not model_form("SECRET_KEY").is_valid()


def test_the_models_page_states_the_rule(researcher_client) -> None:  # type: ignore[no-untyped-def]
    page = researcher_client.get(reverse("model_list")).content.decode()
    assert 'id="key-env-rule"' in page and states_the_rule(page)


def legacy_model() -> ModelSpec:
    # Written straight through the ORM, as a row saved before the rule.
    return ModelSpec.objects.create(
        name="legacy", backend="openai", location=URL,
        generation_params={"model": "m", "api_key_env": "SECRET_KEY"},
    )  # fmt: skip


def test_an_old_row_shows_why_it_cannot_be_used(researcher_client) -> None:  # type: ignore[no-untyped-def]
    model = legacy_model()
    ModelSpec.objects.create(name="fine", backend="scripted", location="arithmetic-student")
    page = researcher_client.get(reverse("model_list")).content.decode()
    row = page.split(f'id="model-{model.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "Cannot be used" in row and states_the_rule(row)
    assert page.count("Cannot be used") == 1  # only that row


def test_an_old_row_cannot_be_launched() -> None:
    task = TaskFactory()
    with pytest.raises(RunConfigError) as refused:
        evaluation_config(
            task_set=task.task_set, protocol=ProtocolFactory(), student=legacy_model()
        )
    assert states_the_rule(str(refused.value))
