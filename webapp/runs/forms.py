from __future__ import annotations

from typing import Any

from django import forms

from webapp.models_registry.backends import BACKENDS
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Protocol
from webapp.runs.prompt_templates import DEFAULT_TEMPLATES, TEMPLATE_HELP, complete_templates
from webapp.tasks.models import TaskSet

MODES_WITH_TEACHER = (Protocol.Mode.DIDACTIC,)
MAX_REGENERATIONS = 10
DEFAULT_BATCH_SIZE = 64
TEMPLATE_PREFIX = "template_"


def template_field_name(template: str) -> str:
    return f"{TEMPLATE_PREFIX}{template}"


class ProtocolForm(forms.ModelForm):
    """A protocol with its prompt templates, one text box each, pre-filled with the defaults."""

    mode = forms.ChoiceField(choices=Protocol.Mode.choices, initial=Protocol.Mode.DIDACTIC)
    max_turns = forms.IntegerField(min_value=1, max_value=50, initial=5)
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
        fields = [
            "name",
            "mode",
            "max_turns",
            "teacher_sees_reference",
            "teacher_sees_verifier_details",
            "self_correction",
            "regenerate_leaks",
            "judge_turn_kinds",
            "judge_leaks",
        ]
        labels = {
            "teacher_sees_reference": "Teacher sees the reference answer",
            "teacher_sees_verifier_details": "Teacher sees the verifier's details",
            "self_correction": "Self-correction style",
            "judge_turn_kinds": "Judge classifies student turns",
            "judge_leaks": "Judge checks teacher turns for leaks",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        stored = complete_templates(self.instance.prompt_templates if self.instance.pk else None)
        for name in DEFAULT_TEMPLATES:
            self.fields[template_field_name(name)] = forms.CharField(
                label=name.replace("_", " ").capitalize(),
                required=False,
                initial=stored[name],
                help_text=TEMPLATE_HELP.get(name, ""),
                widget=forms.Textarea(attrs={"rows": 3, "class": "prompt-template"}),
                strip=False,
            )

    def template_fields(self) -> list[forms.BoundField]:
        return [self[template_field_name(name)] for name in DEFAULT_TEMPLATES]

    def settings_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.Meta.fields]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        mode = cleaned.get("mode")
        max_turns = cleaned.get("max_turns")
        if mode == Protocol.Mode.SINGLE_TURN and max_turns != 1:
            self.add_error("max_turns", "A single-turn protocol has exactly 1 turn.")
        if mode in (Protocol.Mode.SHARDED, Protocol.Mode.SELF_CORRECTION) and max_turns == 1:
            self.add_error(
                "max_turns",
                f"The {Protocol.Mode(mode).label} mode needs at least 2 turns "
                "(use the single-turn mode for one).",
            )
        if cleaned.get("regenerate_leaks") and mode not in MODES_WITH_TEACHER:
            self.add_error(
                "regenerate_leaks",
                "Only the didactic mode has a teacher whose leaks could be regenerated: set 0.",
            )
        if cleaned.get("judge_leaks") and mode not in MODES_WITH_TEACHER:
            self.add_error(
                "judge_leaks", "Only the didactic mode has teacher turns for a judge to check."
            )
        if cleaned.get("judge_turn_kinds") and mode == Protocol.Mode.SINGLE_TURN:
            self.add_error(
                "judge_turn_kinds",
                "A single-turn dialogue has one student turn, always an attempt: nothing to judge.",
            )
        self._check_templates(cleaned)
        return cleaned

    def _check_templates(self, cleaned: dict[str, Any]) -> None:
        """The templates this protocol will use may not be empty (system prompts may)."""
        needed = []
        if cleaned.get("mode") == Protocol.Mode.SELF_CORRECTION:
            style = cleaned.get("self_correction")
            needed.append("self_critique" if style == Protocol.SelfCorrection.CRITIQUE else "nudge")
        if cleaned.get("judge_turn_kinds"):
            needed.append("judge_turn_kind")
        if cleaned.get("judge_leaks"):
            needed.append("judge_leak")
        for name in needed:
            if not cleaned.get(template_field_name(name), "").strip():
                self.add_error(
                    template_field_name(name),
                    "This protocol uses this template: write it, or paste back the default.",
                )

    def save(self, commit: bool = True) -> Protocol:
        protocol: Protocol = super().save(commit=False)
        protocol.prompt_templates = {
            name: self.cleaned_data[template_field_name(name)].replace("\r\n", "\n")
            for name in DEFAULT_TEMPLATES
        }
        if commit:
            protocol.save()
        return protocol


