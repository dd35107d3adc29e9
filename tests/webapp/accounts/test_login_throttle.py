"""Guessing passwords meets a lockout (django-axes): after AXES_FAILURE_LIMIT wrong passwords for
one username from one address, even the right password is refused until the cool-off passes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

LIMIT = 5
COOL_OFF = timedelta(minutes=15)
WRONG_PASSWORD = "Please enter a correct username and password."


@pytest.fixture(autouse=True)
def throttle(settings):  # type: ignore[no-untyped-def]
    """The shipped defaults, stated here so the test does not depend on the environment."""
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.AXES_COOLOFF_TIME = COOL_OFF


def log_in(client: Client, username: str, password: str = PASSWORD):  # type: ignore[no-untyped-def]
    return client.post(reverse("login"), {"username": username, "password": password})


def logged_in(client: Client) -> bool:
    return client.get(reverse("home")).status_code == 200


def lock_out(client: Client, username: str) -> None:
    for attempt in range(1, LIMIT):
        response = log_in(client, username, "wrong password")
        assert response.status_code == 200, f"attempt {attempt} is an ordinary wrong password"
        assert WRONG_PASSWORD in response.content.decode()
    assert log_in(client, username, "wrong password").status_code == 429


def test_a_wrong_password_shows_one_message(client: Client) -> None:
    UserFactory(username="ada")
    page = log_in(client, "ada", "wrong password").content.decode()
    assert page.count(WRONG_PASSWORD) == 1
    assert "didn't match" not in page  # the template's own second message, gone
    assert page.count('class="error"') + page.count('class="errorlist') == 1


def test_the_right_password_is_refused_after_too_many_wrong_ones(client: Client) -> None:
    ada = UserFactory(username="ada")
    lock_out(client, ada.username)

    response = log_in(client, ada.username)
    page = response.content.decode()
    assert response.status_code == 429
    assert "Too many log-in attempts" in page
    assert "Try again after" in page and "15 minutes from now" in page
    assert response["Retry-After"] == str(15 * 60)
    assert not logged_in(client)


def test_thirty_fast_guesses_are_all_refused_past_the_limit(client: Client) -> None:
    """The attack as reported: 30 wrong passwords in a row used to meet no throttle."""
    UserFactory(username="ada")
    statuses = [log_in(client, "ada", f"guess {n}").status_code for n in range(30)]
    assert statuses == [200] * (LIMIT - 1) + [429] * (30 - LIMIT + 1)


def test_another_user_and_another_address_are_unaffected(client: Client) -> None:
    UserFactory(username="ada")
    grace = UserFactory(username="grace")
    lock_out(client, "ada")

    assert log_in(client, grace.username).status_code == 302
    assert logged_in(client)
    elsewhere = Client(REMOTE_ADDR="10.0.0.2")
    assert log_in(elsewhere, "ada").status_code == 302
    assert logged_in(elsewhere)


def test_a_reset_unlocks_at_once(client: Client) -> None:
    UserFactory(username="ada")
    lock_out(client, "ada")
    assert log_in(client, "ada").status_code == 429

    call_command("axes_reset_username", "ada")
    assert log_in(client, "ada").status_code == 302
    assert logged_in(client)


def test_the_lockout_ends_after_the_cool_off(client: Client) -> None:
    UserFactory(username="ada")
    lock_out(client, "ada")

    # As if the last attempt had been a cool-off and a minute ago.
    AccessAttempt.objects.update(attempt_time=timezone.now() - COOL_OFF - timedelta(minutes=1))
    assert log_in(client, "ada").status_code == 302


def test_a_successful_login_clears_earlier_typos(client: Client) -> None:
    UserFactory(username="ada")
    for _ in range(LIMIT - 1):
        log_in(client, "ada", "typo")
    assert log_in(client, "ada").status_code == 302
    client.post(reverse("logout"))
    for _ in range(LIMIT - 1):
        assert log_in(client, "ada", "typo").status_code == 200
    assert log_in(client, "ada").status_code == 302


def test_force_login_is_untouched(client: Client) -> None:
    """Tests log people in with force_login: the throttle's backend logs no one in, so that
    goes on using ModelBackend."""
    client.force_login(UserFactory())
    assert logged_in(client)
