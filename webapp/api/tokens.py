"""Making, checking and revoking personal API tokens.

A token reads ``dialab_<key id>_<secret>``: the key id finds the stored token in one indexed
lookup, and the SHA-256 of the whole token, compared in constant time, proves it. The secret is
32 random bytes, so a fast hash is enough (a slow one guards guessable passwords)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from webapp.accounts.models import User
from webapp.api.models import ApiToken

PREFIX = "dialab"
# last_used_at is written at most this often per token: not a write on every request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class TokenNameTaken(ValueError):
    pass


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue_token(*, user: User, name: str) -> tuple[ApiToken, str]:
    """A new token for ``user``, and its text, which is never stored and cannot be shown
    again."""
    name = name.strip()
    if not name:
        raise ValueError("Give the token a name: what it is for.")
    key_id = secrets.token_hex(6)
    text = f"{PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(
                user=user, name=name, key_id=key_id, secret_hash=_digest(text)
            )
    except IntegrityError as error:
        raise TokenNameTaken(f"You already have a token named {name!r}.") from error
    return token, text


def token_for(text: str) -> ApiToken | None:
    """The active token ``text`` is, with its user; None for anything else."""
    prefix, _, rest = text.strip().partition("_")
    key_id, _, secret = rest.partition("_")
    if prefix != PREFIX or not key_id or not secret:
        return None
    token = (
        ApiToken.objects.select_related("user")
        .filter(key_id=key_id, revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None or not hmac.compare_digest(token.secret_hash, _digest(text.strip())):
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def revoke_token(*, user: User, token_id: int) -> ApiToken:
    """Revoke one of ``user``'s tokens (``ApiToken.DoesNotExist`` for anyone else's)."""
    token = ApiToken.objects.get(pk=token_id, user=user)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token
