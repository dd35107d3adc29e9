"""Forms of the person's turn page: the answer, and a researcher's reassign and end."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet

from webapp.accounts.models import User


class AnswerForm(forms.Form):
    """What the person says in their turn; whitespace alone is no answer."""

    text = forms.CharField(
        strip=True,
        required=True,
        error_messages={"required": "Write your answer first."},
        widget=forms.Textarea(attrs={"rows": 8, "required": True}),
    )


class ReassignForm(forms.Form):
    """Give the turn to one of the run's people, or back to any of them, saying why."""

    to = forms.ModelChoiceField(
        queryset=User.objects.none(), required=False, empty_label="anyone", label="Give it to"
    )
    reason = forms.CharField(max_length=500, strip=True, label="Why")

    def __init__(self, *args: Any, people: QuerySet[User], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        to = self.fields["to"]
        assert isinstance(to, forms.ModelChoiceField)  # the form's own copy of the field above
        to.queryset = people


class EndForm(forms.Form):
    """End the dialogue now ("ended_by_person": not a time-out), saying why."""

    reason = forms.CharField(max_length=500, strip=True, label="Why")
