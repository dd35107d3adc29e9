"""Reliability drills restart the shared PostgreSQL and Redis: they run in the services pass of
scripts/test.sh only (the embedded pass runs tests/webapp and tests/e2e), one at a time."""

from __future__ import annotations

from tests.e2e.conftest import start_worker  # noqa: F401  (a fixture the drills use)
