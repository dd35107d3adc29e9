from __future__ import annotations

from typing import Any

from django import forms

from models_gpu.spec.protocol import MAX_TURNS
from models_gpu.spec.run import MAX_SAMPLES_PER_TASK, MAX_SEED
from webapp.models_registry.selectors import model_choices
from webapp.tasks.models import TaskSet


class LicExperimentForm(forms.Form):
    """A Lost-in-Conversation experiment: a sharded task set, a student and a user simulator."""

    name = forms.CharField(max_length=150)
    task_set = forms.ModelChoiceField(
        queryset=TaskSet.objects.all(),
        help_text="Every task needs shards: the SHARDED condition reveals one per turn.",
    )
    student = forms.ModelChoiceField(queryset=model_choices())
    user_simulator = forms.ModelChoiceField(
        queryset=model_choices(), help_text="Reveals one shard per SHARDED turn."
    )
    repeats = forms.IntegerField(
        min_value=2, max_value=MAX_SAMPLES_PER_TASK, initial=10,
        help_text="Dialogues per instruction and condition (N): aptitude and unreliability are "
        "percentiles of an instruction's N scores, so N of at least 10 is what they need.",
    )  # fmt: skip
    max_turns = forms.IntegerField(
        min_value=2, max_value=MAX_TURNS, initial=8,
        help_text="Student turns in the SHARDED condition (at least one per shard and the answer).",
    )  # fmt: skip
    seed = forms.IntegerField(min_value=0, max_value=MAX_SEED, initial=0)

    def clean_task_set(self) -> TaskSet:
        task_set: TaskSet = self.cleaned_data["task_set"]
        unsharded = task_set.tasks.filter(shards=[]).count()
        if not task_set.tasks.exists():
            raise forms.ValidationError("This task set has no tasks.")
        if unsharded:
            raise forms.ValidationError(
                f"{unsharded} of its tasks have no shards: choose a set whose tasks all have them."
            )
        return task_set

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        task_set, max_turns = cleaned.get("task_set"), cleaned.get("max_turns")
        if task_set is not None and max_turns is not None:
            most = max(
                (len(shards) for shards in task_set.tasks.values_list("shards", flat=True)),
                default=0,
            )
            if max_turns < most:
                self.add_error(
                    "max_turns",
                    f"A task has {most} shards: SHARDED needs {most} turns or more to reveal them.",
                )
        return cleaned
