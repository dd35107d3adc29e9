"""The type of the requests a page's view receives, for type checking.

Every page requires a signed-in user (``LoginRequiredMiddleware``; the login pages opt out),
and ``HtmxMiddleware`` tells each request whether htmx sent it. A view annotated with
``SignedInRequest`` reads ``request.user`` as a ``User`` and ``request.htmx`` without casts.
The API's requests are typed by its own authentication (``webapp.api.auth``).
"""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

from webapp.accounts.models import User


class SignedInRequest(HttpRequest):
    user: User  # narrower than HttpRequest's: sign-in is required
    htmx: HtmxDetails
