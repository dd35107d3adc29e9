"""The layout's navigation: its URLs are reversed once per process and URL prefix
(webapp/core/context_processors.py), and still lead where the URL names do."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse, set_script_prefix

from webapp.core.context_processors import NAV_LINKS, navigation

pytestmark = pytest.mark.django_db


def test_a_researchers_navigation_leads_where_its_url_names_do(researcher_client: Any) -> None:
    html = researcher_client.get(reverse("home")).content.decode()
    for url_name in NAV_LINKS.values():
        assert f'href="{reverse(url_name)}"' in html or f'action="{reverse(url_name)}"' in html


def test_under_a_url_prefix_the_navigation_carries_it(rf: Any) -> None:
    """A deployment below a path (SCRIPT_NAME) gets its own links, not the first prefix's."""
    before = navigation(rf.get("/"))["nav"]["runs"]  # the links without a prefix, now cached
    set_script_prefix("/lab/")
    try:
        assert navigation(rf.get("/"))["nav"]["runs"] == f"/lab{before}"
    finally:
        set_script_prefix("/")
    assert navigation(rf.get("/"))["nav"]["runs"] == before == reverse("run_list")
