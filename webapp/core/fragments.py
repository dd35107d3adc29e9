"""Page fragments rendered by the Jinja2 template engine (``settings.TEMPLATES``, "jinja2").

Most pages use Django's template language. The transcript list's results (rows, count,
pagination) and filter controls are written with Jinja2 instead: Django's engine took longer to
render them than everything else the page does (measured with ``benchmarks/transcripts.py``: 8 ms
for 50 rows, against 0.8 ms in Jinja2; the filter form through Django's widget templates about
8 ms, against under 1 ms).
The dialogue page's conversation and its other runs are Jinja2 too (the page's template work
went from about 12 ms to 3 ms on the same benchmark). Jinja2 escapes every value as Django does
(``autoescape`` is on in Django's Jinja2 backend), so its output is marked safe for the Django
template that includes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jinja2
from django.template.defaultfilters import floatformat
from django.template.loader import get_template
from django.utils.safestring import SafeString, mark_safe

from webapp.core.rendering import pretty_json, render_markdown

ENGINE = "jinja2"


def environment(**options: Any) -> jinja2.Environment:
    """The Jinja2 environment (``settings.TEMPLATES``): Django's filters that the fragments use,
    the same functions the Django templates' filters are."""
    env = jinja2.Environment(**options)
    env.filters.update(markdown=render_markdown, pretty_json=pretty_json, floatformat=floatformat)
    return env


def render_fragment(template_name: str, context: Mapping[str, Any]) -> SafeString:
    """``templates/jinja2/<template_name>`` rendered with ``context``, ready to print."""
    return mark_safe(get_template(template_name, using=ENGINE).render(dict(context)))
