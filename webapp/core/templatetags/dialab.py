"""Small template filters shared by Dialab's pages. Output stays auto-escaped."""

from __future__ import annotations

from typing import Any

from django import template

from webapp.core.durations import duration
from webapp.core.rendering import pretty_json, render_markdown

register = template.Library()


# Indented JSON for people (a turn's private context); also a Jinja2 filter (core.fragments).
register.filter("pretty_json", pretty_json)


@register.filter
def redacted(value: Any) -> str:
    """The text with any secret in it replaced by [redacted] (see core.redaction): for values
    stored before credentials were refused, such as a model URL with ?api_key=."""
    from webapp.core.redaction import redact

    return redact(str(value))


@register.filter
def words(identifier: str) -> str:
    """``student_generations`` → ``student generations``."""
    return str(identifier).replace("_", " ")


@register.filter
def job_name(task_name: str) -> str:
    """A worker's job as a page names it: ``workers.tasks.training_preview`` → ``training
    preview``."""
    return words(str(task_name).rpartition(".")[2])


@register.filter
def markdown(text: str) -> str:
    """Sanitized markdown with MathML math and highlighted code (see core.rendering)."""
    return render_markdown(text or "")


@register.filter
def percent(rate: float | None, digits: int = 1) -> str:
    """0.4213 → "42.1%" (None → "—")."""
    return "—" if rate is None else f"{100 * rate:.{digits}f}%"


@register.filter
def share(rate: float | None, digits: int = 0) -> str:
    """``percent`` for a share of counted things, where only none reads 0% and only all reads
    100%: 1 of 308 is "<1%", 307 of 308 ">99%" (digits 0; "<0.1%" with digits 1)."""
    if rate is None or rate in (0, 1):
        return percent(rate, digits)
    shown = round(100 * rate, digits)
    step = 10.0**-digits
    if shown == 0:
        return f"<{step:.{digits}f}%"
    if shown == 100:
        return f">{100 - step:.{digits}f}%"
    return percent(rate, digits)


@register.filter(name="duration")
def about_duration(seconds: float | None) -> str:
    """A time to wait, as a guess: "about 40 s", "about 4 min" (None → "time not known yet")."""
    return "time not known yet" if seconds is None else f"about {duration(seconds)}"


@register.filter
def get_item(mapping: dict[Any, Any], key: Any) -> Any:
    """``mapping[key]`` in a template (an empty list when absent)."""
    return mapping.get(key, [])


@register.simple_tag(takes_context=True)
def query_without_page(context: template.Context) -> str:
    """The current query string minus ``page``: pagination links keep search and filters."""
    params = context["request"].GET.copy()
    params.pop("page", None)
    return str(params.urlencode())


@register.simple_tag(takes_context=True)
def figure_download_url(context: template.Context, figure: str, file_format: str) -> str:
    """This page's URL (so the same figure) asking for ``figure`` as a file (views answer with
    ``core.figure_export.download_response``)."""
    params = context["request"].GET.copy()
    params.pop("page", None)
    params["figure"], params["download"] = figure, file_format
    return f"?{params.urlencode()}"


@register.simple_tag
def plotly_js_url() -> str:
    """The URL of the installed plotly.js bundle, whose name carries its content hash (see
    core.staticfinders). Without a bundle, a URL that answers 404: the system check says why."""
    from django.templatetags.static import static

    from webapp.core.staticfinders import STATIC_DIR, plotly_static_path

    return static(plotly_static_path() or f"{STATIC_DIR}/plotly-basic.min.js")


@register.simple_tag
def docs_help(page: str, anchor: str = "") -> str:
    """A small "?" beside a page's heading: its page of the documentation at /docs/ (``page`` is
    the page's source under docs/; tests/webapp/test_docs.py checks that each one exists)."""
    from django.utils.html import format_html

    from webapp.core.docs import page_url

    return format_html(
        '<a class="docs-help" href="{}" target="_blank" rel="noopener" '
        'title="This page in the documentation" aria-label="Help: this page in the '
        'documentation">?</a>',
        page_url(page, anchor),
    )
