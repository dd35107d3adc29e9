from __future__ import annotations

from django.contrib.auth.forms import BaseUserCreationForm

from webapp.accounts.models import User


class PersonForm(BaseUserCreationForm):  # type: ignore[type-arg]
    """A new account with its role; the password is checked by the configured validators."""

    class Meta:
        model = User
        fields = ["username", "email", "role"]
