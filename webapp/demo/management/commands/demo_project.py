from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from webapp.accounts.services import DEMO_USERNAME
from webapp.demo.services import DEMO_PASSWORD, demo_house_run_create, demo_project_create


class Command(BaseCommand):
    help = (
        "Create the demo project (a researcher login, scripted models, arithmetic and sharded "
        "tasks, runs), and the house model's run once `build_house_model` has registered it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tasks", type=int, default=40, help="Arithmetic tasks to create.")
        parser.add_argument("--no-run", action="store_true", help="Do not launch the demo runs.")

    def handle(self, *args: Any, tasks: int, no_run: bool, **options: Any) -> None:
        project = demo_project_create(task_count=tasks, launch_run=not no_run)
        for run in (project.run, project.sharded_run):
            if run is not None:
                self.stdout.write(f"Launched demo run #{run.pk}: {run.name}.")
        house_run = None if no_run else demo_house_run_create()
        if house_run is not None:
            self.stdout.write(f"Launched demo run #{house_run.pk}: {house_run.name}.")
        self.stdout.write(
            self.style.SUCCESS(f"Demo project ready. Log in as {DEMO_USERNAME} / {DEMO_PASSWORD}")
        )
