from __future__ import annotations

from django.contrib.auth.models import AbstractUser
from django.db import models


class User(AbstractUser):
    """A Dialab user. Researchers do everything; annotators only read and label."""

    class Role(models.TextChoices):
        RESEARCHER = "researcher", "Researcher"
        ANNOTATOR = "annotator", "Annotator"

    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANNOTATOR)

    @property
    def is_researcher(self) -> bool:
        return self.role == self.Role.RESEARCHER
