"""/docs/: the built documentation site, served by Dialab itself (webapp.core.docs)."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import pytest
from django.http import Http404
from django.test import Client, RequestFactory

from webapp.core.docs import docs

SCRIPT = '__md_scope=new URL(".",location)'
SCRIPT_HASH = "'sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode() + "'"


@pytest.fixture
def site(tmp_path: Path, settings) -> Path:
    """A small built site, and a file beside it that must never be served."""
    root = tmp_path / "site"
    (root / "reference" / "settings").mkdir(parents=True)
    (root / "assets").mkdir()
    (root / "index.html").write_text(
        f"<!doctype html><title>Dialab</title><script>{SCRIPT}</script>"
        '<script src="assets/bundle.js"></script><h1>Dialab docs</h1>'
    )
    (root / "reference" / "settings" / "index.html").write_text("<h1>Settings</h1>group_size")
    (root / "assets" / "bundle.js").write_text("console.log(1)")
    (root / "assets" / "style.css").write_text("body{}")
    (tmp_path / "secret.txt").write_text("not documentation")
    settings.DIALAB_DOCS_DIR = root
    return root


@pytest.mark.django_db
def test_serves_the_index_to_anyone_with_its_inline_scripts_hashes_in_the_csp(
    client: Client, site: Path
) -> None:
    response = client.get("/docs/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert b"Dialab docs" in b"".join(response.streaming_content)
    policy = response["Content-Security-Policy"]
    script_src = next(part for part in policy.split(";") if "script-src" in part)
    assert "'self'" in script_src and SCRIPT_HASH in script_src
    assert "unsafe-inline" not in policy and "http" not in policy


@pytest.mark.django_db
def test_serves_nested_pages_and_assets_with_their_content_types(
    client: Client, site: Path
) -> None:
    response = client.get("/docs/reference/settings/")
    assert response.status_code == 200
    assert b"group_size" in b"".join(response.streaming_content)
    assert client.get("/docs/reference/settings")["Location"] == "/docs/reference/settings/"
    assert "javascript" in client.get("/docs/assets/bundle.js")["Content-Type"]
    assert client.get("/docs/assets/style.css")["Content-Type"].startswith("text/css")
    assert client.get("/docs/no/such/page/").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    ["/docs/../secret.txt", "/docs/%2e%2e/secret.txt", "/docs/..%2fsecret.txt", "/docs//etc/"],
)
def test_refuses_paths_outside_the_site(client: Client, site: Path, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 404
    assert b"not documentation" not in b"".join(getattr(response, "streaming_content", [b""]))


@pytest.mark.parametrize("path", ["../secret.txt", "reference/../../secret.txt", "/etc/passwd"])
def test_the_view_refuses_traversal_itself(site: Path, path: str) -> None:
    request = RequestFactory().get("/docs/x")
    with pytest.raises(Http404):
        docs(request, path)


@pytest.mark.django_db
def test_says_how_to_build_the_site_when_it_is_missing(
    client: Client, tmp_path: Path, settings
) -> None:
    settings.DIALAB_DOCS_DIR = tmp_path / "never-built"
    response = client.get("/docs/")
    assert response.status_code == 404
    assert b"mkdocs build" in response.content and b"scripts/setup.sh" in response.content


@pytest.mark.django_db
def test_only_reading_methods(client: Client, site: Path) -> None:
    assert client.post("/docs/").status_code == 405


# --- The "?" beside a page's heading -------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
DOCS_HELP = re.compile(r'{% docs_help "([^"]+)"(?: "([^"]+)")? %}')


def _slugs(markdown: str) -> set[str]:
    """The anchors MkDocs gives the headings of a page (its toc slugify)."""
    slugs = set()
    for heading in re.findall(r"^#{1,6} (.+)$", markdown, re.MULTILINE):
        text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
        slugs.add(re.sub(r"[-\s]+", "-", text))
    return slugs


def _page_source(page: str) -> str:
    from tests.docs.test_reference import reference

    if page in reference.PAGES:
        return reference.PAGES[page]()
    return (ROOT / "docs" / page).read_text()


def test_every_help_link_names_a_page_and_heading_of_the_documentation() -> None:
    links = [
        (template, match[1], match[2])
        for template in (ROOT / "templates").rglob("*.html")
        for match in DOCS_HELP.finditer(template.read_text())
    ]
    assert len(links) >= 15
    for template, page, anchor in links:
        source = _page_source(page)
        if anchor:
            assert anchor in _slugs(source), f"{template.name}: {page}#{anchor}"


@pytest.mark.django_db
def test_main_pages_link_their_documentation(researcher_client: Client) -> None:
    page = researcher_client.get("/runs/").content.decode()
    assert 'class="docs-help" href="/docs/how-to/experiments/#the-runs-table"' in page
    page = researcher_client.get("/task-sets/").content.decode()
    assert 'href="/docs/how-to/author-tasks/"' in page


@pytest.mark.django_db
def test_the_navigation_links_the_documentation(annotator_client: Client) -> None:
    assert 'href="/docs/" title="Dialab\'s documentation">Docs</a>' in (
        annotator_client.get("/dialogues/").content.decode()
    )
