"""Real processes for end-to-end tests: a Celery worker and a headless Chromium.

The worker is a separate OS process that reaches the test database over a real connection
(PostgreSQL, or the SQLite file of the embedded default) and the real broker (Redis, or the
file-based one), exactly as in production.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

from tests.conftest import CHROMIUM
from webapp.core.queues import QUEUES

REPO_ROOT = Path(__file__).resolve().parents[2]
ALL_QUEUES = tuple(queue.name for queue in QUEUES)
WORKER_READY_TIMEOUT = 90


def test_database_url() -> str:
    """A URL for the database the test run created (pytest-django renames it)."""
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    user = quote(settings.get("USER") or "")
    password = f":{quote(settings['PASSWORD'])}" if settings.get("PASSWORD") else ""
    credentials = f"{user}{password}@" if user else ""
    host = settings.get("HOST") or "localhost"
    port = f":{settings['PORT']}" if settings.get("PORT") else ""
    return f"postgres://{credentials}{host}{port}/{settings['NAME']}"


class WorkerProcess:
    """A `celery worker` subprocess whose output is kept for assertions and failure reports.
    ``number`` tells the workers of one test apart (each needs its own node name); it serves
    ``queues`` (every queue unless told)."""

    def __init__(self, number: int = 0, queues: tuple[str, ...] = ALL_QUEUES) -> None:
        self.lines: list[str] = []
        self.ready = threading.Event()
        env = {**os.environ, "DATABASE_URL": test_database_url(), "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "celery", "-A", "webapp", "worker",
                f"--queues={','.join(queues)}", "--pool=solo", "--concurrency=1",
                "--prefetch-multiplier=1", "--without-gossip", "--without-mingle",
                "--loglevel=INFO", f"--hostname=e2e-{os.getpid()}-{number}@%h",
            ],
            cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        threading.Thread(target=self._read_output, daemon=True).start()

    def _read_output(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip())
            if " ready." in line:
                self.ready.set()

    def wait_ready(self) -> None:
        if not self.ready.wait(WORKER_READY_TIMEOUT):
            self.stop()
            raise RuntimeError("The Celery worker did not start:\n" + self.output())

    def output(self) -> str:
        return "\n".join(self.lines[-200:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def purge_broker() -> None:
    """Drop messages a previous run left behind, so this worker sees only this test's runs."""
    from webapp.celery import app

    app.control.purge()


@pytest.fixture
def start_worker(transactional_db: None) -> Iterator[WorkerProcess]:
    """A function that starts a real worker when the test chooses; workers stop at teardown."""
    started: list[WorkerProcess] = []

    def start(queues: tuple[str, ...] = ALL_QUEUES) -> WorkerProcess:
        worker = WorkerProcess(number=len(started), queues=queues)
        started.append(worker)
        worker.wait_ready()
        return worker

    purge_broker()
    yield start  # type: ignore[misc]
    for worker in started:
        worker.stop()


@pytest.fixture
def worker(start_worker) -> WorkerProcess:  # type: ignore[no-untyped-def]
    return start_worker()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is required for browser tests and is missing at {CHROMIUM}")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
            ],
        )  # fmt: skip
        yield chromium
        chromium.close()


# Reports every Content-Security-Policy violation of every page the context opens (the listener
# is installed before any page script runs, and survives navigations) to the test.
REPORT_CSP_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", function (event) {
  window.dialabReportCspViolation(
    event.effectiveDirective + " blocked " + (event.blockedURI || "inline") + " on " +
    event.documentURI + (event.sample ? " (" + event.sample + ")" : "")
  );
});
"""


@pytest.fixture
def page(browser, live_server) -> Iterator[object]:  # type: ignore[no-untyped-def]
    """A page in a fresh context. The test fails if any page it opened broke the
    Content-Security-Policy: a violation is a feature the policy silently switched off."""
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    violations: list[str] = []

    def on_violation(report: str) -> None:
        violations.append(report)

    context.expose_function("dialabReportCspViolation", on_violation)
    context.add_init_script(REPORT_CSP_VIOLATIONS)
    page = context.new_page()

    def on_console(message) -> None:  # type: ignore[no-untyped-def]
        # Chromium logs each violation too: this hears those no document listener can (a worker's).
        if "Content Security Policy" in message.text:
            violations.append(f"console {message.type}: {message.text}")

    context.on("console", on_console)
    yield page
    context.close()
    if violations:
        pytest.fail("Content-Security-Policy violations:\n" + "\n".join(violations))


def wait_until(condition, timeout: float = 60, interval: float = 0.2, message=None) -> None:  # type: ignore[no-untyped-def]
    """Poll ``condition``; past ``timeout``, fail with ``message()`` (e.g. a worker's output)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    detail = f":\n{message()}" if message is not None else ""
    raise AssertionError(f"condition not met within {timeout}s{detail}")
