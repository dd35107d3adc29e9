"""Protocols: every mode, the teacher's visibility, self-correction style, leak regeneration,
judges, and prompt templates pre-filled with the engine's defaults and frozen at launch."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from models_gpu.spec.protocol import (
    SETTING_MODES,
    TEMPLATE_MODES,
    ProtocolSpec,
    for_its_mode,
    protocol_problems,
)
from models_gpu.spec.run import RunConfig, RunConfigError
from models_gpu.spec.templates import DEFAULT_TEMPLATES
from tests.factories import ProtocolFactory, StudentFactory, TaskFactory, TeacherFactory
from webapp.runs import services
from webapp.runs.forms import EvaluationRunForm, ProtocolForm, template_field_name
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
        ({"mode": "didactic", "teacher_sees_reference": None},
         {"teacher_sees_reference": False}),
        ({"mode": "single_turn", "max_turns": 1}, {"max_turns": 1}),
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
        ({"mode": "sharded", "max_turns": 1}, "needs at least 2 turns"),
        ({"mode": "self_correction", "max_turns": 1}, "needs at least 2 turns"),
        ({"max_turns": 0}, "greater than or equal to 1"),
        ({"regenerate_leaks": 11}, "less than or equal to 10"),
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


def setting_paragraph(page: str, field: str) -> str:
    """The opening tag of the paragraph that holds a field of the protocol form."""
    return page.split(f'id="setting-{field}"')[1].split(">")[0]


def test_each_field_is_marked_with_the_modes_that_read_it(researcher_client) -> None:  # type: ignore[no-untyped-def]
    page = researcher_client.get(reverse("protocol_list")).content.decode()
    assert "data-applies" not in setting_paragraph(page, "mode"), "the mode is always shown"
    assert "data-applies" not in setting_paragraph(page, "name")
    assert "data-applies" not in setting_paragraph(page, "template_student_system")
    # Every other field names the mode select and exactly the modes spec.protocol lists for it.
    for name, modes in [*SETTING_MODES.items(), *TEMPLATE_MODES.items()]:
        field = name if name in SETTING_MODES else template_field_name(name)
        tag = setting_paragraph(page, field)
        assert f'data-applies-when="id_mode" data-applies-value="{" ".join(modes)}"' in tag
    assert 'src="/static/dialab/settings_form.js"' in page


@pytest.mark.parametrize(
    ("overrides", "stored"),
    [
        ({"mode": "single_turn", "max_turns": 3, "judge_turn_kinds": "on"},
         {"max_turns": 1, "judge_turn_kinds": False}),
        ({"mode": "sharded", "max_turns": 4, "regenerate_leaks": 1, "judge_leaks": "on",
          "teacher_sees_reference": None, "self_correction": "critique"},
         {"max_turns": 4, "regenerate_leaks": 0, "judge_leaks": False,
          "teacher_sees_reference": True, "self_correction": "nudge"}),
        ({"mode": "self_correction", "self_correction": "critique", "judge_leaks": "on"},
         {"self_correction": "critique", "judge_leaks": False}),
    ],
)  # fmt: skip
def test_a_setting_the_mode_never_reads_is_stored_neutral_not_refused(
    researcher_client, overrides: dict[str, Any], stored: dict[str, Any]
) -> None:  # type: ignore[no-untyped-def]
    # The page hides these fields under this mode: what they hold is left from another mode.
    response = researcher_client.post(reverse("protocol_list"), protocol_data(**overrides))
    assert response.status_code == 302, response.content.decode()
    protocol = Protocol.objects.get()
    for field, value in stored.items():
        assert getattr(protocol, field) == value, field


def test_the_service_still_refuses_what_a_mode_forbids() -> None:
    # Callers other than the form (imports, scripts) get the rules, not a silent rewrite.
    spec = ProtocolSpec(mode="single_turn", max_turns=3)
    with pytest.raises(RunConfigError, match="exactly 1 turn"):
        services.protocol_create(name="p", spec=spec)
    assert protocol_problems(for_its_mode(spec)) == []


def launch(protocol: Protocol, researcher: Any) -> Any:
    task = TaskFactory()
    return services.evaluation_run_create(
        name="run", task_set=task.task_set, student=StudentFactory(), teacher=TeacherFactory(),
        protocol=protocol, created_by=researcher,
    )  # fmt: skip


def test_editing_a_protocol_leaves_the_runs_that_used_it_as_they_were(
    researcher_client, researcher
) -> None:  # type: ignore[no-untyped-def]
    protocol = services.protocol_create(
        name="didactic", spec=ProtocolSpec(mode="didactic", max_turns=5)
    )
    run = launch(protocol, researcher)
    url = reverse("protocol_edit", args=[protocol.pk])
    page = researcher_client.get(url).content.decode()
    assert "keep what they were launched with" in page
    assert 'value="didactic"' in page and "selected>Didactic" in page
    response = researcher_client.post(
        url, protocol_data(name="didactic, 3 turns", max_turns=3,
                           template_teacher_system="Be brief.")
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()
    protocol.refresh_from_db()
    assert (protocol.name, protocol.max_turns) == ("didactic, 3 turns", 3)
    assert protocol.prompt_templates["teacher_system"] == "Be brief."
    run.refresh_from_db()
    frozen = run.frozen_config.protocol
    assert (frozen.name, frozen.max_turns) == ("didactic", 5)
    assert frozen.templates["teacher_system"] == DEFAULT_TEMPLATES["teacher_system"]


def test_an_edit_is_refused_like_a_new_protocol(researcher_client) -> None:  # type: ignore[no-untyped-def]
    protocol = ProtocolFactory(name="p")
    response = researcher_client.post(
        reverse("protocol_edit", args=[protocol.pk]),
        protocol_data(mode="sharded", max_turns=1),
    )
    assert "needs at least 2 turns" in response.content.decode()
    protocol.refresh_from_db()
    assert protocol.mode == "didactic"


def test_clone_is_the_add_form_filled_in_from_the_protocol(researcher_client) -> None:  # type: ignore[no-untyped-def]
    source = services.protocol_create(
        name="critique",
        spec=ProtocolSpec(
            mode="self_correction", max_turns=4, self_correction="critique",
            templates={**DEFAULT_TEMPLATES, "self_critique": "Find your mistake."},
        ),
    )  # fmt: skip
    form = researcher_client.get(reverse("protocol_clone", args=[source.pk])).context["form"]
    assert form["name"].value() == "critique (copy)"
    assert (form["mode"].value(), form["max_turns"].value()) == ("self_correction", 4)
    assert form[template_field_name("self_critique")].value() == "Find your mistake."
    researcher_client.post(
        reverse("protocol_clone", args=[source.pk]),
        protocol_data(name="critique, 6 turns", mode="self_correction", max_turns=6,
                      self_correction="critique"),
    )  # fmt: skip
    clone = Protocol.objects.get(name="critique, 6 turns")
    assert clone.max_turns == 6
    source.refresh_from_db()
    assert source.max_turns == 4


def test_a_retired_protocol_leaves_the_run_form_and_the_list(researcher_client) -> None:  # type: ignore[no-untyped-def]
    kept, retired = ProtocolFactory(name="kept"), ProtocolFactory(name="old")
    researcher_client.post(reverse("protocol_retire", args=[retired.pk]), {"retired": "1"})
    assert list(EvaluationRunForm().fields["protocol"].queryset) == [kept]
    page = researcher_client.get(reverse("protocol_list")).content.decode()
    assert f'id="protocol-{retired.pk}"' not in page and "Show retired (1)" in page
    page = researcher_client.get(reverse("protocol_list") + "?retired=1").content.decode()
    assert f'id="protocol-{retired.pk}"' in page and "Restore" in page
    researcher_client.post(reverse("protocol_retire", args=[retired.pk]), {"retired": "0"})
    assert set(EvaluationRunForm().fields["protocol"].queryset) == {kept, retired}


def test_only_researchers_change_protocols(annotator_client) -> None:  # type: ignore[no-untyped-def]
    protocol = ProtocolFactory()
    for view in ("protocol_edit", "protocol_clone"):
        assert annotator_client.get(reverse(view, args=[protocol.pk])).status_code == 403
    response = annotator_client.post(reverse("protocol_retire", args=[protocol.pk]))
    assert response.status_code == 403
