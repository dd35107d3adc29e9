"""The training launch form: which dialogues, which base model, which method and
hyperparameters (``models_gpu.spec.training``), and the held-out evaluation that follows."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import QueryDict

from models_gpu.spec.run import MAX_SAMPLES_PER_TASK
from models_gpu.spec.training import (
    METHODS,
    SETTING_APPLIES,
    TRAINING_SETTINGS,
    TrainingConfig,
    training_config_problems,
)
from models_gpu.spec.training_run import NOTHING_TO_TRAIN, TRAINABLE_BACKENDS, WRITER_BACKENDS
from webapp.accounts.models import User
from webapp.core.settings_fields import setting_field
from webapp.dialogues.forms import DialogueFilterForm
from webapp.models_registry.selectors import model_choices
from webapp.runs.selectors import protocol_choices
from webapp.tasks.models import TaskSet
from webapp.training.selectors import (
    SelectionCounts,
    previewed_template_problem,
    selected_dialogues,
    selection_counts,
)

# The form's own fields (the rest are the training settings, by their spec names).
EVALUATION_FIELDS = ("eval_task_set", "eval_protocol", "eval_teacher", "eval_samples")


class TrainingForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="Defaults to a summary.")
    selection = forms.CharField(
        required=False,
        widget=forms.HiddenInput,
        help_text="The transcript list's filter that selects the training dialogues.",
    )
    base_model = forms.ModelChoiceField(
        queryset=model_choices().filter(backend__in=TRAINABLE_BACKENDS),
        help_text="A local checkpoint (transformers or vLLM backend) to start from.",
    )
    eval_task_set = forms.ModelChoiceField(
        queryset=TaskSet.objects.all(),
        label="Held-out task set",
        help_text="Evaluated on by the trained model and the base model when training ends.",
    )
    eval_protocol = forms.ModelChoiceField(queryset=protocol_choices(), label="Evaluation protocol")
    eval_teacher = forms.ModelChoiceField(
        queryset=model_choices(),
        required=False,
        label="Evaluation teacher",
        help_text="For the didactic protocol.",
    )
    eval_samples = forms.IntegerField(
        min_value=1, max_value=MAX_SAMPLES_PER_TASK, initial=1, label="Samples per task"
    )
    question_writer = forms.ModelChoiceField(
        queryset=model_choices().filter(backend__in=WRITER_BACKENDS),
        required=False,
        label="question writer",
        empty_label="none: the question template",
        help_text="A model that writes each question, shown the conversation before the failed "
        "attempt, the attempt and the reference; told not to reveal the answer.",
    )

    def __init__(self, *args: Any, reader: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reader = reader
        for setting in TRAINING_SETTINGS:
            self.fields[setting.name] = setting_field(setting)
        self.fields["method"].choices = [(name, m.label) for name, m in METHODS.items()]

    @property
    def selection_query(self) -> str:
        return str(self.data.get("selection", self.initial.get("selection", "")))

    def counts(self) -> SelectionCounts:
        """What the selection holds now (the snapshot is frozen at launch)."""
        if not hasattr(self, "_counts"):
            filters = DialogueFilterForm.from_query(
                QueryDict(self.selection_query), reader=self.reader
            ).filters()
            self._counts = selection_counts(selected_dialogues(filters=filters, reader=self.reader))
        return self._counts

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.counts().dialogues == 0:
            self.add_error("selection", NOTHING_TO_TRAIN)
        if "base_model" in cleaned and "method" in cleaned:
            problem = previewed_template_problem(
                reader=self.reader, base_model=cleaned["base_model"], method=cleaned["method"]
            )
            if problem:
                self.add_error(
                    "method",
                    f"The latest preview of {cleaned['base_model'].name} found: {problem} Choose "
                    "another method, or preview again once the base model is fixed.",
                )
        values = {s.name: cleaned[s.name] for s in TRAINING_SETTINGS if s.name in cleaned}
        for problem in training_config_problems(values):
            if problem.field in cleaned:  # a field that failed its own check says so already
                self.add_error(problem.field, problem.message)
        return cleaned

    def training_config(self) -> TrainingConfig:
        return TrainingConfig(**{s.name: self.cleaned_data[s.name] for s in TRAINING_SETTINGS})

    def run_name(self) -> str:
        data = self.cleaned_data
        return data["name"] or (
            f"{data['method']} of {data['base_model'].name} on {self.counts().dialogues} dialogues"
        )

    def launch_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in ("name", "base_model", *EVALUATION_FIELDS)]

    def settings_fields(self) -> list[tuple[forms.BoundField, str, str]]:
        """Each hyperparameter's field, and the (other field, value) it applies under ("", ""
        when always): the page hides the ones that do not apply to the choices made."""
        fields = [
            (self[setting.name], *SETTING_APPLIES.get(setting.name, ("", "")))
            for setting in TRAINING_SETTINGS
        ]
        template = [f.name for f, _, _ in fields].index("qpriming_question_template")
        fields.insert(template + 1, (self["question_writer"], "method", "qpriming"))
        return fields
