"""Typed readers for environment settings that fail loudly on bad values.

Settings are read once at start-up; a wrong value must stop the process with a message that
names the variable and says what it accepts, never fall back silently.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

DATABASE_SCHEMES = ("sqlite", "postgres", "postgresql", "pgsql")
BROKER_SCHEMES = ("filesystem", "redis", "rediss", "amqp", "pyamqp")
CACHE_SCHEMES = ("redis", "rediss")


def env_str(name: str, default: str, env: Mapping[str, str] = os.environ) -> str:
    value = env.get(name, "").strip()
    return value or default


def env_bool(name: str, default: bool, env: Mapping[str, str] = os.environ) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name} must be one of {sorted(_TRUE | _FALSE)}, got {env[name]!r}."
    )


def env_int(name: str, default: int, env: Mapping[str, str] = os.environ, minimum: int = 0) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}.") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}.")
    return value


def env_list(name: str, default: list[str], env: Mapping[str, str] = os.environ) -> list[str]:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def redact_url(url: str) -> str:
    """The URL with its password replaced, for error messages that may end up in logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def _scheme_of(name: str, url: str, allowed: tuple[str, ...]) -> str:
    scheme = urlsplit(url).scheme.lower()
    if scheme not in allowed:
        accepted = ", ".join(f"{s}://" for s in allowed)
        raise ImproperlyConfigured(
            f"{name} must start with one of {accepted}; got {redact_url(url)!r}."
        )
    return scheme


def database_config(url: str) -> dict[str, Any]:
    """Django DATABASES['default'] from a URL: SQLite for the embedded default, else PostgreSQL.

    PostgreSQL goes through psycopg 3 (Django picks it when it is installed).
    """
    import dj_database_url

    scheme = _scheme_of("DATABASE_URL", url, DATABASE_SCHEMES)
    try:
        config: dict[str, Any] = dict(dj_database_url.parse(url, conn_health_checks=True))
    except ValueError as error:
        raise ImproperlyConfigured(
            f"DATABASE_URL could not be parsed ({error}): {redact_url(url)!r}."
        ) from None
    if scheme == "sqlite":
        if not config.get("NAME") or config["NAME"] == ":memory:":
            raise ImproperlyConfigured(
                "DATABASE_URL=sqlite:// needs a file path (sqlite:////abs/path/db.sqlite3): "
                "the web server and the worker are separate processes and must share it."
            )
        config["OPTIONS"] = {
            # Web server, worker and tests write to one file: wait for locks instead of failing,
            # and let readers go on while a writer commits.
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    else:
        if not config.get("NAME"):
            raise ImproperlyConfigured(
                f"DATABASE_URL names no database: {redact_url(url)!r} "
                "(expected postgres://user@host:5432/dbname)."
            )
        config["CONN_MAX_AGE"] = 60
    return config


def broker_url(url: str) -> str:
    _scheme_of("CELERY_BROKER_URL", url, BROKER_SCHEMES)
    return url


def cache_config(url: str) -> dict[str, Any]:
    """Django CACHES['default']: Redis when ``url`` names one, else each process's own memory."""
    if not url:
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    _scheme_of("CACHE_URL", url, CACHE_SCHEMES)
    return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}


def ensure_directory(path: Path, what: str) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ImproperlyConfigured(f"Cannot create the {what} directory {path}: {error}.") from None
    return path


def secret_key(env: Mapping[str, str], data_dir: Path) -> str:
    """SECRET_KEY from the environment, else one generated once and kept in the data directory.

    The embedded default needs no configuration, yet sessions must survive a restart.
    """
    from_env = env.get("SECRET_KEY", "").strip()
    if from_env:
        return from_env
    key_file = data_dir / "secret_key"
    try:
        # O_EXCL: when the web server and the worker start together, exactly one writes the key.
        descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return key_file.read_text().strip()
    from django.core.management.utils import get_random_secret_key

    key = get_random_secret_key()
    with os.fdopen(descriptor, "w") as handle:
        handle.write(key)
    return key
