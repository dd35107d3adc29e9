"""Who an API request acts as: a personal token (``Authorization: Bearer dialab_...``) or, for
the pages' own scripts, the browser's session with its CSRF token. Either way the request acts
as that person, with their role and object scope; ``request.api_token`` names the token.

``AUTH`` lets in anyone signed in (what an annotator may read is then scoped by the endpoint);
``RESEARCHERS`` refuses everyone else with a 403 before the request's parameters are read, as
the researchers' pages do."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from ninja.security import HttpBearer, SessionAuth

from webapp.api.tokens import token_for

log = logging.getLogger("dialab.api")


def _allowed(user: Any, researchers_only: bool) -> Any:
    if researchers_only and not getattr(user, "is_researcher", False):
        raise PermissionDenied("Only researchers can do this.")
    return user


class TokenAuth(HttpBearer):
    def __init__(self, *, researchers_only: bool = False) -> None:
        super().__init__()
        self.researchers_only = researchers_only

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        found = token_for(token)
        if found is None:
            return None
        request.user = found.user
        request.api_token = found  # type: ignore[attr-defined]
        return _allowed(found.user, self.researchers_only)


class PageSessionAuth(SessionAuth):
    def __init__(self, *, researchers_only: bool = False) -> None:
        super().__init__()
        self.researchers_only = researchers_only

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        user = super().authenticate(request, key)
        return None if user is None else _allowed(user, self.researchers_only)


def log_write(request: HttpRequest, action: str) -> None:
    """Every write through the API is logged with who made it and with which token."""
    token = getattr(request, "api_token", None)
    via = f"token {token.name!r}" if token is not None else "session"
    log.info("%s by %s via %s", action, request.user, via)


AUTH = [TokenAuth(), PageSessionAuth()]
RESEARCHERS = [TokenAuth(researchers_only=True), PageSessionAuth(researchers_only=True)]
