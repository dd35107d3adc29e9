"""Shared fixtures, and the rule that a missing service fails the run instead of skipping.

``DIALAB_TEST_REQUIRE`` (set by scripts/test.sh) lists what this run must exercise: "postgres",
"redis", "chromium". If one is not what the run is configured for, the session stops with an
error, so a suite can never pass by quietly testing less.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings as hypothesis_settings

if TYPE_CHECKING:
    from webapp.accounts.models import User

# No Django imports at module level: tests/models_gpu runs with plain pytest, without Django.

# Playwright's sync API runs an event loop in the test thread; the ORM calls made from the same
# thread are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("DIALAB_CHROMIUM", "/usr/bin/chromium")

# Property tests draw new examples on every run on a developer's machine (to find what a fixed set
# would not); CI draws the same ones every time, so that its result does not depend on luck.
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


def _required() -> set[str]:
    return {item.strip() for item in os.environ.get("DIALAB_TEST_REQUIRE", "").split(",") if item}


def pytest_sessionstart(session: pytest.Session) -> None:
    try:
        from django.conf import settings
    except ImportError:  # tests/models_gpu on a GPU host that has no Django installed
        return
    if not settings.configured:  # plain pytest without Django (-p no:django)
        return
    required = _required()
    problems = []
    engine = settings.DATABASES["default"]["ENGINE"]
    if "postgres" in required and not engine.endswith("postgresql"):
        problems.append(f"PostgreSQL required but DATABASE_URL selects {engine}")
    if "redis" in required:
        if not settings.CELERY_BROKER_URL.startswith("redis"):
            problems.append(f"Redis required but the broker is {settings.CELERY_BROKER_URL}")
        else:
            import redis

            try:
                redis.Redis.from_url(settings.CELERY_BROKER_URL).ping()
            except redis.RedisError as error:
                problems.append(f"Redis at {settings.CELERY_BROKER_URL} does not answer: {error}")
        if not settings.CACHE_URL.startswith("redis"):
            problems.append("Redis required but CACHE_URL names no Redis cache")
    if "chromium" in required and not shutil.which(CHROMIUM):
        problems.append(f"Chromium required but {CHROMIUM} is missing")
    if problems:
        pytest.exit("Required test services are missing: " + "; ".join(problems), returncode=3)


@pytest.fixture
def researcher(db: None) -> User:
    from tests.factories import UserFactory

    return UserFactory(role="researcher")


@pytest.fixture
def annotator(db: None) -> User:
    from tests.factories import UserFactory

    return UserFactory(role="annotator")


@pytest.fixture
def researcher_client(client, researcher):  # type: ignore[no-untyped-def]
    client.force_login(researcher)
    return client


@pytest.fixture
def annotator_client(client, annotator):  # type: ignore[no-untyped-def]
    client.force_login(annotator)
    return client


@pytest.fixture
def eager_celery():  # type: ignore[no-untyped-def]
    """Run dispatched tasks in-process (unit tests only; e2e tests use a real worker)."""
    from webapp.celery import app

    app.loader.import_default_modules()  # registers every task so dispatch resolves them
    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Under scripts/test.sh a skipped test is a failure, except GPU tests on a machine without
    one: a suite must not pass by quietly testing less."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and _required() and item.get_closest_marker("gpu") is None:
        report.outcome = "failed"
        report.longrepr = f"skipped under DIALAB_TEST_REQUIRE: {report.longrepr}"


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny untrained house model in Hugging Face format (tests/model_fixtures.py)."""
    from tests.model_fixtures import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-house"))
