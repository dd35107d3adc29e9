"""Markdown with math and code for text that people and models wrote: sanitized, never trusted.

Math (``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]``) becomes MathML on the server, which
browsers draw natively, so no math JavaScript is needed; fenced code is highlighted by Pygments.
Whatever the input, the output goes through an allow-list sanitizer (nh3): script, event
handlers and unknown tags never reach the page.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from html import escape
from typing import Any

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe

MATH_PATTERN = re.compile(
    r"\$\$(?P<display>.+?)\$\$"
    r"|\\\[(?P<display2>.+?)\\\]"
    r"|\\\((?P<inline2>.+?)\\\)"
    # Inline $...$ only when the dollars hug the formula, so "$5 and $10" stays text.
    r"|(?<![\\$\w])\$(?P<inline>[^\s$](?:[^$\n]*?[^\s$\\])?)\$(?![\w$])",
    re.DOTALL,
)

MATHML_TAGS = {
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup",
    "mfrac", "msqrt", "mroot", "mover", "munder", "munderover", "mtable", "mtr", "mtd",
    "mstyle", "mpadded", "mphantom", "menclose", "semantics", "annotation",
}  # fmt: skip
HTML_TAGS = {
    "p", "br", "hr", "em", "strong", "code", "pre", "span", "div", "blockquote", "ul", "ol",
    "li", "table", "thead", "tbody", "tr", "th", "td", "h1", "h2", "h3", "h4", "h5", "h6",
    "a", "del", "sup", "sub",
}  # fmt: skip
MATHML_ATTRIBUTES = {
    "display", "xmlns", "mathvariant", "stretchy", "fence", "separator", "accent", "form",
    "lspace", "rspace", "columnalign", "rowspacing", "columnspacing", "linethickness",
    "width", "height", "depth", "encoding", "notation", "minsize", "maxsize", "largeop",
    "movablelimits", "symmetric",
}  # fmt: skip
ATTRIBUTES = {
    **{tag: MATHML_ATTRIBUTES for tag in MATHML_TAGS},
    "span": {"class"},
    "div": {"class"},
    "code": {"class"},
    "pre": {"class"},
    "a": {"href", "title"},
    "th": {"align"},
    "td": {"align"},
}


def _to_mathml(latex: str, *, display: bool) -> str:
    from latex2mathml.converter import convert

    try:
        return convert(latex.strip(), display="block" if display else "inline")
    except Exception:  # any malformed formula: show its source rather than fail the page
        return f'<code class="math-error">{escape(latex)}</code>'


def _markdown_without_raw_html() -> markdown.Markdown:
    """Raw HTML in the source is shown as text (a model writing ``<script>`` shows it, it does
    not vanish), and the sanitizer still guards the output."""
    converter = markdown.Markdown(
        # nl2br: people and models write chat text, where a line break is meant as one.
        extensions=["fenced_code", "codehilite", "tables", "sane_lists", "nl2br"],
        extension_configs={"codehilite": {"guess_lang": False, "css_class": "codehilite"}},
    )
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    return converter


# Building a Markdown converter and a sanitizer costs more than rendering a chat turn with them,
# and a dialogue page renders dozens of turns: build each once (converters are not thread-safe,
# so one per thread; ``reset()`` clears a converter's state between documents).
_CLEANER = nh3.Cleaner(
    tags=HTML_TAGS | MATHML_TAGS,
    attributes=ATTRIBUTES,
    url_schemes={"http", "https", "mailto"},
    link_rel="noopener noreferrer nofollow",
)
_local = threading.local()


def _converter() -> markdown.Markdown:
    converter: markdown.Markdown | None = getattr(_local, "converter", None)
    if converter is None:
        converter = _local.converter = _markdown_without_raw_html()
    return converter.reset()


def pretty_json(value: Any) -> str:
    """Indented JSON for showing structured data (a turn's private context) to people."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


# A line of plain words is one paragraph: nothing in it is Markdown, math or HTML. Most chat
# turns are such lines, and the converter and sanitizer cost about 0.4 ms a turn (a tenth of a
# dialogue page's time on benchmarks/transcripts.py). It starts with a letter (no list, heading
# or quote), holds none of Markdown's, math's or HTML's characters, and has no line break or
# edge space; tests/webapp/core/test_rendering.py checks, on generated lines, that it renders
# exactly as the full path does.
_PLAIN_LINE = re.compile(r"[A-Za-z](?:[A-Za-z0-9 ,.?;:'\"%/=+-]*[A-Za-z0-9,.?;:'\"%/=+-])?")


def render_markdown(text: str) -> SafeString:
    """Sanitized Markdown with MathML math and highlighted code."""
    if _PLAIN_LINE.fullmatch(text):
        return mark_safe(f"<p>{text}</p>")
    return render_markdown_in_full(text)


def render_markdown_in_full(text: str) -> SafeString:
    """What ``render_markdown`` gives, always through the converter and the sanitizer."""
    formulas: dict[str, str] = {}

    def stash(match: re.Match[str]) -> str:
        display = match.group("display") or match.group("display2")
        latex = display or match.group("inline") or match.group("inline2") or ""
        key = f"MATH{uuid.uuid4().hex}"
        formulas[key] = _to_mathml(latex, display=display is not None)
        return key

    with_placeholders = MATH_PATTERN.sub(stash, text)
    html = _converter().convert(with_placeholders)
    for key, mathml in formulas.items():
        html = html.replace(key, mathml)
    return mark_safe(_CLEANER.clean(html))
