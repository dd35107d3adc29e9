"""Permission helpers: every view starts from one of these, so none forgets a check.

All pages need a login (LoginRequiredMiddleware). Researchers may do everything; annotators may
read transcripts and label, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseBase

View = TypeVar("View", bound=Callable[..., HttpResponseBase])


def researcher_required(view: View) -> View:
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not getattr(request.user, "is_researcher", False):
            raise PermissionDenied("Only researchers can do this.")
        return view(request, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
