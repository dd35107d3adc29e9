"""Procedural task generation, web side: the form and the service that sends the job.

The families and their knobs are described once, in ``models_gpu.spec.generators``; the form is
built from that description and validates through it.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.db import transaction

from models_gpu.spec.generators import FAMILIES, MAX_GENERATED_TASKS, generator_settings
from webapp.accounts.models import User
from webapp.core.dispatch import enqueue_on_commit
from webapp.core.settings_fields import setting_field
from webapp.tasks.imports.claims import task_name
from webapp.tasks.models import TaskImport


class GenerationForm(forms.Form):
    """Generate a new task set: a family, how many tasks, a seed, and the family's knobs."""

    family = forms.ChoiceField(
        choices=[(name, name.replace("_", " ")) for name in FAMILIES],
        help_text="Changing it shows that family's settings.",
    )
    count = forms.IntegerField(min_value=1, max_value=MAX_GENERATED_TASKS, initial=100)
    seed = forms.IntegerField(min_value=0, max_value=2**31 - 1, initial=0)
    name = forms.CharField(max_length=200, required=False, help_text="Defaults to the family.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        family = self.data.get("family") or self.initial.get("family") or next(iter(FAMILIES))
        if family not in FAMILIES:
            family = next(iter(FAMILIES))
        self.family_name = family
        self.family_help = FAMILIES[family].help
        for knob in FAMILIES[family].knobs:
            self.fields[f"knob_{knob.name}"] = setting_field(knob)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not self.errors:
            try:
                generator_settings(self.family_name, self.knobs())
            except ValueError as error:
                for problem in getattr(error, "problems", [str(error)]):
                    self.add_error(None, problem)
        return cleaned

    def knobs(self) -> dict[str, Any]:
        return {
            name.removeprefix("knob_"): value
            for name, value in self.cleaned_data.items()
            if name.startswith("knob_")
        }

    def job_fields(self) -> dict[str, Any]:
        """The cleaned data as ``generation_create`` takes it."""
        data = self.cleaned_data
        return {
            "family": data["family"], "count": data["count"], "seed": data["seed"],
            "knobs": self.knobs(), "task_set_name": self.task_set_name(),
        }  # fmt: skip

    def task_set_name(self) -> str:
        data = self.cleaned_data
        return (
            data["name"]
            or f"{data['family'].replace('_', ' ')} ({data['count']}, seed {data['seed']})"
        )


def generation_create(
    *,
    family: str,
    count: int,
    seed: int,
    knobs: dict[str, Any],
    task_set_name: str,
    created_by: User | None,
) -> TaskImport:
    """Record a generation job (an import whose source is a generator) and send it to a worker.
    ValueError naming each problem when the family or its knobs are wrong."""
    knobs = generator_settings(family, knobs)
    with transaction.atomic():
        task_import = TaskImport.objects.create(
            source=TaskImport.Source.GENERATOR,
            task_set_name=task_set_name,
            dataset=family,
            parameters={"count": count, "seed": seed, "knobs": knobs},
            progress_total=count,
            status=TaskImport.Status.PENDING,
            created_by=created_by,
        )
        enqueue_on_commit(task_name(task_import), task_import.pk)
    return task_import
