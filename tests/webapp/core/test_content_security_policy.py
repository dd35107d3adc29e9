"""The Content-Security-Policy header, and templates that keep to it (no inline script, handler
or style). The browser tests fail on any violation the pages cause (tests/e2e/conftest.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from tests.factories import TaskSetFactory
from tests.transcript_builders import make_run
from webapp.core.plotly_csp import plotly_style_sources, style_hash, style_sources

pytestmark = pytest.mark.django_db

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"


def directives(response: Any) -> dict[str, list[str]]:
    policy = response["Content-Security-Policy"]
    parsed = {}
    for part in policy.split(";"):
        name, *values = part.split()
        parsed[name] = values
    return parsed


@pytest.mark.parametrize("signed_in", [False, True])
def test_every_page_sends_a_strict_policy(client: Any, researcher: Any, signed_in: bool) -> None:
    if signed_in:
        client.force_login(researcher)
    response = client.get(reverse("home" if signed_in else "login"))
    assert response.status_code == 200
    policy = directives(response)
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["img-src"] == ["'self'", "data:"]
    assert policy["object-src"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]
    assert policy["form-action"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert not any("unsafe" in value for values in policy.values() for value in values)


def test_htmx_fragments_send_the_policy_too(researcher_client: Any) -> None:
    response = researcher_client.get(
        reverse("dialogue_list"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="dialogue-rows"
    )
    assert "script-src 'self'" in response["Content-Security-Policy"]


def test_htmx_is_told_not_to_evaluate_code_or_add_styles(researcher_client: Any) -> None:
    html = researcher_client.get(reverse("home")).content.decode()
    assert '"allowEval": false' in html and '"includeIndicatorStyles": false' in html


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
INLINE_HANDLER = re.compile(r"\s(on[a-z]+|hx-on[:\w-]*)\s*=", re.IGNORECASE)
STYLE_ATTRIBUTE = re.compile(r"\sstyle\s*=", re.IGNORECASE)


@pytest.mark.parametrize(
    "template", sorted(TEMPLATES.rglob("*.html")), ids=lambda path: str(path.relative_to(TEMPLATES))
)
def test_templates_hold_no_inline_script_handler_or_style(template: Path) -> None:
    text = template.read_text()
    assert not INLINE_SCRIPT.search(text), "script belongs in static/dialab/*.js"
    assert not INLINE_HANDLER.search(text), "bind handlers from static/dialab/*.js"
    assert not STYLE_ATTRIBUTE.search(text), "use a class from dialab.css"


def test_the_run_page_alone_admits_plotly_s_stylesheets_by_hash(researcher_client: Any) -> None:
    run = make_run("r", TaskSetFactory())
    style_src = directives(researcher_client.get(reverse("run_detail", args=[run.pk])))["style-src"]
    assert style_src == ["'self'", *plotly_style_sources()]
    assert style_hash("") in style_src and "'unsafe-inline'" not in style_src
    # The installed bundle writes its map library's stylesheet as text: found and admitted.
    assert len(style_src) == 3
    other = directives(researcher_client.get(reverse("dialogue_list")))["style-src"]
    assert other == ["'self'"]


def test_style_sources_hash_each_stylesheet_a_bundle_writes_as_text() -> None:
    bundle = (
        'var e=document.createElement("style");e.id="abc",e.textContent=\'.map{color:red}\';'
        'n=document.createElement("style"),n.appendChild(document.createTextNode(""));'
        'var t=document.createElement("style");t.textContent="a{b:c}";'
        "var u=document.createElement(\"style\");u.textContent='x\\'y';"  # an escape: skipped
    )
    assert style_sources(bundle) == (
        style_hash(""),
        style_hash(".map{color:red}"),
        style_hash("a{b:c}"),
    )
    assert style_hash("") == "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
