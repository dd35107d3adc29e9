"""Forms for forks: one dialogue forked after a turn, and a filter's dialogues replayed from
turn t with another teacher."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms

from models_gpu.spec.protocol import MAX_TURNS
from webapp.forks.services import ForkPoint
from webapp.models_registry.models import ModelSpec
from webapp.models_registry.selectors import model_choices
from webapp.runs.selectors import protocol_choices


def _model_choice(label: str, help_text: str, required: bool) -> forms.ModelChoiceField[ModelSpec]:
    return forms.ModelChoiceField(
        queryset=model_choices(), required=required, label=label, help_text=help_text
    )


class ForkForm(forms.Form):
    """Fork one dialogue: the turn to keep up to, and who plays on under which protocol (the
    parent run's, unless changed). The fork plays with its parent's seed, so changing nothing
    replays the parent."""

    after = forms.TypedChoiceField(
        coerce=int,
        label="Fork after",
        help_text="The fork keeps the turns up to this one and plays on from there.",
    )
    student = _model_choice("Student", "Plays the student from the fork point on.", True)
    teacher = _model_choice("Teacher", "Answers the student from the fork point on.", False)
    protocol = forms.ModelChoiceField(
        queryset=protocol_choices(),
        help_text="Its max turns bounds the fork's turns, the kept ones included.",
    )
    name = forms.CharField(max_length=200, required=False, help_text="Optional.")

    def __init__(self, *args: Any, points: Sequence[ForkPoint], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        after = self.fields["after"]
        assert isinstance(after, forms.ChoiceField)  # the form's own copy of the field above
        after.choices = [(point.index, point.label) for point in points]


class CounterfactualForm(forms.Form):
    """Replay the list's dialogues from turn t with another teacher (and, optionally, another
    student or protocol; left empty, the parents' run's)."""

    after_round = forms.IntegerField(
        min_value=1,
        max_value=MAX_TURNS,
        label="Replay from turn t",
        help_text="Each fork keeps its parent's turns through the student's reply of turn t; "
        "the new teacher answers that reply.",
    )
    teacher = _model_choice("Teacher", "The other teacher.", True)
    student = _model_choice("Student", "Empty: the parents' run's student.", False)
    protocol = forms.ModelChoiceField(
        queryset=protocol_choices(), required=False, help_text="Empty: the parents' run's."
    )
    name = forms.CharField(max_length=200, required=False, help_text="Optional.")
    filter = forms.CharField(required=False, widget=forms.HiddenInput)
