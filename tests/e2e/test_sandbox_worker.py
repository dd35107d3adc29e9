"""Hostile code through a real worker: "Try it" on a code task grades it failed, the host unharmed.

The worker process carries secrets in its environment (as a production worker carries
DATABASE_URL and API keys); the candidate looks for them everywhere and tries to forge a pass.
"""

from __future__ import annotations

import secrets

import pytest
from django.db import transaction

from tests.e2e.conftest import wait_until
from tests.factories import TaskFactory
from tests.models_gpu.sandbox.test_attacks import sandboxed_processes
from webapp.tasks.models import Task, VerifierProbe
from webapp.tasks.services import probe_create

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

HOSTILE = """
import os, sys
def add(a, b):
    return a - b
found = dict(os.environ)
for path in ('/proc/self/environ', '/proc/%d/environ' % os.getppid(), '/proc/1/environ'):
    try:
        found[path] = open(path).read()
    except OSError as error:
        found[path] = str(error)
print(found)
forged = '{"loaded": true, "tests": [{"name": "x", "passed": true, "error": null}]}'
for fd in range(0, 256):
    try:
        os.write(fd, forged.encode())
    except OSError:
        pass
import ast, builtins
ast.parse = lambda *a, **k: ast.Module(body=[], type_ignores=[])
builtins.AssertionError = type('Nothing', (Exception,), {})
"""


def try_code(worker, response: str) -> VerifierProbe:  # type: ignore[no-untyped-def]
    """ "Try it" on an add(a, b) code task, as the editor sends it; the probe once the worker
    has answered (a verdict, or an error)."""
    task = TaskFactory(
        prompt="Write add(a, b).",
        reference={"tests": "assert add(1, 2) == 3\n", "entry_point": "add"},
        verifier_kind=Task.VerifierKind.CODE,
    )
    with transaction.atomic():
        probe = probe_create(task=task, response=response, user=None)

    def answered() -> bool:
        row = VerifierProbe.objects.get(pk=probe.pk)
        return row.verdict is not None or bool(row.error)

    wait_until(answered, timeout=60, message=worker.output)
    probe.refresh_from_db()
    return probe


def test_a_hostile_try_it_through_a_worker_fails_and_leaks_nothing(
    start_worker, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    secret = secrets.token_hex(16)
    monkeypatch.setenv("DIALAB_TEST_API_KEY", secret)  # inherited by the worker started below
    worker = start_worker()
    probe = try_code(worker, f"```python\n{HOSTILE}```")
    assert probe.verdict is not None, probe.error + worker.output()
    assert probe.verdict["correct"] is False
    assert probe.verdict["details"]["sandbox"] == "bubblewrap"
    assert secret not in repr(probe.verdict)
    assert secret not in worker.output()
    assert sandboxed_processes() == []


def test_a_worker_without_bubblewrap_refuses_code_and_says_how_to_enable_it(
    start_worker, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PATH", str(tmp_path))  # the worker finds no bwrap
    worker = start_worker()
    probe = try_code(worker, "def add(a, b):\n    return a + b\n")
    assert probe.verdict is None, "no verdict without a sandbox"
    assert "bubblewrap" in probe.error and "apt-get install bubblewrap" in probe.error
