from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from webapp.accounts.management.commands import create_researcher
from webapp.accounts.models import User


class Command(create_researcher.Command):
    help = (
        "Create an account with a role (--role annotator by default, or researcher). The "
        "password comes from --password, the DIALAB_PASSWORD environment variable, or a prompt."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--role", choices=User.Role.values, default=User.Role.ANNOTATOR)

    def handle(self, *args: Any, **options: Any) -> None:
        self.role = options.pop("role")
        super().handle(*args, **options)
