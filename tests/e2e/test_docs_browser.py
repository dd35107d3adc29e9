"""The documentation Dialab serves at /docs/, in headless Chromium: the built site renders under
the application's Content-Security-Policy (the ``page`` fixture fails the test on any violation,
the search worker's included), its search finds pages, and a page's "?" opens its part of the
documentation. The test command builds the site (``mkdocs build --strict``) before pytest."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from tests.e2e.test_experiments_browser import log_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def built_site() -> None:
    index = Path(settings.DIALAB_DOCS_DIR) / "index.html"
    assert index.is_file(), f"the documentation is not built ({index}): .venv/bin/mkdocs build"


def test_a_newcomer_searches_the_documentation_and_reads_a_result(page) -> None:  # type: ignore[no-untyped-def]
    page.goto("/docs/")
    page.wait_for_selector("h1")
    assert page.locator("link[rel=stylesheet]").count() > 0
    # The theme's own script ran (it draws the search box's behaviour and the navigation).
    page.click("input.md-search__input")
    page.keyboard.type("accuracy after turn", delay=30)
    results = page.locator(".md-search-result__item")
    results.first.wait_for()
    assert results.count() > 0
    page.locator(".md-search-result__link").first.click()
    page.wait_for_url("**/docs/**")
    assert "turn" in page.locator("article").inner_text().lower()


def test_a_pages_help_link_opens_its_documentation(page) -> None:  # type: ignore[no-untyped-def]
    log_in(page, "/runs/")
    help_link = page.locator("h1 a.docs-help")
    help_link.wait_for()
    href = help_link.get_attribute("href") or ""
    assert href.startswith("/docs/"), href
    with page.context.expect_page() as opened:  # it opens beside the page, in a new tab
        help_link.click()
    docs = opened.value
    docs.wait_for_load_state()
    assert "/docs/" in docs.url
    anchor = href.partition("#")[2]
    if anchor:
        assert docs.locator(f"[id='{anchor}']").count() == 1, f"no heading #{anchor} on {href}"


def test_the_api_guide_shows_its_worked_example_itself() -> None:
    """The guide includes docs/examples/first_walk.py when the site is built (a snippet): the
    built page holds the file's code, not the include line (ruff once rewrote that line, which
    left the guide showing it instead of the example)."""
    page = Path(settings.DIALAB_DOCS_DIR) / "how-to" / "use-the-api" / "index.html"
    html = page.read_text()
    assert 'class="nf">first_walk</span>' in html and "--8&lt;--" not in html
