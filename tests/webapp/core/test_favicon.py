"""The icon: our own SVG, linked from every page, and /favicon.ico answered (it was a 404 in
the log of every page a browser opened on its own)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.templatetags.static import static
from django.urls import reverse

pytestmark = pytest.mark.django_db

ICON = "dialab/favicon.svg"


def test_favicon_ico_redirects_to_our_icon_without_a_login(client: Any) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"] == static(ICON)
    assert "max-age" in response["Cache-Control"]


@pytest.mark.parametrize("signed_in", [False, True])
def test_every_page_links_the_icon(client: Any, researcher: Any, signed_in: bool) -> None:
    if signed_in:
        client.force_login(researcher)
    page = client.get(reverse("home" if signed_in else "login")).content.decode()
    assert f'<link rel="icon" href="{static(ICON)}" type="image/svg+xml">' in page


def test_the_icon_is_a_plain_svg_the_policy_allows() -> None:
    """Served from our own origin (img-src 'self'), and nothing in it that a policy or a
    browser would refuse in an image: no script, no style, no external reference."""
    path = finders.find(ICON)
    assert path is not None
    with open(path, encoding="utf-8") as icon:
        text = icon.read()
    assert text.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    for refused in ("<script", "style", "href", "url("):
        assert refused not in text
