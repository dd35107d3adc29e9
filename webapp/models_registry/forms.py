from __future__ import annotations

from typing import Any

from django import forms

from webapp.models_registry.models import ModelSpec

# What the workers can run today; the rest of ModelSpec.Backend arrives with the model backends.
RUNNABLE_BACKENDS = (ModelSpec.Backend.SCRIPTED,)
# Mirrors the policies in models_gpu.backends.scripted (the web side may not import model code).
SCRIPTED_POLICIES = ("arithmetic-student", "feedback-teacher")


class ModelSpecForm(forms.ModelForm):
    backend = forms.ChoiceField(
        choices=[(b.value, b.label) for b in RUNNABLE_BACKENDS], initial=ModelSpec.Backend.SCRIPTED
    )
    generation_params = forms.JSONField(
        required=False,
        initial=dict,
        help_text='A JSON object, e.g. {"temperature": 0.7, "max_new_tokens": 256}.',
        widget=forms.Textarea(attrs={"rows": 3}),
    )

    class Meta:
        model = ModelSpec
        fields = ["name", "description", "backend", "location", "generation_params"]
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def clean_generation_params(self) -> dict[str, Any]:
        params = self.cleaned_data.get("generation_params") or {}
        if not isinstance(params, dict):
            raise forms.ValidationError("Generation parameters must be a JSON object.")
        return params

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if (
            cleaned.get("backend") == ModelSpec.Backend.SCRIPTED
            and cleaned.get("location") not in SCRIPTED_POLICIES
        ):
            self.add_error(
                "location",
                f"A scripted model names its policy: one of {', '.join(SCRIPTED_POLICIES)}.",
            )
        return cleaned
