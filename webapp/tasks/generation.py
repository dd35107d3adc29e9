"""Procedural task generation, web side: the form, and the families' knobs.

The generators themselves live in models_gpu.generators, which the web process may not import;
``GENERATOR_KNOBS`` mirrors their description so forms can be built here, and a test checks the
mirror against the real thing.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.db import transaction

from webapp.accounts.models import User
from webapp.core.dispatch import enqueue_on_commit
from webapp.tasks.import_claims import task_name
from webapp.tasks.models import TaskImport

GENERATOR_KNOBS: dict[str, dict[str, Any]] = {
    "arithmetic": {
        "help": "One binary operation on two random numbers; numeric verifier.",
        "difficulty": "digits per operand",
        "knobs": [
            {
                "name": "digits",
                "type": "int",
                "default": 2,
                "min": 1,
                "max": 12,
                "help": "Digits per operand.",
            },
            {
                "name": "operations",
                "type": "str",
                "default": "+-*",
                "min": 1,
                "max": 3,
                "help": "Operations to draw from, any of '+-*' (min/max: length).",
            },
        ],
    },
    "guess_number": {
        "help": "Guess a hidden integer with higher/lower feedback; numeric "
        "verifier. Single-turn accuracy is about 1/(high-low+1).",
        "difficulty": "log2 of the range size (turns binary search needs)",
        "knobs": [
            {
                "name": "low",
                "type": "int",
                "default": 1,
                "min": -1000000,
                "max": 1000000,
                "help": "Smallest possible hidden number.",
            },
            {
                "name": "high",
                "type": "int",
                "default": 100,
                "min": -1000000,
                "max": 1000000,
                "help": "Largest possible hidden number (more than low).",
            },
        ],
    },
    "maze": {
        "help": "Find a path from S to G in a text grid; maze verifier. Always solvable.",
        "difficulty": "length of the shortest path",
        "knobs": [
            {
                "name": "rows",
                "type": "int",
                "default": 6,
                "min": 3,
                "max": 30,
                "help": "Grid height.",
            },
            {
                "name": "cols",
                "type": "int",
                "default": 6,
                "min": 3,
                "max": 30,
                "help": "Grid width.",
            },
            {
                "name": "wall_density",
                "type": "float",
                "default": 0.3,
                "min": 0.0,
                "max": 0.7,
                "help": "Chance that a cell off the guaranteed corridor is a wall.",
            },
        ],
    },
    "code_guess": {
        "help": "Mastermind: guess a hidden digit code, told digits right in place and "
        "misplaced; code_guess verifier. Single-turn accuracy is about "
        "1/search space.",
        "difficulty": "log2 of the number of possible codes",
        "knobs": [
            {
                "name": "length",
                "type": "int",
                "default": 4,
                "min": 2,
                "max": 8,
                "help": "Digits in the code.",
            },
            {
                "name": "allow_repeats",
                "type": "bool",
                "default": False,
                "min": None,
                "max": None,
                "help": "Whether a digit may occur more than once.",
            },
        ],
    },
}

MAX_GENERATED_TASKS = 100_000
FIELD_TYPES = {"int": forms.IntegerField, "float": forms.FloatField, "str": forms.CharField}


def _knob_field(knob: dict[str, Any]) -> forms.Field:
    if knob["type"] == "bool":
        return forms.BooleanField(required=False, initial=knob["default"], help_text=knob["help"])
    field_class = FIELD_TYPES[knob["type"]]
    bounds = (
        {"min_length": knob["min"], "max_length": knob["max"]}
        if knob["type"] == "str"
        else {"min_value": knob["min"], "max_value": knob["max"]}
    )
    return field_class(initial=knob["default"], help_text=knob["help"], **bounds)


class GenerationForm(forms.Form):
    """Generate a new task set: a family, how many tasks, a seed, and the family's knobs."""

    family = forms.ChoiceField(
        choices=[(name, name.replace("_", " ")) for name in GENERATOR_KNOBS],
        help_text="Changing it shows that family's settings.",
    )
    count = forms.IntegerField(min_value=1, max_value=MAX_GENERATED_TASKS, initial=100)
    seed = forms.IntegerField(min_value=0, max_value=2**31 - 1, initial=0)
    name = forms.CharField(max_length=200, required=False, help_text="Defaults to the family.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        family = (
            self.data.get("family") or self.initial.get("family") or next(iter(GENERATOR_KNOBS))
        )
        if family not in GENERATOR_KNOBS:
            family = next(iter(GENERATOR_KNOBS))
        self.family_name = family
        self.family_help = GENERATOR_KNOBS[family]["help"]
        for knob in GENERATOR_KNOBS[family]["knobs"]:
            self.fields[f"knob_{knob['name']}"] = _knob_field(knob)
            self.fields[f"knob_{knob['name']}"].label = knob["name"].replace("_", " ")

    def knobs(self) -> dict[str, Any]:
        return {
            name.removeprefix("knob_"): value
            for name, value in self.cleaned_data.items()
            if name.startswith("knob_")
        }

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
    """Record a generation job (an import whose source is a generator) and send it to a worker."""
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
