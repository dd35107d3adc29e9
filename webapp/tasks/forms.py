from __future__ import annotations

import json
from typing import Any

from django import forms

from models_gpu.spec.verifiers import reference_problems, verifier_config_problems
from webapp.core.json_input import parse_json_input
from webapp.tasks import bounds
from webapp.tasks.models import Task, TaskSet


def validate_field_size(value: Any) -> None:
    """The same per-field limit as imports (DIALAB_MAX_FIELD_CHARS): a task too large to import
    is too large to type in, and would make every page that shows it as large."""
    too_large = bounds.field_too_large(value)
    if too_large:
        raise forms.ValidationError(f"This field {too_large}.")


# ModelForm[TaskSet] would fail at run time: Django's ModelForm is not subscriptable (without
# django_stubs_ext.monkeypatch()).
class TaskSetForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = TaskSet
        fields = ["name", "description"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["description"].validators.append(validate_field_size)


class MultilineField(forms.CharField):
    """A textarea's text with browser line endings (CRLF) made plain newlines, so code and
    multi-line prompts are stored exactly as an author would write them in a file."""

    def to_python(self, value: Any) -> str:
        return str(super().to_python(value)).replace("\r\n", "\n").replace("\r", "\n")


class JSONObjectField(forms.CharField):
    """A textarea holding a JSON object; empty means {}."""

    widget = forms.Textarea(attrs={"rows": 3, "class": "mono"})

    # Parses the text: the stubs type a CharField's value as text only (Django's own JSONField,
    # a CharField too, parses like this).
    def to_python(self, value: Any) -> dict[str, Any]:  # type: ignore[override]
        text = (super().to_python(value) or "").strip()
        if not text:
            return {}
        # Validators run after to_python: the size and depth checks must come before parsing.
        validate_field_size(text)
        try:
            parsed = parse_json_input(text, loads=bounds.json_loads)
        except bounds.NestingTooDeep as error:
            raise forms.ValidationError(f"Line {error.line}: {error}.") from None
        if not isinstance(parsed, dict):
            raise forms.ValidationError('Expected a JSON object, like {"key": "value"}.')
        return parsed

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, dict):
            return json.dumps(value, indent=2, ensure_ascii=False) if value else ""
        return str(value or "")


class TaskForm(forms.Form):
    """The task editor. The quick-add form on a task set page renders only some of its fields."""

    prompt = MultilineField(
        validators=[validate_field_size],
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="What the student sees. Markdown, with $math$ and ```code```.",
    )
    verifier_kind = forms.ChoiceField(
        choices=Task.VerifierKind.choices, initial=Task.VerifierKind.NUMERIC
    )
    answer = forms.CharField(
        max_length=2000,
        required=False,
        help_text="Private: only the verifier and the teacher see it.",
    )
    tests = MultilineField(
        required=False,
        validators=[validate_field_size],
        widget=forms.Textarea(attrs={"rows": 6, "class": "mono"}),
        help_text="Code tasks: Python unit tests (e.g. a check(candidate) function).",
    )
    entry_point = forms.CharField(
        max_length=200, required=False, help_text="Code tasks: the function under test."
    )
    reference_extra = JSONObjectField(
        required=False,
        label="More reference fields",
        help_text="JSON merged into the private reference (e.g. a maze grid, a solution).",
    )
    verifier_config = JSONObjectField(
        required=False, help_text='Verifier settings as JSON, e.g. {"rel_tol": 0.01}.'
    )
    domain = forms.CharField(max_length=64, required=False, initial="arithmetic")
    difficulty = forms.FloatField(required=False, min_value=0)
    tags = forms.CharField(
        required=False, validators=[validate_field_size], help_text="Comma-separated."
    )
    shards = MultilineField(
        required=False,
        validators=[validate_field_size],
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="Underspecified tasks: one shard per line, in the order they are revealed. "
        "Shard 1 states the intent; each later shard adds one fact.",
    )

    QUICK_FIELDS = ("prompt", "answer", "verifier_kind", "domain")

    def quick_fields(self) -> list[forms.BoundField]:
        """The fields of the quick-add form on a task set page (short-answer tasks)."""
        return [self[name] for name in self.QUICK_FIELDS]

    @classmethod
    def initial_from(cls, task: Task) -> dict[str, Any]:
        reference = dict(task.reference)
        return {
            "prompt": task.prompt,
            "verifier_kind": task.verifier_kind,
            "answer": reference.pop("answer", ""),
            "tests": reference.pop("tests", ""),
            "entry_point": reference.pop("entry_point", ""),
            "reference_extra": reference,
            "verifier_config": task.verifier_config,
            "domain": task.domain,
            "difficulty": task.difficulty,
            "tags": ", ".join(task.tags),
            "shards": "\n".join(task.shards),
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        reference: dict[str, Any] = dict(cleaned.get("reference_extra") or {})
        for field in ("answer", "tests", "entry_point"):
            value = (cleaned.get(field) or "").strip()
            if value:
                reference[field] = value
        kind = cleaned.get("verifier_kind", "")
        # The same rule as imports (models_gpu.spec.verifiers.reference_problems).
        for problem in reference_problems(kind, reference):
            target = problem.field if problem.field in self.fields else "reference_extra"
            self.add_error(target, f"{problem.message[0].upper()}{problem.message[1:]}.")
        if not reference and not self.errors:
            self.add_error("answer", "Give the private reference: an answer, tests or fields.")
        for message in verifier_config_problems(kind, cleaned.get("verifier_config") or {}):
            self.add_error("verifier_config", f"The {kind} verifier: {message}.")
        cleaned["reference"] = reference
        cleaned["tags"] = [t.strip() for t in (cleaned.get("tags") or "").split(",") if t.strip()]
        cleaned["shards"] = [
            line.strip() for line in (cleaned.get("shards") or "").splitlines() if line.strip()
        ]
        return cleaned

    def task_fields(self) -> dict[str, Any]:
        """The cleaned data as Task content fields."""
        data = self.cleaned_data
        return {
            "prompt": data["prompt"],
            "reference": data["reference"],
            "verifier_kind": data["verifier_kind"],
            "verifier_config": data["verifier_config"] or {},
            "domain": data["domain"],
            "difficulty": data["difficulty"],
            "tags": data["tags"],
            "shards": data["shards"],
        }


class ProbeForm(forms.Form):
    response = MultilineField(
        validators=[validate_field_size],
        widget=forms.Textarea(attrs={"rows": 3, "class": "mono"}),
        label="Try an answer",
        help_text="Type what a student might reply; the task's verifier checks it in a worker.",
    )
