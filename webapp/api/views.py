"""The API tokens page: make a token (shown once), see when each was last used, revoke one."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.accounts.models import User
from webapp.api import tokens
from webapp.api.models import ApiToken


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        label="Name",
        widget=forms.TextInput(attrs={"placeholder": "notebook, CI, sweep script", "size": 30}),
    )


def _user(request: HttpRequest) -> User:
    return request.user  # type: ignore[return-value]


def token_list(request: HttpRequest) -> HttpResponse:
    """Anyone signed in may make tokens: each acts as its maker, with their role."""
    form = TokenForm(request.POST or None)
    new_token = ""
    if request.method == "POST" and form.is_valid():
        try:
            name = form.cleaned_data["name"]
            _token, new_token = tokens.issue_token(user=_user(request), name=name)
        except tokens.TokenNameTaken as taken:
            form.add_error("name", str(taken))
        else:
            form = TokenForm()
    context = {
        "form": form,
        "new_token": new_token,
        "tokens": ApiToken.objects.filter(user=_user(request)),
    }
    return render(request, "api/tokens.html", context, status=400 if form.errors else 200)


@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        token = tokens.revoke_token(user=_user(request), token_id=pk)
    except ApiToken.DoesNotExist:
        messages.error(request, "No such token of yours.")
    else:
        messages.success(request, f"Revoked {token.name!r}: scripts using it are refused now.")
    return redirect("api_tokens")
