from __future__ import annotations

import re
from typing import Any

from django import forms

from webapp.accounts.models import User
from webapp.annotations.models import LabelQuestion, LabelSchema
from webapp.annotations.selectors import labellers


class SchemaForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = LabelSchema
        fields = ["name", "guidelines"]
        widgets = {"guidelines": forms.Textarea(attrs={"rows": 5})}


class QuestionForm(forms.ModelForm):  # type: ignore[type-arg]
    """Options are typed one per line (choices) or as ``1-5`` (a rating scale)."""

    options_text = forms.CharField(
        label="Options",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="Choices: one per line. Rating scale: min-max, e.g. 1-5. Others: leave empty.",
    )

    class Meta:
        model = LabelQuestion
        fields = ["text", "key", "kind", "target", "guidelines", "prefill", "optional"]
        widgets = {"guidelines": forms.Textarea(attrs={"rows": 4})}
        labels = {"optional": "Optional (annotators may leave it unanswered)"}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        instance = self.instance
        if instance.pk and not self.is_bound:
            if instance.kind == LabelQuestion.Kind.RATING and len(instance.options) == 2:
                self.initial["options_text"] = f"{instance.options[0]}-{instance.options[1]}"
            else:
                self.initial["options_text"] = "\n".join(str(o) for o in instance.options)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        kind, text = data.get("kind"), data.get("options_text", "")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if kind == LabelQuestion.Kind.RATING:
            match = re.fullmatch(r"\s*(-?\d+)\s*(?:-|–|,|\.\.)\s*(-?\d+)\s*", text or "1-5")
            if not match or int(match[1]) >= int(match[2]) or int(match[2]) - int(match[1]) > 8:
                self.add_error("options_text", "Give the scale as min-max, at most 9 values.")
            else:
                data["options"] = [int(match[1]), int(match[2])]
        elif kind in (LabelQuestion.Kind.SINGLE_CHOICE, LabelQuestion.Kind.MULTIPLE_CHOICE):
            if not 2 <= len(lines) <= 9 or len(set(lines)) != len(lines):
                self.add_error("options_text", "Give 2 to 9 distinct choices, one per line.")
            data["options"] = lines
        else:
            data["options"] = []
        if data.get("prefill") and kind != LabelQuestion.Kind.YES_NO:
            self.add_error("prefill", "Only a yes/no question can be pre-filled from a flag.")
        if data.get("prefill") and data.get("target") == LabelQuestion.Target.DIALOGUE:
            self.add_error("prefill", "The leak flag belongs to turns, not whole dialogues.")
        return data


class AnnotatorsField(forms.ModelMultipleChoiceField):  # type: ignore[type-arg]
    def label_from_instance(self, obj: User) -> str:
        return f"{obj.username} ({obj.get_role_display().lower()})"


MAX_ANNOTATORS_PER_ITEM = 20


class QueueForm(forms.Form):
    name = forms.CharField(max_length=200)
    schema = forms.ModelChoiceField(queryset=LabelSchema.objects.order_by("name"))
    annotators_per_item = forms.IntegerField(
        min_value=1,
        max_value=MAX_ANNOTATORS_PER_ITEM,
        initial=2,
        label="Annotators per item (k)",
        error_messages={
            "min_value": "Each item needs at least one annotator (k ≥ 1).",
            "max_value": f"At most {MAX_ANNOTATORS_PER_ITEM} annotators label an item (k), and "
            "no more than you choose below.",
        },
    )
    annotators = AnnotatorsField(queryset=labellers(), widget=forms.CheckboxSelectMultiple)
    filter_query = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Two labels an item, for agreement, where there are two people to give them: with one
        # (a demo, a lab of one), a default the form would refuse helps nobody.
        self.fields["annotators_per_item"].initial = max(1, min(2, labellers().count()))

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        chosen, per_item = data.get("annotators"), data.get("annotators_per_item")
        if chosen is not None and per_item is not None and per_item > len(chosen):
            self.add_error("annotators", f"Choose at least {per_item} annotators (k).")
        return data
