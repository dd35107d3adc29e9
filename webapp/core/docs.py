"""The documentation site at /docs/: the MkDocs build (mkdocs.yml) of this installation's own
docs/, served from ``settings.DIALAB_DOCS_DIR`` so it works offline and matches the code.

Files are served by Django's ``static.serve`` (a path outside the directory is a 404; content
types from the file name). The Material theme's pages carry three small inline scripts of their
own; each HTML page gets the site's Content-Security-Policy with those scripts' hashes added to
``script-src``, so nothing else inline runs and nothing comes from another origin.
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import SuspiciousFileOperation
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.utils._os import safe_join
from django.utils.html import escape
from django.views.decorators.http import require_safe
from django.views.static import serve

BUILD_COMMAND = ".venv/bin/mkdocs build"
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


@lru_cache(maxsize=512)
def _inline_script_hashes(path: Path, modified: float) -> tuple[str, ...]:
    """CSP sources for the inline scripts of the HTML file ``path`` (as of ``modified``)."""
    text = path.read_text(encoding="utf-8")
    return tuple(
        sorted(
            {
                "'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
                for body in _INLINE_SCRIPT.findall(text)
            }
        )
    )


def _not_built(root: Path) -> HttpResponse:
    return HttpResponse(
        "<!doctype html><title>Documentation not built</title>"
        "<h1>The documentation has not been built</h1>"
        f"<p>Build it with <code>{escape(BUILD_COMMAND)}</code> in Dialab's directory "
        "(<code>bash scripts/setup.sh</code> does so), then reload this page. It is built into "
        f"<code>{escape(str(root))}</code>.</p>",
        status=404,
    )


@login_not_required
@require_safe
def docs(request: HttpRequest, path: str = "") -> HttpResponseBase:
    root = Path(settings.DIALAB_DOCS_DIR)
    if not (root / "index.html").is_file():
        return _not_built(root)
    try:
        full = Path(safe_join(root, path))
    except SuspiciousFileOperation:
        raise Http404("No such page in the documentation.") from None
    if path == "" or path.endswith("/"):
        path += "index.html"
    elif full.is_dir():
        # The site's relative links are written for directory URLs ending in "/".
        return HttpResponseRedirect(request.path + "/")
    response = serve(request, path, document_root=str(root))
    if response.status_code == 200 and path.endswith(".html"):
        file = (root / path).resolve()
        hashes = _inline_script_hashes(file, file.stat().st_mtime)
        if hashes:
            response._csp_update = {"script-src": list(hashes)}  # type: ignore[attr-defined]
    return response


def page_url(page: str, anchor: str = "") -> str:
    """The /docs/ URL of the documentation page ``page`` (its source under docs/, e.g.
    ``how-to/add-a-model.md``), as MkDocs builds it with directory URLs."""
    from django.urls import reverse

    stem = page.removesuffix(".md")
    stem = "" if stem == "index" else stem.removesuffix("/index") + "/"
    return reverse("docs") + stem + (f"#{anchor}" if anchor else "")
