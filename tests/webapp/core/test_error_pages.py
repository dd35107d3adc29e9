"""Error pages: 403, 404 and 500 keep the site's look and navigation (500 with no request
context and no database), and a refused request is logged as one line, not a traceback."""

from __future__ import annotations

import logging
import sys

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.test import RequestFactory
from django.urls import get_resolver, reverse

from webapp.core.refusals import OneLineRefusals


@pytest.mark.django_db
def test_a_refusal_is_one_log_line_with_method_path_user_and_reason(
    annotator_client, annotator, caplog
) -> None:  # type: ignore[no-untyped-def]
    with caplog.at_level(logging.INFO, logger="django.request"):
        response = annotator_client.get(reverse("model_list") + "?retired=1")
    assert response.status_code == 403
    (record,) = [record for record in caplog.records if record.name == "django.request"]
    assert record.levelname == "WARNING"
    assert record.getMessage() == (
        f"refused GET /models/ for user {annotator.username}: Only researchers can do this."
    )
    assert record.exc_info is None
    assert "Traceback" not in caplog.text


def test_a_path_cannot_forge_a_log_line() -> None:
    request = RequestFactory().get("/models/%0Arefused GET / for user admin: forged")
    request.user = AnonymousUser()
    record = logging.LogRecord(
        "django.request", logging.WARNING, __file__, 1, "Forbidden", (), None
    )
    record.status_code, record.request = 403, request
    assert OneLineRefusals().filter(record)
    assert "\n" not in record.getMessage()
    assert record.getMessage().startswith("refused GET /models/\\nrefused")
    assert record.getMessage().endswith("for user anonymous: forbidden")


def test_the_line_survives_logging_configured_twice() -> None:
    # dictConfig adds a logger's filters again without removing the old ones.
    request = RequestFactory().get("/models/")
    request.user = AnonymousUser()
    record = logging.LogRecord(
        "django.request", logging.WARNING, __file__, 1, "Forbidden", (), None
    )
    record.status_code, record.request = 403, request
    try:
        raise PermissionDenied("Only researchers can do this.")
    except PermissionDenied:
        record.exc_info = sys.exc_info()
    assert OneLineRefusals().filter(record) and OneLineRefusals().filter(record)
    assert record.getMessage().endswith("anonymous: Only researchers can do this.")


@pytest.mark.django_db
def test_the_403_page_has_the_site_navigation_and_the_reason(annotator_client) -> None:  # type: ignore[no-untyped-def]
    response = annotator_client.get(reverse("model_list"))
    html = response.content.decode()
    assert response.status_code == 403
    assert 'class="topbar"' in html and f'href="{reverse("queue_list")}">My queues' in html
    assert 'id="error-reason">Only researchers can do this.' in html
    assert "dialab.css" in html


@pytest.mark.django_db
def test_the_404_page_has_the_site_navigation(researcher_client) -> None:  # type: ignore[no-untyped-def]
    response = researcher_client.get("/no/such/page/")
    html = response.content.decode()
    assert response.status_code == 404
    assert 'class="topbar"' in html and f'href="{reverse("run_list")}">Runs' in html
    assert "<code>/no/such/page/</code>" in html


def test_the_500_page_needs_neither_the_database_nor_a_request_context() -> None:
    # No django_db mark: any query here fails the test. The handler is the one urls.py uses.
    handler = get_resolver().resolve_error_handler(500)
    response = handler(RequestFactory().get("/runs/"))
    html = response.content.decode()
    assert response.status_code == 500
    assert 'class="topbar"' in html and 'href="/">Home</a>' in html
    assert "Something went wrong" in html and "dialab.css" in html
