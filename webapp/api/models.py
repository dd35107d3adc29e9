"""Personal API tokens: a person's scripts act as that person, with their role and scope."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A token is shown once, when it is made (``tokens.issue_token``); only its id and the
    SHA-256 of the whole token are kept, so a leaked database does not leak tokens."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What it is for: a notebook, CI, ...")
    key_id = models.CharField(max_length=16, unique=True, help_text="The token's public part.")
    secret_hash = models.CharField(max_length=64, help_text="SHA-256 of the whole token, hex.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="unique_api_token_name")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.user})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
