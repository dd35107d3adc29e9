from __future__ import annotations

import getpass
import os
from typing import Any

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.accounts.models import User
from webapp.accounts.services import user_create


class Command(BaseCommand):
    role: str = User.Role.RESEARCHER  # a subclass sets it from --role
    help = (
        "Create a researcher account (researchers can do everything). The password comes from "
        "--password, the DIALAB_PASSWORD environment variable, or a prompt."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--email", default="")
        parser.add_argument("--password", default=None)

    def handle(
        self, *args: Any, username: str, email: str, password: str | None, **options: Any
    ) -> None:
        if User.objects.filter(username=username).exists():
            raise CommandError(f"A user named {username!r} already exists.")
        password = password or os.environ.get("DIALAB_PASSWORD") or self._prompt_password()
        try:
            validate_password(password, User(username=username, email=email))
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from None
        user_create(username=username, password=password, email=email, role=self.role)
        label = User.Role(self.role).label.lower()
        self.stdout.write(self.style.SUCCESS(f"Created {label} {username!r}."))

    def _prompt_password(self) -> str:
        if not os.isatty(0):
            raise CommandError("No password given: use --password or DIALAB_PASSWORD.")
        first = getpass.getpass("Password: ")
        if first != getpass.getpass("Password (again): "):
            raise CommandError("The passwords differ.")
        return first