def _model_choice(label: str, help_text: str, required: bool = False) -> forms.ModelChoiceField:
    return forms.ModelChoiceField(
        queryset=ModelSpec.objects.all(), required=required, label=label, help_text=help_text
    )


class EvaluationRunForm(forms.Form):
    """Launch an evaluation. Which roles must be (or may not be) filled follows the protocol."""

    name = forms.CharField(max_length=200, required=False, help_text="Optional.")
    task_set = forms.ModelChoiceField(queryset=TaskSet.objects.all())
    protocol = forms.ModelChoiceField(queryset=Protocol.objects.all())
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
        max_value=64,
        initial=1,
        label="Samples per task (K)",
        help_text="Dialogues per task, for pass@k.",
    )
    batch_size = forms.IntegerField(
        min_value=1,
        max_value=4096,
        initial=DEFAULT_BATCH_SIZE,
        required=False,
        help_text="Dialogues the engine advances together (one batched call per role per turn).",
    )
    seed = forms.IntegerField(min_value=0, max_value=2**31 - 1, initial=0)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        task_set: TaskSet | None = cleaned.get("task_set")
        protocol: Protocol | None = cleaned.get("protocol")
        if task_set is not None and not task_set.tasks.exists():
            self.add_error("task_set", "This task set has no tasks yet: add some first.")
        for role in ("student", "teacher", "user_simulator", "judge"):
            model: ModelSpec | None = cleaned.get(role)
            if model is not None and not BACKENDS[model.backend].available:
                self.add_error(
                    role, f"{model} uses the {model.backend} backend, not available yet."
                )
        if protocol is not None:
            self._check_roles(protocol, cleaned)
            if protocol.mode == Protocol.Mode.SHARDED and task_set is not None:
                self._check_shards(task_set)
        if not cleaned.get("name") and task_set is not None and cleaned.get("student"):
            cleaned["name"] = f"{cleaned['student']} on {task_set}"
        return cleaned

    def _check_roles(self, protocol: Protocol, cleaned: dict[str, Any]) -> None:
        mode = Protocol.Mode(protocol.mode)
        uses = {
            "teacher": mode == Protocol.Mode.DIDACTIC,
            "user_simulator": mode == Protocol.Mode.SHARDED,
            "judge": protocol.judge_turn_kinds or protocol.judge_leaks,
        }
        needs = {
            "teacher": "The didactic protocol needs a teacher model.",
            "user_simulator": "The sharded mode needs a user simulator to reveal the shards.",
        }
        for role, used in uses.items():
            chosen = cleaned.get(role) is not None
            if used and not chosen and role in needs:
                self.add_error(role, needs[role])
            elif chosen and not used and role == "judge":
                self.add_error(
                    role,
                    f"The protocol {protocol} asks no judge anything (its judge switches are off): "
                    "leave this empty.",
                )
            elif chosen and not used:
                self.add_error(
                    role,
                    f"A {mode.value.replace('_', '-')} protocol has no {role.replace('_', ' ')}: "
                    "leave this empty.",
                )

    def _check_shards(self, task_set: TaskSet) -> None:
        without = task_set.tasks.filter(shards=[]).count()
        if without:
            self.add_error(
                "task_set",
                f"{without} task(s) in this set have no shards, and the sharded mode reveals a "
                "task one shard per turn: choose a set whose tasks all have shards.",
            )

    def launch_arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``services.evaluation_run_create`` from a valid form."""
        data = self.cleaned_data
        names = ("name", "task_set", "protocol", "student", "teacher", "user_simulator", "judge")
        return {
            **{name: data[name] for name in names},
            "samples_per_task": data["samples_per_task"],
            "batch_size": data["batch_size"] or DEFAULT_BATCH_SIZE,
            "seed": data["seed"],
        }
