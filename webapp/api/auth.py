"""Who an API request acts as: a personal token (``Authorization: Bearer dialab_...``) or, for
the pages' own scripts, the browser's session with its CSRF token. Either way the request acts
as that person, with their role and object scope; ``request.api_token`` names the token."""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest
from ninja.security import HttpBearer, SessionAuth

from webapp.api.tokens import token_for

log = logging.getLogger("dialab.api")


class TokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> Any:
        found = token_for(token)
        if found is None:
            return None
        request.user = found.user
        request.api_token = found  # type: ignore[attr-defined]
        return found.user


def log_write(request: HttpRequest, action: str) -> None:
    """Every write through the API is logged with who made it and with which token."""
    token = getattr(request, "api_token", None)
    via = f"token {token.name!r}" if token is not None else "session"
    log.info("%s by %s via %s", action, request.user, via)


AUTH = [TokenAuth(), SessionAuth()]
