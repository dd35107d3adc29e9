"""Protocols: every mode, the teacher's visibility, self-correction style, leak regeneration,
judges, and prompt templates pre-filled with the engine's defaults and frozen at launch."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from models_gpu.spec.run import RunConfig
from models_gpu.spec.templates import DEFAULT_TEMPLATES
from tests.factories import StudentFactory, TaskFactory, TeacherFactory
from webapp.runs import services
from webapp.runs.forms import ProtocolForm, template_field_name
from webapp.runs.models import Protocol

pytestmark = pytest.mark.django_db


def protocol_data(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "p",
        "mode": "didactic",
        "max_turns": 5,
        "teacher_sees_reference": "on",
        "teacher_sees_verifier_details": "on",
        "self_correction": "nudge",
        "regenerate_leaks": 0,
    }
    data.update({template_field_name(name): text for name, text in DEFAULT_TEMPLATES.items()})
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not None}


def form_errors(**overrides: Any) -> str:
    form = ProtocolForm(protocol_data(**overrides))
    assert not form.is_valid()
    return " ".join(message for messages in form.errors.values() for message in messages)


def test_the_form_is_pre_filled_with_the_default_templates(researcher_client) -> None:  # type: ignore[no-untyped-def]
    page = researcher_client.get(reverse("protocol_list")).content.decode()
    for mode in Protocol.Mode.values:
        assert f'<option value="{mode}"' in page
    form = ProtocolForm()
    for name, text in DEFAULT_TEMPLATES.items():
        assert form[template_field_name(name)].value() == text
    assert 'name="template_student_system"' in page


@pytest.mark.parametrize(
    ("overrides", "stored"),
    [
        ({"mode": "didactic", "regenerate_leaks": 2, "judge_leaks": "on"},
         {"regenerate_leaks": 2, "judge_leaks": True}),
        ({"mode": "sharded", "max_turns": 6, "judge_turn_kinds": "on"},
         {"judge_turn_kinds": True}),
        ({"mode": "self_correction", "self_correction": "critique"},
         {"self_correction": "critique"}),
        ({"mode": "single_turn", "max_turns": 1, "teacher_sees_reference": None},
         {"teacher_sees_reference": False}),
    ],
)  # fmt: skip
def test_every_mode_is_created_with_its_options(
    researcher_client, overrides: dict[str, Any], stored: dict[str, Any]
) -> None:  # type: ignore[no-untyped-def]
    response = researcher_client.post(reverse("protocol_list"), protocol_data(**overrides))
    assert response.status_code == 302, response.content.decode()
    protocol = Protocol.objects.get()
    assert protocol.mode == overrides["mode"]
    for field, value in stored.items():
        assert getattr(protocol, field) == value
    assert protocol.prompt_templates == DEFAULT_TEMPLATES


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"mode": "single_turn", "max_turns": 3}, "A single-turn protocol has exactly 1 turn."),
        ({"mode": "sharded", "max_turns": 1}, "needs at least 2 turns"),
        ({"mode": "self_correction", "max_turns": 1}, "needs at least 2 turns"),
        ({"max_turns": 0}, "greater than or equal to 1"),
        ({"mode": "sharded", "regenerate_leaks": 1}, "Only the didactic mode has a teacher"),
        ({"regenerate_leaks": 11}, "less than or equal to 10"),
        ({"mode": "self_correction", "judge_leaks": "on"}, "Only the didactic mode has teacher"),
        ({"mode": "single_turn", "max_turns": 1, "judge_turn_kinds": "on"}, "nothing to judge"),
        ({"mode": "self_correction", "template_nudge": "  "}, "This protocol uses this template"),
        ({"mode": "self_correction", "self_correction": "critique", "template_self_critique": ""},
         "This protocol uses this template"),
        ({"judge_leaks": "on", "template_judge_leak": ""}, "This protocol uses this template"),
        ({"mode": "chatty"}, "Select a valid choice"),
    ],
)  # fmt: skip
def test_bad_protocols_are_refused_with_a_clear_message(
    overrides: dict[str, Any], message: str
) -> None:
    assert message in form_errors(**overrides)


def test_edited_templates_are_stored_with_plain_newlines(researcher_client) -> None:  # type: ignore[no-untyped-def]
    researcher_client.post(
        reverse("protocol_list"),
        protocol_data(template_teacher_system="Be kind.\r\nNever give the answer."),
    )
    templates = Protocol.objects.get().prompt_templates
    assert templates["teacher_system"] == "Be kind.\nNever give the answer."
    assert templates["student_system"] == DEFAULT_TEMPLATES["student_system"]


def test_templates_and_options_are_frozen_into_the_run_config(researcher) -> None:  # type: ignore[no-untyped-def]
    form = ProtocolForm(
        protocol_data(template_teacher_system="Version one.", regenerate_leaks=2, judge_leaks="on")
    )
    assert form.is_valid(), form.errors
    protocol = services.protocol_create(name="p", spec=form.protocol_spec())
    task = TaskFactory()

    def launch(seed: int = 0):  # type: ignore[no-untyped-def]
        return services.evaluation_run_create(
            name="frozen", task_set=task.task_set, student=StudentFactory(),
            teacher=TeacherFactory(), judge=StudentFactory(), protocol=protocol, seed=seed,
            created_by=researcher,
        )  # fmt: skip

    run = launch()
    frozen = run.config["protocol"]
    assert frozen["templates"]["teacher_system"] == "Version one."
    assert frozen["templates"]["nudge"] == DEFAULT_TEMPLATES["nudge"]
    assert (frozen["regenerate_leaks"], frozen["judge_leaks"]) == (2, True)
    assert (frozen["self_correction"], frozen["judge_turn_kinds"]) == ("nudge", False)

    # Editing the protocol changes neither the old run's config nor its hash; a run launched
    # afterwards has the new text and therefore another hash.
    protocol.prompt_templates = {**protocol.prompt_templates, "teacher_system": "Version two."}
    protocol.save()
    run.refresh_from_db()
    assert run.config["protocol"]["templates"]["teacher_system"] == "Version one."
    assert run.config_hash == RunConfig.from_json(run.config).config_hash()
    later = launch()
    assert later.config["protocol"]["templates"]["teacher_system"] == "Version two."
    assert later.config_hash != run.config_hash


def test_a_protocol_saved_before_templates_existed_runs_with_the_full_defaults() -> None:
    legacy = Protocol.objects.create(name="legacy", prompt_templates={})
    task = TaskFactory()
    run = services.evaluation_run_create(
        name="legacy", task_set=task.task_set, student=StudentFactory(), teacher=TeacherFactory(),
        protocol=legacy, created_by=None,
    )  # fmt: skip
    assert run.frozen_config.protocol.templates == DEFAULT_TEMPLATES
