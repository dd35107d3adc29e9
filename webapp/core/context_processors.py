"""Values every page's layout (templates/base.html) reads."""

from __future__ import annotations

import functools

from django.http import HttpRequest
from django.urls import get_script_prefix, reverse

# The navigation's links: the layout's name for each, and the URL name it leads to.
NAV_LINKS = {
    "home": "home",
    "task_sets": "task_set_list",
    "models": "model_list",
    "protocols": "protocol_list",
    "runs": "run_list",
    "experiments": "experiment_index",
    "transcripts": "dialogue_list",
    "labelling": "queue_list",
    "people": "people",
    "inbox": "people_inbox",
    "docs": "docs",
    "tokens": "api_tokens",
    "logout": "logout",
}


@functools.cache
def _nav_urls(script_prefix: str) -> dict[str, str]:
    return {name: reverse(url_name) for name, url_name in NAV_LINKS.items()}


def navigation(request: HttpRequest) -> dict[str, dict[str, str]]:
    """``nav``: the navigation's URLs, reversed once per process (and URL prefix) rather than
    on every page (a dozen ``{% url %}`` tags cost half a millisecond a page)."""
    return {"nav": _nav_urls(get_script_prefix())}
