from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.imports.services import generator_provenance, import_into_task_set
from workers.task_imports import generated_tasks_source


def _knob(text: str) -> tuple[str, Any]:
    name, sep, raw = text.partition("=")
    if not sep:
        raise CommandError(f"--knob takes NAME=VALUE, got {text!r}")
    try:
        value = json.loads(raw)  # 8, 0.3, true, "+-"
    except json.JSONDecodeError:
        value = raw  # a bare string such as +-*
    return name.strip(), value


class Command(BaseCommand):
    help = (
        "Generate a task set from a procedural family (arithmetic, guess_number, maze, "
        "code_guess), e.g. `generate_tasks maze 500 --seed 1 --knob rows=8 --knob cols=8`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("family")
        parser.add_argument("count", type=int)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--knob", action="append", default=[], metavar="NAME=VALUE")
        parser.add_argument("--name", default="", help="Task set name (default: from family).")

    def handle(self, *args: Any, family: str, count: int, seed: int, **options: Any) -> None:
        knobs = dict(_knob(text) for text in options["knob"])
        name = options["name"] or f"{family.replace('_', ' ')} ({count}, seed {seed})"
        try:
            source = generated_tasks_source(family=family, count=count, seed=seed, knobs=knobs)
            # The knobs are valid once the generator took them; the set records all of them.
            provenance = generator_provenance(family=family, count=count, seed=seed, knobs=knobs)
            with tqdm(total=count, unit="task", disable=None) as bar:
                task_set = import_into_task_set(
                    source=source,
                    task_set_name=name,
                    provenance=provenance,
                    on_progress=lambda done: bar.update(done - bar.n),
                )
        except TaskImportError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            self.style.SUCCESS(f"Created task set #{task_set.pk} {task_set} with {count} tasks.")
        )
