"""Import tasks into a new task set from the shell, through the same code as the web import.

    manage.py import_tasks data.csv --name "GSM" --map prompt=question --map answer=solution \
        --default verifier_kind=numeric
    manage.py import_tasks export.jsonl --format dialab --name "Copy"
    manage.py import_tasks --humaneval
    manage.py import_tasks --lost-in-conversation sharded.json --map prompt=question
    manage.py import_tasks --hf-dataset ./my_dataset_dir --split test --map prompt=question ...
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.imports.mapping import FieldMapping
from webapp.tasks.imports.preview import lic_guess, preview
from webapp.tasks.imports.readers import read_json, read_jsonl
from webapp.tasks.imports.services import import_into_task_set, import_provenance
from webapp.tasks.imports.sources import (
    ImportSource,
    file_source,
    guess_format,
    hf_dataset_source,
    humaneval_source,
)


def _pairs(values: list[str], option: str) -> dict[str, str]:
    pairs = {}
    for value in values:
        name, sep, column = value.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"{option} takes FIELD=VALUE, got {value!r}")
        pairs[name.strip()] = column.strip()
    return pairs


class Command(BaseCommand):
    help = "Import tasks from a file, HumanEval, Lost-in-Conversation or a HF dataset folder."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", nargs="?", help="A JSONL, JSON or CSV file.")
        parser.add_argument("--format", choices=["jsonl", "json", "csv", "dialab"])
        parser.add_argument("--name", help="Name of the new task set (default: from the source).")
        parser.add_argument("--map", action="append", default=[], metavar="FIELD=COLUMN")
        parser.add_argument("--default", action="append", default=[], metavar="FIELD=VALUE")
        parser.add_argument("--humaneval", action="store_true")
        parser.add_argument("--lost-in-conversation", metavar="FILE")
        parser.add_argument("--hf-dataset", metavar="NAME_OR_PATH")
        parser.add_argument("--split", default="")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        chosen = [
            bool(options["path"]),
            options["humaneval"],
            bool(options["lost_in_conversation"]),
            bool(options["hf_dataset"]),
        ]
        if sum(chosen) != 1:
            raise CommandError(
                "Give exactly one of: a file path, --humaneval, --lost-in-conversation FILE, "
                "--hf-dataset NAME_OR_PATH."
            )
        columns = _pairs(options["map"], "--map")
        defaults = _pairs(options["default"], "--default")
        stream = None
        try:
            if options["humaneval"]:
                source: ImportSource = humaneval_source()
                name = options["name"] or "HumanEval"
                provenance = import_provenance(source="humaneval")
            elif options["hf_dataset"]:
                mapping = FieldMapping(columns, defaults)
                source = hf_dataset_source(
                    options["hf_dataset"], split=options["split"], mapping=mapping
                )
                name = options["name"] or Path(options["hf_dataset"]).name
                provenance = import_provenance(
                    source="hf_dataset",
                    dataset=options["hf_dataset"],
                    split=options["split"],
                    mapping=columns,
                    defaults=defaults,
                )
            else:
                path = Path(options["path"] or options["lost_in_conversation"])
                if not path.is_file():
                    raise CommandError(f"No such file: {path}")
                file_format = options["format"] or guess_format(path.name)
                stream = path.open("rb")
                if options["lost_in_conversation"]:
                    file_format = "jsonl" if file_format == "jsonl" else "json"
                    if path.stat().st_size:
                        reader = read_jsonl if file_format == "jsonl" else read_json
                        unit = "line" if file_format == "jsonl" else "item"
                        found, _records = preview(reader(stream), unit=unit)
                        stream.seek(0)
                        columns = {**lic_guess(found), **columns}
                word = "column" if file_format == "csv" else "key"
                mapping = FieldMapping(columns, defaults, word)
                source = file_source(stream, file_format=file_format, mapping=mapping)
                name = options["name"] or path.stem
                provenance = import_provenance(
                    source="lost_in_conversation" if options["lost_in_conversation"] else "upload",
                    file=path.name,
                    file_format=file_format,
                    mapping=columns if file_format != "dialab" else {},
                    defaults=defaults,
                )
            task_set = self._run(source, name, provenance, show_progress=not options["no_progress"])
        except TaskImportError as error:
            raise CommandError(f"Nothing imported: {error}") from None
        finally:
            if stream is not None:
                stream.close()
        count = task_set.tasks.count()
        self.stdout.write(f"Imported {count} tasks into task set {task_set.pk} ({task_set}).")

    def _run(
        self, source: ImportSource, name: str, provenance: dict[str, Any], *, show_progress: bool
    ) -> Any:
        from tqdm import tqdm

        with tqdm(
            total=source.total,
            unit="task",
            file=sys.stderr,
            disable=not show_progress,
            desc="importing",
        ) as bar:
            last = 0

            def advance(done: int) -> None:
                nonlocal last
                bar.update(done - last)
                last = done

            return import_into_task_set(
                source=source, task_set_name=name, provenance=provenance, on_progress=advance
            )
