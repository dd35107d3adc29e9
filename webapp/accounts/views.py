from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

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
