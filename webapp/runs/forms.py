from __future__ import annotations

from typing import Any

from django import forms

from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Protocol
from webapp.tasks.models import TaskSet

# Modes the engine runs today; sharded and self-correction arrive with the dialogue engine.
RUNNABLE_MODES = (Protocol.Mode.DIDACTIC, Protocol.Mode.SINGLE_TURN)


class ProtocolForm(forms.ModelForm):
    mode = forms.ChoiceField(choices=[(m.value, m.label) for m in RUNNABLE_MODES])
    max_turns = forms.IntegerField(min_value=1, max_value=50, initial=5)

    class Meta:
        model = Protocol
        fields = [
            "name",
            "mode",
            "max_turns",
            "teacher_sees_reference",
            "teacher_sees_verifier_details",
        ]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("mode") == Protocol.Mode.SINGLE_TURN and cleaned.get("max_turns") != 1:
            self.add_error("max_turns", "A single-turn protocol has exactly 1 turn.")
        return cleaned


class EvaluationRunForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="Optional.")
    task_set = forms.ModelChoiceField(queryset=TaskSet.objects.all())
    protocol = forms.ModelChoiceField(queryset=Protocol.objects.all())
    student = forms.ModelChoiceField(queryset=ModelSpec.objects.all())
    teacher = forms.ModelChoiceField(
        queryset=ModelSpec.objects.all(),
        required=False,
        help_text="Needed by the didactic protocol.",
    )
    samples_per_task = forms.IntegerField(
        min_value=1, max_value=64, initial=1, help_text="Dialogues per task (for pass@k)."
    )
    seed = forms.IntegerField(min_value=0, max_value=2**31 - 1, initial=0)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        task_set: TaskSet | None = cleaned.get("task_set")
        protocol: Protocol | None = cleaned.get("protocol")
        if task_set is not None and not task_set.tasks.exists():
            self.add_error("task_set", "This task set has no tasks yet: add some first.")
        if protocol is not None:
            if protocol.mode not in RUNNABLE_MODES:
                self.add_error(
                    "protocol", f"The {protocol.get_mode_display()} mode cannot run yet."
                )
            if protocol.mode == Protocol.Mode.DIDACTIC and cleaned.get("teacher") is None:
                self.add_error("teacher", "The didactic protocol needs a teacher model.")
        if not cleaned.get("name") and task_set is not None and cleaned.get("student"):
            cleaned["name"] = f"{cleaned['student']} on {task_set}"
        return cleaned
