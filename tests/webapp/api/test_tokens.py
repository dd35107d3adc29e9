"""Personal API tokens: shown once, stored hashed, named, revocable, with a last-used time."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.urls import reverse

from webapp.api import tokens
from webapp.api.models import ApiToken

pytestmark = pytest.mark.django_db


def test_a_token_is_stored_only_as_its_hash_and_finds_its_user(researcher: Any) -> None:
    token, text = tokens.issue_token(user=researcher, name="notebook")
    assert text.startswith(f"dialab_{token.key_id}_")
    assert text not in str(ApiToken.objects.values().get(pk=token.pk))
    assert token.secret_hash == hashlib.sha256(text.encode()).hexdigest()
    found = tokens.token_for(text)
    assert found is not None and found.user == researcher and found.last_used_at is not None


@pytest.mark.parametrize(
    "mangle",
    [
        lambda text: text[:-1] + ("A" if text[-1] != "A" else "B"),  # a wrong secret
        lambda text: text.replace("dialab_", "other_"),
        lambda text: text.rsplit("_", 1)[0],  # no secret
        lambda text: "",
    ],
)
def test_anything_but_the_exact_token_finds_nobody(researcher: Any, mangle: Any) -> None:
    _token, text = tokens.issue_token(user=researcher, name="ci")
    assert tokens.token_for(mangle(text)) is None


def test_a_revoked_token_or_a_deactivated_user_finds_nobody(researcher: Any) -> None:
    token, text = tokens.issue_token(user=researcher, name="sweep")
    second, second_text = tokens.issue_token(user=researcher, name="other")
    tokens.revoke_token(user=researcher, token_id=token.pk)
    assert tokens.token_for(text) is None
    assert tokens.token_for(second_text) is not None
    researcher.is_active = False
    researcher.save()
    assert tokens.token_for(second_text) is None
    assert second.pk != token.pk


def test_names_are_unique_per_person_and_required(researcher: Any, annotator: Any) -> None:
    tokens.issue_token(user=researcher, name="notebook")
    tokens.issue_token(user=annotator, name="notebook")  # another person's: fine
    with pytest.raises(tokens.TokenNameTaken):
        tokens.issue_token(user=researcher, name=" notebook ")
    with pytest.raises(ValueError, match="name"):
        tokens.issue_token(user=researcher, name="  ")


def test_nobody_revokes_another_persons_token(researcher: Any, annotator: Any) -> None:
    token, text = tokens.issue_token(user=researcher, name="mine")
    with pytest.raises(ApiToken.DoesNotExist):
        tokens.revoke_token(user=annotator, token_id=token.pk)
    assert tokens.token_for(text) is not None


def test_the_page_shows_a_new_token_once_and_revokes_it(researcher_client: Any) -> None:
    page = researcher_client.post(reverse("api_tokens"), {"name": "notebook"})
    html = page.content.decode()
    assert page.status_code == 200 and "cannot be shown again" in html
    text = html.split('<code id="new-token-text">')[1].split("</code>")[0]
    assert tokens.token_for(text) is not None
    again = researcher_client.get(reverse("api_tokens")).content.decode()
    assert text not in again and "notebook" in again
    refused = researcher_client.post(reverse("api_tokens"), {"name": "notebook"})
    assert refused.status_code == 400 and "already have a token named" in refused.content.decode()
    token = ApiToken.objects.get(name="notebook")
    researcher_client.post(reverse("api_token_revoke", args=[token.pk]))
    assert tokens.token_for(text) is None
    assert "revoked" in researcher_client.get(reverse("api_tokens")).content.decode()
