"""The playground: a researcher chats with a model about one task, as its teacher or as its
student, the verifier judging every attempt. It is an ordinary run (one task, one dialogue, the
researcher the person in their role), so the conversation is stored, browsed, labelled and
exported like any other dialogue."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from django import forms

from models_gpu.spec.backends import SCRIPTED_POLICIES
from models_gpu.spec.run import checked
from webapp.accounts.models import User
from webapp.models_registry.models import ModelSpec
from webapp.models_registry.selectors import model_choices
from webapp.runs.models import Protocol, Run
from webapp.runs.selectors import protocol_choices
from webapp.runs.services import evaluation_config, evaluation_run_from_config
from webapp.tasks.models import Task

PERSON_MODEL_NAME = "A person (in the browser)"

PlaygroundRole = Literal["teacher", "student"]


def person_model() -> ModelSpec:
    """The registered model that stands for a person (made once)."""
    model, _ = ModelSpec.objects.get_or_create(
        name=PERSON_MODEL_NAME,
        defaults={"backend": ModelSpec.Backend.HUMAN, "location": ""},
    )
    return model


def playground_start(
    *, task: Task, role: PlaygroundRole, partner: ModelSpec, protocol: Protocol, user: User
) -> Run:
    """A run of ``task`` alone where ``user`` plays ``role`` and ``partner`` the other one;
    ``RunConfigError`` when they cannot play together."""
    person = person_model()
    student, teacher = (partner, person) if role == "teacher" else (person, partner)
    config = evaluation_config(
        task_set=task.task_set, protocol=protocol, student=student, teacher=teacher, check=False
    )
    return evaluation_run_from_config(
        name=f"Playground: {user.username} as {role}, task #{task.pk}",
        config=checked(replace(config, task_ids=(task.pk,))),
        created_by=user,
        people=[user],
    )


class PlaygroundForm(forms.Form):
    role = forms.ChoiceField(
        choices=[("teacher", "I am the teacher"), ("student", "I am the student")],
        initial="teacher",
        widget=forms.RadioSelect,
    )
    partner = forms.ModelChoiceField(
        queryset=model_choices().exclude(backend=ModelSpec.Backend.HUMAN),
        label="The model I talk with",
    )
    protocol = forms.ModelChoiceField(
        queryset=protocol_choices().filter(mode=Protocol.Mode.DIDACTIC),
        help_text="A didactic protocol: its max turns, templates and what the teacher sees.",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        partner = cleaned.get("partner")
        if partner is not None and partner.backend == ModelSpec.Backend.SCRIPTED:
            wanted = "teacher" if cleaned.get("role") == "student" else "student"
            policy = partner.location
            if not _scripted_can_play(policy, wanted):
                self.add_error("partner", f"The scripted policy {policy!r} cannot be the {wanted}.")
        return cleaned


def _scripted_can_play(policy: str, role: str) -> bool:
    known = SCRIPTED_POLICIES.get(policy)
    return known is None or known.role == role
