"""The import pages' forms: choose a source, then map its columns to task fields."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.imports.mapping import MAPPABLE_FIELDS, FieldMapping
from webapp.tasks.imports.sources import check_size, guess_format
from webapp.tasks.models import Task, TaskImport

FORMAT_CHOICES = [
    ("", "Detect from the file name"),
    ("jsonl", "JSONL (one JSON object per line)"),
    ("json", "JSON (an array, or an object holding a list)"),
    ("csv", "CSV with a header row"),
    ("dialab", "Dialab JSONL (an export; no mapping needed)"),
]
NEEDS_FILE = (TaskImport.Source.UPLOAD, TaskImport.Source.LOST_IN_CONVERSATION)


class ImportStartForm(forms.Form):
    task_set_name = forms.CharField(max_length=200, label="New task set name")
    source = forms.ChoiceField(choices=TaskImport.Source.choices, initial=TaskImport.Source.UPLOAD)
    file = forms.FileField(
        required=False,
        help_text=f"For uploads and Lost-in-Conversation; at most "
        f"{settings.DIALAB_MAX_UPLOAD_BYTES // 2**20} MiB, each record (a line, a JSON item, "
        f"a CSV row) at most {settings.DIALAB_MAX_RECORD_BYTES // 2**20} MiB and each task "
        f"field at most {settings.DIALAB_MAX_FIELD_CHARS:,} characters.",
    )
    file_format = forms.ChoiceField(choices=FORMAT_CHOICES, required=False)
    dataset = forms.CharField(
        max_length=500,
        required=False,
        help_text="Hugging Face datasets: a local folder (save_to_disk or data files).",
    )
    split = forms.CharField(max_length=100, required=False, help_text="Default: train.")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        source = cleaned.get("source")
        upload = cleaned.get("file")
        if source in NEEDS_FILE:
            if upload is None:
                self.add_error("file", "Choose a file to import.")
                return cleaned
            try:
                check_size(upload.size)
            except TaskImportError as error:
                self.add_error("file", f"This file is too large: {error}.")
                return cleaned
            if upload.size == 0:
                self.add_error("file", "The file is empty: no tasks to import.")
                return cleaned
            file_format = cleaned.get("file_format") or guess_format(upload.name)
            if source == TaskImport.Source.LOST_IN_CONVERSATION and not cleaned.get("file_format"):
                file_format = "jsonl" if file_format == "jsonl" else "json"
            if file_format not in {value for value, _label in FORMAT_CHOICES if value}:
                self.add_error(
                    "file_format", f"Cannot tell the format of {upload.name!r}: choose one."
                )
            cleaned["file_format"] = file_format
        elif source == TaskImport.Source.HF_DATASET and not cleaned.get("dataset"):
            self.add_error("dataset", "Name a dataset folder.")
        return cleaned


class MappingForm(forms.Form):
    """One select per task field, listing the columns found in the source; and defaults."""

    default_verifier_kind = forms.ChoiceField(
        choices=[("", "— (code with tests, else exact)"), *Task.VerifierKind.choices],
        required=False,
        label="Default verifier",
    )
    default_domain = forms.CharField(max_length=64, required=False, label="Default domain")

    def __init__(
        self,
        *args: Any,
        columns: list[str],
        column_word: str = "key",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.columns = columns
        self.column_word = column_word
        choices = [("", "—")] + [(column, column) for column in columns]
        for name in reversed(MAPPABLE_FIELDS):
            self.fields = {
                f"map_{name}": forms.ChoiceField(
                    choices=choices,
                    required=False,
                    label=name.replace("_", " ").capitalize(),
                ),
                **self.fields,
            }

    def mapping(self) -> FieldMapping:
        data = self.cleaned_data
        columns = {name: data.get(f"map_{name}", "") for name in MAPPABLE_FIELDS}
        defaults = {
            "verifier_kind": data.get("default_verifier_kind", ""),
            "domain": data.get("default_domain", ""),
        }
        return FieldMapping(
            {name: column for name, column in columns.items() if column},
            {name: value for name, value in defaults.items() if value},
            self.column_word,
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not self.errors:
            for problem in self.mapping().problems():
                self.add_error(None, problem[0].upper() + problem[1:] + ".")
        return cleaned

    def mapping_fields(self) -> list[forms.BoundField]:
        return [self[f"map_{name}"] for name in MAPPABLE_FIELDS]
