"""The training launch form: which dialogues, which base model, which method and
hyperparameters (``models_gpu.spec.training``), and the held-out evaluation that follows."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django import forms

from models_gpu.spec.online import ONLINE_SETTINGS, OnlineConfig, online_config_problems
from models_gpu.spec.run import MAX_SAMPLES_PER_TASK
from models_gpu.spec.training import (
    METHODS,
    SETTING_APPLIES,
    SETTINGS_BY_NAME,
    TRAINING_SETTINGS,
    MethodId,
    TrainingConfig,
    training_config_problems,
)
from models_gpu.spec.training_run import (
    NOTHING_TO_TRAIN,
    ONLINE_MODES,
    PRIMING_METHODS,
    TRAINABLE_BACKENDS,
    WRITER_BACKENDS,
)
from webapp.accounts.models import User
from webapp.core.settings_fields import setting_field
from webapp.models_registry.selectors import model_choices
from webapp.runs.selectors import protocol_choices
from webapp.tasks.models import TaskSet
from webapp.training.heldout import overlap, selection_task_keys, task_set_task_keys
from webapp.training.selectors import (
    SelectionCounts,
    previewed_template_problem,
    selection_counts,
    selection_dialogues,
)

# The form's own fields (the rest are the training settings, by their spec names).
EVALUATION_FIELDS = (
    "eval_task_set", "eval_protocol", "eval_teacher", "eval_samples", "evaluate_trained_tasks",
)  # fmt: skip
ONLINE_LEARNING_RATE = 1e-4


class _LaunchForm(forms.Form):
    """What every training launch names: the base model and the held-out evaluation."""

    name = forms.CharField(max_length=200, required=False, help_text="Defaults to a summary.")
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
    evaluate_trained_tasks = forms.BooleanField(
        required=False,
        label="Evaluate on tasks it trains on (deliberately)",
        help_text="Without it, a held-out set that shares tasks with the training data is "
        "refused; with it, the results are marked “not held out” wherever they are shown.",
    )

    def training_task_keys(self) -> frozenset[str]:
        """The tasks this launch trains on (by ``task_key``)."""
        raise NotImplementedError

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        task_set = cleaned.get("eval_task_set")
        if task_set is not None and not cleaned.get("evaluate_trained_tasks"):
            shared = overlap(self.training_task_keys(), task_set_task_keys(task_set.pk))
            if not shared.held_out:
                label = self.fields["evaluate_trained_tasks"].label
                self.add_error(
                    "eval_task_set",
                    f"{shared.trained_on} of the {shared.tasks} tasks of {task_set} are in the "
                    "training data (the same prompt and reference, in any task set or version): "
                    "its results would not be held out. Choose a held-out set without them, or "
                    f"tick “{label}” if that is what you want.",
                )
        return cleaned


class TrainingForm(_LaunchForm):
    selection = forms.CharField(
        required=False,
        widget=forms.HiddenInput,
        help_text="The transcript list's filter that selects the training dialogues.",
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
        method = self.fields["method"]
        assert isinstance(method, forms.ChoiceField)  # a setting with choices (setting_field)
        method.choices = [(name, m.label) for name, m in METHODS.items()]

    @property
    def selection_query(self) -> str:
        return str(self.data.get("selection", self.initial.get("selection", "")))

    def counts(self) -> SelectionCounts:
        """What the selection holds now (the snapshot is frozen at launch)."""
        if not hasattr(self, "_counts"):
            self._counts = selection_counts(
                selection_dialogues(selection=self.selection_query, reader=self.reader)
            )
        return self._counts

    def training_task_keys(self) -> frozenset[str]:
        return selection_task_keys(
            selection_dialogues(selection=self.selection_query, reader=self.reader)
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.counts().dialogues == 0:
            self.add_error("selection", NOTHING_TO_TRAIN)
        if "base_model" in cleaned and "method" in cleaned:
            found = previewed_template_problem(
                reader=self.reader, base_model=cleaned["base_model"], method=cleaned["method"]
            )
            if found:
                self.add_error(
                    "method",
                    f"The latest preview of {cleaned['base_model'].name} found: {found} Choose "
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


# The fine-tuning settings online training uses (how dialogues become examples, the batch and
# the methods' own settings are online training's own: ``spec.online``).
ONLINE_TRAINING_SETTINGS = tuple(
    setting
    for setting in TRAINING_SETTINGS
    if setting.name
    not in {
        "method",
        "batch_size",
        "gradient_accumulation_steps",
        "critique_instruction",
        "qpriming_decay",
        "qpriming_question_template",
    }
)
ONLINE_FIELDS = ("task_set", "protocol", "teacher", "single_turn_baseline")
ONLINE_EPOCHS_HELP = (
    "Passes over the training tasks, each played group_size times (when max_steps is 0)."
)
PRIMING_METHOD: MethodId = "qpriming"  # the default: the papers prime with Q-priming before RL
PRIMING_FIELDS = ("priming_selection", "priming_method", "priming_epochs", "priming_learning_rate")


class OnlineTrainingForm(_LaunchForm):
    """Online SML: the base model plays the training tasks' dialogues and learns from them."""

    task_set = forms.ModelChoiceField(
        queryset=TaskSet.objects.all(),
        label="Training task set",
        help_text="The tasks the student plays while it trains (one epoch: each task once per "
        "group, in a seeded order).",
    )
    protocol = forms.ModelChoiceField(
        queryset=protocol_choices().filter(mode__in=ONLINE_MODES),
        help_text="How the training dialogues are played (didactic or sharded); the horizon "
        "below cuts its max turns.",
    )
    teacher = forms.ModelChoiceField(
        queryset=model_choices(),
        required=False,
        help_text="Who gives the feedback while the student trains (didactic): a scripted "
        "teacher, the base model itself (frozen), or another model.",
    )
    single_turn_baseline = forms.BooleanField(
        required=False,
        initial=True,
        label="Also launch the single-turn RL baseline",
        help_text="A sibling run with one turn and group size times horizon dialogues per task: "
        "the same generation budget, the comparison the papers make.",
    )

    priming_selection = forms.CharField(
        required=False,
        max_length=2000,
        label="Prime on (transcript filter)",
        help_text="Optional: the transcript list's filter (its query string, e.g. "
        "run=3&outcome=solved) whose dialogues the base model is first fine-tuned on; GRPO then "
        "starts from the primed model, in the same run. Empty: GRPO from the base model.",
    )
    priming_method = forms.ChoiceField(
        choices=[(name, METHODS[name].label) for name in PRIMING_METHODS],
        required=False,
        initial=PRIMING_METHOD,
        label="priming method",
    )

    def __init__(self, *args: Any, reader: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reader = reader
        for setting in ONLINE_SETTINGS + ONLINE_TRAINING_SETTINGS:
            self.fields[setting.name] = setting_field(setting)
        # Online defaults that differ from fine-tuning's: a curve point every step, and a
        # learning rate that moves a policy by reward within a few hundred steps.
        self.fields["logging_steps"].initial = 1
        self.fields["learning_rate"].initial = ONLINE_LEARNING_RATE
        self.fields["epochs"].help_text = ONLINE_EPOCHS_HELP
        for name in ("epochs", "learning_rate"):  # filled in with the defaults when left empty
            field = self.fields[f"priming_{name}"] = setting_field(SETTINGS_BY_NAME[name])
            field.label, field.required = f"priming {name.replace('_', ' ')}", False

    def priming_counts(self) -> SelectionCounts | None:
        """What the priming selection holds now (None: no priming stage)."""
        if not self.priming_query:
            return None
        if not hasattr(self, "_priming_counts"):
            self._priming_counts = selection_counts(
                selection_dialogues(selection=self.priming_query, reader=self.reader)
            )
        return self._priming_counts

    def training_task_keys(self) -> frozenset[str]:
        task_set = self.cleaned_data.get("task_set")
        keys = task_set_task_keys(task_set.pk) if task_set is not None else frozenset()
        if self.priming_query:
            keys |= selection_task_keys(
                selection_dialogues(selection=self.priming_query, reader=self.reader)
            )
        return keys

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        protocol, teacher = cleaned.get("protocol"), cleaned.get("teacher")
        if protocol is not None and protocol.mode == "didactic" and teacher is None:
            self.add_error("teacher", "The didactic protocol needs a teacher.")
        counts = self.priming_counts()
        if counts is not None and counts.dialogues == 0:
            self.add_error("priming_selection", NOTHING_TO_TRAIN)
        online = {s.name: cleaned[s.name] for s in ONLINE_SETTINGS if s.name in cleaned}
        training = {s.name: cleaned[s.name] for s in ONLINE_TRAINING_SETTINGS if s.name in cleaned}
        for problem in online_config_problems(online) + training_config_problems(training):
            if problem.field in cleaned:
                self.add_error(problem.field, problem.message)
        return cleaned

    def online_config(self) -> OnlineConfig:
        return OnlineConfig(**{s.name: self.cleaned_data[s.name] for s in ONLINE_SETTINGS})

    def training_config(self) -> TrainingConfig:
        return TrainingConfig(
            **{s.name: self.cleaned_data[s.name] for s in ONLINE_TRAINING_SETTINGS}
        )

    def priming_config(self) -> TrainingConfig | None:
        """The priming stage's training (None: none): its method, epochs and learning rate; the
        rest (device, precision, fine-tuning, seed, checkpoints) as the GRPO stage's."""
        if self.priming_counts() is None:
            return None
        data, defaults = self.cleaned_data, TrainingConfig()
        return replace(
            self.training_config(), method=data["priming_method"] or PRIMING_METHOD,
            epochs=data["priming_epochs"] or defaults.epochs,
            learning_rate=data["priming_learning_rate"] or defaults.learning_rate, max_steps=0,
        )  # fmt: skip

    @property
    def priming_query(self) -> str:
        """The priming selection's query string (a pasted leading "?" is dropped)."""
        return str(self.cleaned_data.get("priming_selection", "")).strip().lstrip("?")

    def run_name(self) -> str:
        data = self.cleaned_data
        primed = f"{data['priming_method'] or PRIMING_METHOD} + " if self.priming_counts() else ""
        return data["name"] or (
            f"{primed}online SML of {data['base_model'].name} on {data['task_set'].name} "
            f"(g={data['group_size']}, T={data['horizon']})"
        )

    def launch_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in ("name", "base_model", *ONLINE_FIELDS, *EVALUATION_FIELDS)]

    def priming_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in PRIMING_FIELDS]

    def settings_fields(self) -> list[tuple[forms.BoundField, str, str]]:
        return [
            (self[setting.name], *SETTING_APPLIES.get(setting.name, ("", "")))
            for setting in ONLINE_SETTINGS + ONLINE_TRAINING_SETTINGS
        ]
