from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from webapp.envconfig import (
    broker_url,
    cache_config,
    database_config,
    env_bool,
    env_int,
    env_list,
    redact_url,
    secret_key,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_env_bool_reads_common_spellings_and_refuses_others() -> None:
    assert env_bool("X", False, {"X": "yes"}) is True
    assert env_bool("X", True, {"X": "OFF"}) is False
    assert env_bool("X", True, {}) is True
    with pytest.raises(ImproperlyConfigured, match=r"X must be one of .* got 'maybe'"):
        env_bool("X", False, {"X": "maybe"})


def test_env_int_and_list() -> None:
    assert env_int("N", 5, {"N": "7"}) == 7
    with pytest.raises(ImproperlyConfigured, match="N must be an integer, got 'seven'"):
        env_int("N", 5, {"N": "seven"})
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("N", 5, {"N": "0"}, minimum=1)
    assert env_list("L", ["a"], {"L": " x, y ,,"}) == ["x", "y"]


def test_sqlite_and_postgres_urls() -> None:
    sqlite = database_config("sqlite:////tmp/dialab.sqlite3")
    assert sqlite["ENGINE"] == "django.db.backends.sqlite3"
    assert sqlite["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    postgres = database_config("postgres://alice:secret@db.example:5433/dialab")
    assert postgres["ENGINE"] == "django.db.backends.postgresql"
    assert (postgres["HOST"], postgres["PORT"], postgres["NAME"]) == ("db.example", 5433, "dialab")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://u:hunter2@h/db", "DATABASE_URL must start with one of sqlite://"),
        ("sqlite://", "needs a file path"),
        ("postgres://u@h:5432/", "names no database"),
    ],
)
def test_bad_database_urls_fail_with_a_clear_message(url: str, message: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=message) as error:
        database_config(url)
    assert "hunter2" not in str(error.value), "passwords never reach error messages"


def test_broker_url_schemes() -> None:
    assert broker_url("redis://localhost:6379/0") == "redis://localhost:6379/0"
    with pytest.raises(ImproperlyConfigured, match="CELERY_BROKER_URL must start with"):
        broker_url("kafka://localhost")


def test_cache_is_redis_or_each_process_own() -> None:
    assert cache_config("")["BACKEND"].endswith("LocMemCache")
    assert cache_config("redis://h:6379/3") == {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://h:6379/3",
    }
    with pytest.raises(ImproperlyConfigured, match="CACHE_URL must start with") as error:
        cache_config("memcached://:hunter2@h")
    assert "hunter2" not in str(error.value)


def test_redact_url_hides_only_the_password() -> None:
    assert redact_url("redis://:pw@h:6379/0") == "redis://:***@h:6379/0"
    assert redact_url("postgres://u:pw@h/db") == "postgres://u:***@h/db"
    assert redact_url("sqlite:////x.db") == "sqlite:////x.db"


def test_secret_key_is_generated_once_and_kept(tmp_path: Path) -> None:
    first = secret_key({}, tmp_path)
    assert len(first) >= 50
    assert secret_key({}, tmp_path) == first
    assert secret_key({"SECRET_KEY": "from-env"}, tmp_path) == "from-env"


def test_process_with_a_bad_setting_refuses_to_start(tmp_path: Path) -> None:
    env = {**os.environ, "DIALAB_DATA_DIR": str(tmp_path), "DATABASE_URL": "mongodb://x/y"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "DATABASE_URL must start with one of sqlite://" in result.stderr


def test_embedded_defaults_need_no_environment(tmp_path: Path) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "SECRET_KEY"}
    }
    env["DIALAB_DATA_DIR"] = str(tmp_path)
    script = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL, s.SESSION_ENGINE)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "webapp.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "django.db.backends.sqlite3",
        "filesystem://localhost//",
        "django.contrib.sessions.backends.db",  # a per-process cache cannot hold sessions
    ]
    assert (tmp_path / "broker" / "queue").is_dir()
