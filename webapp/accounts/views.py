from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from webapp.accounts.forms import PersonForm
from webapp.accounts.models import User
from webapp.accounts.services import user_create
from webapp.core.permissions import researcher_required


@researcher_required
def people(request: HttpRequest) -> HttpResponse:
    """Everyone with an account, and a form to add a researcher or an annotator."""
    form = PersonForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        user = user_create(
            username=data["username"],
            password=data["password1"],
            email=data.get("email", ""),
            role=data["role"],
        )
        messages.success(request, f"Created {user.get_role_display().lower()} {user.username}.")
        return redirect("people")
    people = User.objects.order_by("role", "username").only(
        "username", "email", "role", "is_active", "last_login"
    )
    return render(request, "accounts/people.html", {"people": people, "form": form})


def login_locked_out(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict[str, Any] | None = None,
) -> HttpResponse:
    """What a login attempt gets once its username and address are locked out (django-axes
    calls this as AXES_LOCKOUT_CALLABLE, in place of the login page it would have shown).

    Every attempt during a lockout starts the cool-off again (axes' default), so the lockout
    ends exactly one cool-off after this attempt: the page and Retry-After say when.
    """
    cool_off = settings.AXES_COOLOFF_TIME
    context = {
        "retry_at": timezone.now() + cool_off,
        "cool_off_minutes": round(cool_off.total_seconds() / 60),
        "failure_limit": settings.AXES_FAILURE_LIMIT,
    }
    response = render(request, "registration/locked_out.html", context, status=429)
    response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response
