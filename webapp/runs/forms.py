from __future__ import annotations

import re
from typing import Any

from django import forms

from models_gpu.spec.protocol import (
    MAX_REGENERATIONS,
    MAX_TURNS,
    MODES,
    ProtocolSpec,
    for_its_mode,
    modes_of,
    protocol_problems,
)
from models_gpu.spec.run import (
    DEFAULT_BATCH_SIZE,
    MAX_BATCH_SIZE,
    MAX_SAMPLES_PER_TASK,
    MAX_SEED,
    RunConfigError,
)
from models_gpu.spec.templates import TEMPLATE_HELP, TEMPLATE_NAMES, resolve_templates
from webapp.accounts.models import User
from webapp.models_registry.models import ModelSpec
from webapp.models_registry.selectors import model_choices
from webapp.runs.models import Protocol, Run, Tag
from webapp.runs.selectors import protocol_choices
from webapp.runs.services import PROTOCOL_SETTINGS, evaluation_config
from webapp.runs.table import GROUPINGS
from webapp.tasks.models import TaskSet

TEMPLATE_PREFIX = "template_"


def template_field_name(template: str) -> str:
    return f"{TEMPLATE_PREFIX}{template}"


# ModelForm[Protocol] would fail at run time: Django's ModelForm is not subscriptable (without
# django_stubs_ext.monkeypatch()).
class ProtocolForm(forms.ModelForm):  # type: ignore[type-arg]
    """A protocol with its prompt templates, one text box each, pre-filled with the defaults."""

    mode = forms.ChoiceField(choices=Protocol.Mode.choices, initial=Protocol.Mode.DIDACTIC)
    max_turns = forms.IntegerField(min_value=1, max_value=MAX_TURNS, initial=5)
    regenerate_leaks = forms.IntegerField(
        min_value=0,
        max_value=MAX_REGENERATIONS,
        initial=0,
        help_text=(
            "Didactic only: generate a teacher turn again, up to this many times, when it leaks "
            "the answer (string match, or the judge when judging leaks). 0 keeps the first one."
        ),
    )

    class Meta:
        model = Protocol
        fields = ["name", *PROTOCOL_SETTINGS]
        labels = {
            "teacher_sees_reference": "Teacher sees the reference answer",
            "teacher_sees_verifier_details": "Teacher sees the verifier's details",
            "self_correction": "Self-correction style",
            "judge_turn_kinds": "Judge classifies student turns",
            "judge_leaks": "Judge checks teacher turns for leaks",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A new protocol's templates are {}: the defaults. A clone is an unsaved copy: its own.
        stored = resolve_templates(self.instance.prompt_templates)
        for name in TEMPLATE_NAMES:
            self.fields[template_field_name(name)] = forms.CharField(
                label=name.replace("_", " ").capitalize(),
                required=False,
                initial=stored[name],
                help_text=TEMPLATE_HELP[name],
                widget=forms.Textarea(attrs={"rows": 3, "class": "prompt-template"}),
                strip=False,
            )

    def template_fields(self) -> list[tuple[forms.BoundField, str]]:
        """Each template's field and the modes that send it ("" for every mode)."""
        return [(self[template_field_name(name)], _applies_to(name)) for name in TEMPLATE_NAMES]

    def settings_fields(self) -> list[tuple[forms.BoundField, str]]:
        """Each setting's field and the modes that read it ("" for every mode): the page shows
        a field only under the mode chosen (static/dialab/settings_form.js)."""
        return [(self[name], _applies_to(name)) for name in self.Meta.fields]

    def clean(self) -> dict[str, Any]:
        """The protocol's rules are ``models_gpu.spec.protocol``'s, shown on their fields."""
        cleaned = super().clean() or {}
        if not self.errors:
            for field, message in protocol_problems(self.protocol_spec()):
                self.add_error(field if field in self.fields else None, message)
        return cleaned

    def templates(self) -> dict[str, str]:
        return {
            name: self.cleaned_data[template_field_name(name)].replace("\r\n", "\n")
            for name in TEMPLATE_NAMES
        }

    def protocol_spec(self) -> ProtocolSpec:
        """The protocol as entered, a setting its mode never reads at its neutral value (the
        page hid that field, so what it held is a leftover of another mode)."""
        settings = {field: self.cleaned_data[field] for field in PROTOCOL_SETTINGS}
        return for_its_mode(ProtocolSpec(templates=self.templates(), **settings))


def _applies_to(name: str) -> str:
    """The modes ``name`` applies to, space-separated, or "" when it applies to every mode."""
    modes = modes_of(name)
    return "" if set(modes) == set(MODES) else " ".join(modes)


def _model_choice(
    label: str, help_text: str, required: bool = False
) -> forms.ModelChoiceField[ModelSpec]:
    # Retired models are not offered (model_choices).
    return forms.ModelChoiceField(
        queryset=model_choices(), required=required, label=label, help_text=help_text
    )


class EvaluationRunForm(forms.Form):
    """Launch an evaluation. Which roles must be (or may not be) filled follows the protocol."""

    name = forms.CharField(
        max_length=200,
        required=False,
        help_text="Optional: by default, the student, the task set, the protocol and the seed.",
    )
    task_set = forms.ModelChoiceField(queryset=TaskSet.objects.all())
    protocol = forms.ModelChoiceField(queryset=protocol_choices())
    student = _model_choice("Student", "Plays the student in every mode.", required=True)
    teacher = _model_choice("Teacher", "Required by the didactic mode; unused by the others.")
    user_simulator = _model_choice(
        "User simulator", "Required by the sharded mode: reveals one shard per turn."
    )
    judge = _model_choice(
        "Judge",
        "Optional, for protocols with a judge switch on: it classifies the student replies the "
        "rules find ambiguous and checks the teacher turns the string match did not flag. "
        "Without one, the rules alone decide.",
    )
    samples_per_task = forms.IntegerField(
        min_value=1,
        max_value=MAX_SAMPLES_PER_TASK,
        initial=1,
        label="Samples per task (K)",
        help_text="Dialogues per task, for pass@k.",
    )
    batch_size = forms.IntegerField(
        min_value=1,
        max_value=MAX_BATCH_SIZE,
        initial=DEFAULT_BATCH_SIZE,
        required=False,
        help_text="Dialogues the engine advances together (one batched call per role per turn).",
    )
    seed = forms.IntegerField(min_value=0, max_value=MAX_SEED, initial=0)
    people = forms.ModelMultipleChoiceField(
        queryset=User.objects.filter(is_active=True).order_by("username"),
        required=False,
        help_text="When a person plays a role (a model of the human backend): who may answer "
        "its turns, each from their inbox. Annotators may answer only as the teacher. "
        "None chosen: you.",
    )

    def clean(self) -> dict[str, Any]:
        """Whatever the launch service would refuse (``models_gpu.spec.run``), on its field."""
        cleaned = super().clean() or {}
        person_roles = [
            role
            for role in ("student", "teacher", "user_simulator")
            if cleaned.get(role) is not None and cleaned[role].backend == "human"
        ]
        annotators = [user for user in cleaned.get("people", []) if not user.is_researcher]
        if annotators and set(person_roles) - {"teacher"}:
            names = ", ".join(user.username for user in annotators)
            self.add_error(
                "people",
                f"{names}: annotators may answer only as the teacher, and a person plays the "
                f"{' and the '.join(set(person_roles) - {'teacher'})} here.",
            )
        if not cleaned.get("batch_size"):
            cleaned["batch_size"] = DEFAULT_BATCH_SIZE
        if self.errors:
            return cleaned
        try:
            evaluation_config(**self.launch_arguments())
        except RunConfigError as error:
            for problem in error.problems:
                field = problem.field if problem.field in self.fields else "protocol"
                self.add_error(field, problem.message)
        if not cleaned.get("name") and not self.errors:
            # What tells runs of one model and set apart: the protocol and the seed.
            cleaned["name"] = (
                f"{cleaned['student']} on {cleaned['task_set']}, {cleaned['protocol']}, "
                f"seed {cleaned['seed']}"
            )
        return cleaned

    def launch_arguments(self) -> dict[str, Any]:
        """The choices, as ``services.evaluation_config`` takes them (``evaluation_run_create``
        takes them and a name)."""
        data = self.cleaned_data
        names = ("task_set", "protocol", "student", "teacher", "user_simulator", "judge")
        return {
            **{name: data.get(name) for name in names},
            "samples_per_task": data["samples_per_task"],
            "batch_size": data["batch_size"],
            "seed": data["seed"],
        }

    def chosen_people(self) -> list[User]:
        return list(self.cleaned_data.get("people") or [])


class RunFilterForm(forms.Form):
    """The runs table's filters, sort and grouping (a GET form: the URL is the view)."""

    q = forms.CharField(required=False, label="Name contains")
    task_set = forms.ModelChoiceField(TaskSet.objects.all(), required=False)
    model = forms.ModelChoiceField(
        ModelSpec.objects.all(), required=False, help_text="In any role."
    )
    protocol = forms.ModelChoiceField(Protocol.objects.all(), required=False)
    kind = forms.ChoiceField(choices=[("", "any kind"), *Run.Kind.choices], required=False)
    status = forms.ChoiceField(choices=[("", "any status"), *Run.Status.choices], required=False)
    tags = forms.ModelChoiceField(Tag.objects.all(), required=False, label="Tag")
    group = forms.ChoiceField(
        choices=[("", "no grouping")]
        + [(key, f"by {label}") for key, (label, _, _) in GROUPINGS.items()],
        required=False,
    )

    def filters(self) -> dict[str, Any]:
        """The filters that were given (none when the form is invalid: every run)."""
        if not self.is_valid():
            return {}
        return {key: value for key, value in self.cleaned_data.items() if value and key != "group"}

    def grouping(self) -> str:
        """The grouping asked for (``table.GROUPINGS``' key), "" for none."""
        return str(self.cleaned_data.get("group", "")) if self.is_valid() else ""


TAG_NAME = re.compile(r"^[\w .:+-]{1,50}$")


def parse_tags(text: str) -> list[str]:
    """``"baseline, paper fig 2"`` → ["baseline", "paper fig 2"]; ValidationError naming the
    first tag that is not 1–50 letters, digits, spaces or ``_ . : + -``."""
    names = list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    for name in names:
        if not TAG_NAME.match(name):
            raise forms.ValidationError(
                f"“{name}” is not a tag: up to 50 letters, digits, spaces or _ . : + -"
            )
    return names


class RunLabelForm(forms.Form):
    """A run's name and tags."""

    name = forms.CharField(max_length=200)
    tags = forms.CharField(
        required=False, help_text="Comma-separated, e.g. “baseline, paper fig 2”."
    )

    def clean_tags(self) -> list[str]:
        return parse_tags(self.cleaned_data["tags"])
