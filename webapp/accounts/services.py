from __future__ import annotations

from webapp.accounts.models import User


def user_create(*, username: str, password: str, role: str, email: str = "") -> User:
    return User.objects.create_user(username=username, password=password, email=email, role=role)
