from __future__ import annotations

from webapp.accounts.models import User

DEMO_USERNAME = "demo"  # the demo project's researcher (webapp.demo), who owns what it adds


def user_create(*, username: str, password: str, role: str, email: str = "") -> User:
    return User.objects.create_user(username=username, password=password, email=email, role=role)
