"""What a page that loads plotly.js adds to the Content-Security-Policy (settings has the rest).

plotly.js writes two ``<style>`` elements into the page when it loads: an empty one that it
fills rule by rule through the CSSOM (which CSP does not govern), and the stylesheet of its
bundled map library (maplibre), as text. Rather than ``'unsafe-inline'``, which would admit any
inline style an injection managed to write, the run page admits exactly these two texts by their
hashes. They are read from the bundle the pages load (the partial bundle that setup installs,
``staticfinders.plotly_js_path``; even it carries the map stylesheet), so a plotly.js upgrade
that changes the stylesheet needs no edit here; if a new bundle writes its styles some other
way, the browser tests, which fail on any violation, say so.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from collections.abc import Callable
from typing import Any, TypeVar

from csp.decorators import csp_update

from webapp.core.staticfinders import plotly_js_path

View = TypeVar("View", bound=Callable[..., Any])

# `x=document.createElement("style"); x.id="…", x.textContent='…'`: a stylesheet written as one
# string literal (escapes would need a JavaScript parser: a literal with one is not matched).
STYLE_TEXT = re.compile(
    r"""createElement\("style"\)[^{}]{0,300}?\.textContent="""
    r"""(?:'(?P<single>[^'\\]*)'|"(?P<double>[^"\\]*)")"""
)


def style_hash(text: str) -> str:
    """The CSP source that admits an inline ``<style>`` whose text is ``text``."""
    digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
    return f"'sha256-{digest}'"


def style_sources(bundle: str) -> tuple[str, ...]:
    """The hashes of the empty stylesheet (plotly fills it through the CSSOM) and of each
    stylesheet that ``bundle`` writes as text."""
    texts = [""]
    for match in STYLE_TEXT.finditer(bundle):
        texts.append(match["single"] if match["single"] is not None else match["double"])
    return tuple(dict.fromkeys(style_hash(text) for text in texts))


@functools.cache
def plotly_style_sources() -> tuple[str, ...]:
    """``style_sources`` of the plotly.js bundle the pages load (read once per process)."""
    path = plotly_js_path()
    bundle = path.read_text(encoding="utf-8") if path is not None and path.exists() else ""
    return style_sources(bundle)


def allows_plotly(view: View) -> View:
    """For views whose page loads plotly.js: the policy admits plotly's own stylesheets (read
    from the bundle on the first request, not when the URLconf is imported)."""

    @functools.cache
    def updated() -> View:
        return csp_update({"style-src": list(plotly_style_sources())})(view)  # type: ignore[return-value]

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return updated()(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
