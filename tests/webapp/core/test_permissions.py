"""Every page needs a login; annotators read and label but cannot author or launch."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import TaskSetFactory
from webapp.core.templatetags.dialab import plotly_js_url

pytestmark = pytest.mark.django_db

RESEARCHER_ONLY = [
    "task_set_list", "task_set_create", "model_list", "protocol_list", "run_create", "run_list",
    "schema_list", "queue_create", "people",
]  # fmt: skip
ANY_USER = ["home", "dialogue_list", "queue_list"]


@pytest.mark.parametrize("name", RESEARCHER_ONLY + ANY_USER)
def test_anonymous_users_are_sent_to_login(client, name: str) -> None:  # type: ignore[no-untyped-def]
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", RESEARCHER_ONLY)
def test_annotators_cannot_author_or_launch(annotator_client, name: str) -> None:  # type: ignore[no-untyped-def]
    assert annotator_client.get(reverse(name)).status_code == 403


def test_annotators_cannot_open_or_post_to_a_task_set(annotator_client) -> None:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    url = reverse("task_set_detail", args=[task_set.pk])
    assert annotator_client.get(url).status_code == 403
    assert annotator_client.post(url, {"prompt": "x", "answer": "1"}).status_code == 403
    assert not task_set.tasks.exists()


@pytest.mark.parametrize("name", ANY_USER)
def test_annotators_open_their_pages(annotator_client, name: str) -> None:  # type: ignore[no-untyped-def]
    response = annotator_client.get(reverse(name), follow=True)
    assert response.status_code == 200
    assert "Runs</a>" not in response.content.decode(), "annotators are not shown run pages"


def test_an_annotators_home_is_their_queues(annotator_client) -> None:  # type: ignore[no-untyped-def]
    assert annotator_client.get(reverse("home"))["Location"] == reverse("queue_list")


@pytest.mark.parametrize("name", RESEARCHER_ONLY + ANY_USER)
def test_researchers_open_every_page(researcher_client, name: str) -> None:  # type: ignore[no-untyped-def]
    assert researcher_client.get(reverse(name)).status_code == 200


def test_health_check_needs_no_login(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_login_page_and_plotly_are_served(client) -> None:  # type: ignore[no-untyped-def]
    assert client.get(reverse("login")).status_code == 200
    response = client.get(plotly_js_url())
    assert response.status_code == 200
    assert b"plotly" in b"".join(response.streaming_content)[:2000].lower()


def test_only_the_known_public_views_skip_the_login_redirect() -> None:
    """The API checks its own credentials, so its views skip the site's login redirect
    (webapp/api/api.py); nothing else may, beyond these."""
    from django.urls import URLResolver, get_resolver

    def walk(patterns, prefix=""):  # type: ignore[no-untyped-def]
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern), pattern.callback

    public = {
        path
        for path, view in walk(get_resolver().url_patterns)
        if getattr(view, "login_required", True) is False and not path.startswith("api/v1/")
    }
    assert public == {"healthz", "favicon.ico", "docs/", "docs/<path:path>", "login/"}
