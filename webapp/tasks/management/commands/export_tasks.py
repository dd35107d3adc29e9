"""Write a task set as Dialab JSONL: manage.py export_tasks <task_set_id> <path> ("-": stdout)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.tasks.exporting import task_set_jsonl_lines
from webapp.tasks.models import TaskSet


class Command(BaseCommand):
    help = "Export a task set to JSONL (one task per line, every field)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("task_set_id", type=int)
        parser.add_argument("path")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            task_set = TaskSet.objects.get(pk=options["task_set_id"])
        except TaskSet.DoesNotExist:
            raise CommandError(f"No task set with id {options['task_set_id']}") from None
        count = 0
        if options["path"] == "-":
            for line in task_set_jsonl_lines(task_set=task_set):
                sys.stdout.write(line)
                count += 1
            return
        with Path(options["path"]).open("w", encoding="utf-8") as out:
            for line in task_set_jsonl_lines(task_set=task_set):
                out.write(line)
                count += 1
        self.stderr.write(f"Wrote {count} tasks to {options['path']}.")
