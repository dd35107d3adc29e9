"""Schemathesis fuzzes the API from its own OpenAPI schema: every operation, with generated
parameters and bodies, as a researcher; no answer is a server error, and every answer of a
documented status matches its documented schema. Bounded (a few examples per operation) to
keep the suite fast; ``DIALAB_FUZZ_EXAMPLES`` asks for more."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from tests.factories import TaskFactory, TaskSetFactory
from tests.transcript_builders import attempt, make_run, store
from webapp.api import tokens
from webapp.api.api import api

pytestmark = pytest.mark.django_db(transaction=False)

schema = schemathesis.openapi.from_dict(api.get_openapi_schema())
schema.app = get_wsgi_application()
EXAMPLES = int(os.environ.get("DIALAB_FUZZ_EXAMPLES", "8"))


@pytest.fixture
def in_the_test_transaction() -> Iterator[None]:
    """The requests go straight to the WSGI application, which closes the database connection
    after each one; the test's transaction (and its data) must outlive them, as Django's test
    client arranges."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def token(in_the_test_transaction: None, researcher: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A researcher's token, in a world with something to read (a run of two dialogues), and
    the rate limit out of the way (fuzzing sends hundreds of requests a minute)."""
    (throttle,) = api.throttle  # type: ignore[misc]
    monkeypatch.setattr(throttle, "allow_request", lambda request: True)
    task_set = TaskSetFactory()
    run = make_run("fuzzed", task_set)
    for task in TaskFactory.create_batch(2, task_set=task_set):
        store(run, task.pk, 0, "a_first", [attempt("The answer is 3.", "3", True)])
    return tokens.issue_token(user=researcher, name="fuzz")[1]


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_no_server_error_and_every_answer_matches_the_schema(case: Any, token: str) -> None:
    case.call_and_validate(
        headers={"Authorization": f"Bearer {token}"},
        checks=[not_a_server_error, response_schema_conformance, content_type_conformance],
    )
