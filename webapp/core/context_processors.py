"""Values every page's layout (templates/base.html) reads, and URLs reversed once per process."""

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
def _reversed(script_prefix: str, url_name: str) -> str:
    return reverse(url_name)


def reverse_once(url_name: str) -> str:
    """``reverse(url_name)`` for a URL without arguments, worked out once per process and URL
    prefix: such a URL never changes while the process runs, and ``reverse`` costs some 45
    microseconds a call (a dozen links a page added half a millisecond)."""
    return _reversed(get_script_prefix(), url_name)


def navigation(request: HttpRequest) -> dict[str, dict[str, str]]:
    """``nav``: the navigation's URLs."""
    prefix = get_script_prefix()
    return {"nav": {name: _reversed(prefix, url_name) for name, url_name in NAV_LINKS.items()}}
