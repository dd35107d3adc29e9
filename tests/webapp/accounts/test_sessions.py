"""Sessions: in the database, read through Redis when CACHE_URL names one (scripts/test.sh's
PostgreSQL + Redis run); logging out ends them in both places."""

from __future__ import annotations

from importlib import import_module
from typing import Any

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.core.cache import cache
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_a_session_is_stored_where_the_settings_say_and_ends_at_logout(
    client: Any, researcher: Any
) -> None:
    client.force_login(researcher)
    key = client.session.session_key
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key=key)
    assert Session.objects.filter(session_key=key).exists()  # always written to the database
    if settings.CACHE_URL:
        assert settings.SESSION_ENGINE == "django.contrib.sessions.backends.cached_db"
        assert cache.get(store.cache_key)["_auth_user_id"] == str(researcher.pk)
    else:
        assert settings.SESSION_ENGINE == "django.contrib.sessions.backends.db"
    assert client.get(reverse("dialogue_list")).status_code == 200

    client.post(reverse("logout"))
    assert not Session.objects.filter(session_key=key).exists()
    if settings.CACHE_URL:
        assert cache.get(store.cache_key) is None
    assert client.get(reverse("dialogue_list")).status_code == 302  # to the login page
