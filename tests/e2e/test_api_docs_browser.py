"""The API's pages in headless Chromium, under the application's Content-Security-Policy (the
``page`` fixture fails on any violation): a researcher makes a token on the tokens page and
sees it once, the token works, and the API reference at /api/v1/docs draws every operation of
the schema from Dialab's own static files."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.test_experiments_browser import log_in
from webapp.api.api import api

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_token_made_on_its_page_works_and_the_reference_draws_every_operation(
    page, live_server
) -> None:  # type: ignore[no-untyped-def]
    log_in(page, "/account/tokens/")
    page.fill("#id_name", "notebook")
    page.click("#token-form button[type=submit]")
    token = page.locator("#new-token-text").inner_text().strip()
    assert token.startswith("dialab_")
    assert page.locator("#token-table td", has_text="notebook").count() == 1
    me = httpx.get(f"{live_server.url}/api/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert me.status_code == 200 and me.json()["role"] == "researcher"
    page.reload()
    assert page.locator("#new-token-text").count() == 0  # shown once

    page.goto("/api/v1/docs")
    operations = page.locator(".opblock")
    operations.first.wait_for()
    schema = api.get_openapi_schema()
    expected = sum(len(methods) for methods in schema["paths"].values())
    assert operations.count() == expected
    page.locator(".opblock-summary", has_text="/api/v1/me").first.click()
    page.locator(".opblock-body").first.wait_for()
