from __future__ import annotations

from fractions import Fraction
from typing import Any

from django import forms

from webapp.tasks.models import Task, TaskSet


class TaskSetForm(forms.ModelForm):
    class Meta:
        model = TaskSet
        fields = ["name", "description"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}


def parse_number(text: str) -> Fraction:
    """A number as an author types it: 42, -3.5, 3/4, 1,234."""
    return Fraction(text.replace(",", "").strip())


class TaskForm(forms.Form):
    prompt = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), help_text="What the student sees."
    )
    answer = forms.CharField(
        max_length=500, help_text="Private: only the verifier and the teacher see it."
    )
    verifier_kind = forms.ChoiceField(
        choices=Task.VerifierKind.choices, initial=Task.VerifierKind.NUMERIC
    )
    domain = forms.CharField(max_length=64, required=False, initial="arithmetic")
    difficulty = forms.FloatField(required=False, min_value=0)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        answer = cleaned.get("answer", "")
        if cleaned.get("verifier_kind") == Task.VerifierKind.NUMERIC and answer:
            try:
                parse_number(answer)
            except (ValueError, ZeroDivisionError):
                self.add_error(
                    "answer",
                    f"The numeric verifier needs a number (like 42, -3.5 or 3/4); got {answer!r}.",
                )
        return cleaned
