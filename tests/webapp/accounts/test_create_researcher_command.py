"""``manage.py create_researcher``: a researcher account, its password from the option or the
environment, refused when the name is taken or the password too short."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from webapp.accounts.models import User

pytestmark = pytest.mark.django_db


def test_create_researcher(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    call_command("create_researcher", "grace", "--password", "a-long-enough-passphrase")
    grace = User.objects.get(username="grace")
    assert grace.is_researcher and grace.check_password("a-long-enough-passphrase")
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_researcher", "grace", "--password", "another-passphrase")
    with pytest.raises(CommandError, match="too short"):
        call_command("create_researcher", "linus", "--password", "abc")
    monkeypatch.setenv("DIALAB_PASSWORD", "from-the-environment-42")
    call_command("create_researcher", "ken")
    assert User.objects.get(username="ken").check_password("from-the-environment-42")
