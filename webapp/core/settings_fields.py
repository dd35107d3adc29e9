"""Form fields built from ``models_gpu.spec`` settings (a generator's knobs, training
hyperparameters): each field takes its type, bounds, choices, default and help from the one
``Setting`` that describes it, and the spec's own check then validates the whole."""

from __future__ import annotations

from django import forms

from models_gpu.spec.settings import Setting

FIELD_TYPES = {"int": forms.IntegerField, "float": forms.FloatField, "str": forms.CharField}


def setting_field(setting: Setting) -> forms.Field:
    """A form field for ``setting``, labelled with its name."""
    label = setting.name.replace("_", " ")
    common = {"label": label, "initial": setting.default, "help_text": setting.help}
    if setting.kind == "bool":
        return forms.BooleanField(required=False, **common)
    if setting.kind == "choice":
        return forms.ChoiceField(choices=[(c, c) for c in setting.choices], **common)
    if setting.kind == "str":
        bounds = {"max_length": int(setting.high)} if setting.high is not None else {}
        return forms.CharField(**bounds, **common)
    return FIELD_TYPES[setting.kind](min_value=setting.low, max_value=setting.high, **common)
