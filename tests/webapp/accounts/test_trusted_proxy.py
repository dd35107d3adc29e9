"""Behind a reverse proxy the login throttle keys attempts by the client's address from the
header the proxy sets, but only where the operator named that header: otherwise a forged
X-Forwarded-For changes nothing (webapp.accounts.client_address)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

LIMIT = 3
PROXY = "10.0.0.1"  # every request arrives from the proxy


@pytest.fixture(autouse=True)
def throttle(settings):  # type: ignore[no-untyped-def]
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.DIALAB_TRUSTED_PROXY_HEADER = ""
    settings.DIALAB_TRUSTED_PROXY_COUNT = 1
    UserFactory(username="ada")


def attempt(forwarded_for: str, password: str = "wrong password") -> int:
    client = Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded_for)
    return client.post(reverse("login"), {"username": "ada", "password": password}).status_code


def lock_out(forwarded_for: str) -> None:
    statuses = [attempt(forwarded_for) for _ in range(LIMIT)]
    assert statuses == [200] * (LIMIT - 1) + [429]


def test_with_the_header_trusted_each_client_behind_the_proxy_is_throttled_alone(
    settings,  # type: ignore[no-untyped-def]
) -> None:
    settings.DIALAB_TRUSTED_PROXY_HEADER = "X-Forwarded-For"
    lock_out("203.0.113.7")
    assert attempt("203.0.113.7", PASSWORD) == 429  # locked out, right password or not
    assert attempt("198.51.100.9", PASSWORD) == 302  # another client: logs in


def test_only_the_entry_the_trusted_proxy_wrote_counts(settings) -> None:  # type: ignore[no-untyped-def]
    """The proxy appends the address it saw; what the client wrote to the left is ignored, so a
    locked-out client cannot escape by forging entries of its own."""
    settings.DIALAB_TRUSTED_PROXY_HEADER = "X-Forwarded-For"
    lock_out("203.0.113.7")
    assert attempt("1.2.3.4, 203.0.113.7", PASSWORD) == 429
    assert attempt("5.6.7.8, 203.0.113.7", PASSWORD) == 429


def test_with_two_trusted_proxies_the_second_entry_from_the_right_counts(settings) -> None:  # type: ignore[no-untyped-def]
    settings.DIALAB_TRUSTED_PROXY_HEADER = "X-Forwarded-For"
    settings.DIALAB_TRUSTED_PROXY_COUNT = 2
    lock_out("203.0.113.7, 10.0.0.9")
    assert attempt("forged, 203.0.113.7, 10.0.0.8", PASSWORD) == 429
    assert attempt("198.51.100.9, 10.0.0.9", PASSWORD) == 302


def test_by_default_a_forged_header_changes_nothing() -> None:
    lock_out("203.0.113.7")
    # Every request comes from the proxy's address; the header is not believed.
    assert attempt("198.51.100.9", PASSWORD) == 429
    assert attempt("", PASSWORD) == 429


def test_a_header_that_is_not_an_address_falls_back_to_the_connection(settings) -> None:  # type: ignore[no-untyped-def]
    settings.DIALAB_TRUSTED_PROXY_HEADER = "X-Forwarded-For"
    lock_out("not-an-address")
    assert attempt("", PASSWORD) == 429  # both keyed by the proxy's own address
