"""Form fields built from ``models_gpu.spec`` settings (a generator's knobs, training
hyperparameters): each field takes its type, bounds, choices, default and help from the one
``Setting`` that describes it, and the spec's own check then validates the whole."""

from __future__ import annotations

from typing import Any

from django import forms

from models_gpu.spec.settings import Setting

FIELD_TYPES: dict[str, type[forms.Field]] = {
    "int": forms.IntegerField,
    "float": forms.FloatField,
    "str": forms.CharField,
}


def setting_field(setting: Setting) -> forms.Field:
    """A form field for ``setting``, labelled with its name."""
    label = setting.name.replace("_", " ")
    common: dict[str, Any] = {"label": label, "initial": setting.default, "help_text": setting.help}
    if setting.kind == "bool":
        return forms.BooleanField(required=False, **common)
    if setting.kind == "choice":
        return forms.ChoiceField(choices=[(c, c) for c in setting.choices], **common)
    if setting.kind == "str":
        max_length = int(setting.high) if setting.high is not None else None
        return forms.CharField(max_length=max_length, **common)
    # An int's or a float's field: both take bounds, which a Field in general does not.
    bounds: dict[str, Any] = {"min_value": setting.low, "max_value": setting.high}
    return FIELD_TYPES[setting.kind](**bounds, **common)
