"""JSON typed into a form: every field that reads it says at which line and column it fails."""

from __future__ import annotations

import json

import pytest
from django import forms

from webapp.core.json_input import JSONInputField, invalid_json_message, parse_json_input
from webapp.models_registry.forms import ModelSpecForm
from webapp.tasks.forms import TaskForm

BROKEN = '{\n  "a": 1,\n  "b": 2\n  "c": 3\n}'  # a comma missing at the end of line 3
WHERE = "Not valid JSON at line 4, column 3: Expecting ',' delimiter."


def test_the_message_names_the_line_and_the_column() -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        json.loads(BROKEN)
    assert invalid_json_message(raised.value) == WHERE
    with pytest.raises(forms.ValidationError) as refused:
        parse_json_input(BROKEN)
    assert refused.value.messages == [WHERE]
    assert parse_json_input('{"a": [1]}') == {"a": [1]}


def test_the_field_reads_json_and_says_where_it_is_not() -> None:
    field = JSONInputField(required=False)
    assert field.clean('{"x": 1}') == {"x": 1}
    assert field.clean("") is None
    with pytest.raises(forms.ValidationError) as refused:
        field.clean(BROKEN)
    assert refused.value.messages == [WHERE]


@pytest.mark.django_db
def test_the_model_form_says_where_its_parameters_stop_being_json() -> None:
    form = ModelSpecForm(
        {"name": "m", "backend": "scripted", "location": "feedback-teacher",
         "generation_params": BROKEN}
    )  # fmt: skip
    assert not form.is_valid()
    assert form.errors["generation_params"] == [WHERE]


@pytest.mark.parametrize("field", ["verifier_config", "reference_extra"])
def test_the_task_editor_says_where_its_json_stops_being_json(field: str) -> None:
    form = TaskForm({"prompt": "p", "verifier_kind": "numeric", "answer": "1", field: BROKEN})
    assert not form.is_valid()
    assert form.errors[field] == [WHERE]
