"""Dialab's HTTP API, version 1: ``/api/v1/``, its OpenAPI schema at ``/api/v1/openapi.json``
and its documentation at ``/api/v1/docs``.

Each endpoint calls the same services and selectors as the page that shows the same thing, so
the API cannot drift from the pages; refusals come back as ``{"detail": ...}`` with the status
a page would give (401 without a valid token or session, 403 for a role that may not, 404 for
what the person may not see)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import ValidationError
from ninja.throttling import AuthRateThrottle

from webapp.api import catalog, dialogues, experiments, labels, runs, tasks
from webapp.api.auth import AUTH


class DialabAPI(NinjaAPI):
    def _get_urls(self) -> list[Any]:
        """The API checks its own credentials (a token or the session): its views are exempt
        from the site's login redirect (``LoginRequiredMiddleware``), which would send a
        script's request to the login page."""
        urls = super()._get_urls()
        for pattern in urls:
            pattern.callback.login_required = False  # type: ignore[union-attr]
        return urls


api = DialabAPI(
    title="Dialab API",
    version="1",
    description="Tasks, runs, figures and transcripts of a Dialab installation, as its pages "
    "show them to the person whose token or session makes the request.",
    auth=AUTH,
    throttle=[AuthRateThrottle("600/m")],
    urls_namespace="api",
)
api.add_router("/runs", runs.router)
api.add_router("/dialogues", dialogues.router)
api.add_router("/task-sets", tasks.router)
api.add_router("/labels", labels.router)
api.add_router("/experiments", experiments.router)
api.add_router("", catalog.router)


@api.get("/me", tags=["account"], summary="Who this token acts as")
def me(request: HttpRequest) -> dict[str, Any]:
    user = request.user
    return {"username": user.get_username(), "role": getattr(user, "role", "")}


@api.exception_handler(PermissionDenied)
def permission_denied(request: HttpRequest, error: PermissionDenied) -> HttpResponse:
    return api.create_response(request, {"detail": str(error) or "Forbidden."}, status=403)


@api.exception_handler(Http404)
def not_found(request: HttpRequest, error: Http404) -> HttpResponse:
    return api.create_response(request, {"detail": str(error) or "Not found."}, status=404)


@api.exception_handler(ValidationError)
def invalid_request(request: HttpRequest, error: ValidationError) -> HttpResponse:
    """A request whose fields have the wrong shape is refused as a form's refusal is: each
    field's problems, named by its path in the request (``tasks.2.reference``)."""
    problems: dict[str, list[str]] = {}
    for found in error.errors:
        place, *path = found.get("loc", ())
        if place == "body" and len(path) > 1:
            path = path[1:]  # the body's parameter name, which the caller never wrote
        where = ".".join(str(part) for part in path) or "__all__"
        problems.setdefault(where, []).append(found.get("msg", "Not valid."))
    body = {"detail": "The request is not valid.", "problems": problems}
    return api.create_response(request, body, status=422)
