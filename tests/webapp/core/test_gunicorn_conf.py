"""gunicorn's own access and error logs (which settings.LOGGING never sees) are redacted by
webapp.core.gunicorn_conf: a real gunicorn, a real request with a key in its query string."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
GUNICORN = Path(sys.executable).with_name("gunicorn")
KEY = "sk-live-4f5e6d7c8b9a0123456789ab"
ENCODED_KEY = "sk-enc-0a1b2c3d4e5f67890abcdef1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.skipif(not GUNICORN.exists(), reason="gunicorn comes with the serve extra")
def test_the_access_log_shows_no_key_from_a_query_string(tmp_path: Path) -> None:
    port = free_port()
    log_path = tmp_path / "gunicorn.log"
    # The embedded defaults (SQLite in the data directory): the suite's own database URL names
    # a database that only the test run's prefixed copy of exists.
    services = ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL")
    env = {name: value for name, value in os.environ.items() if name not in services}
    env.update(DIALAB_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(ROOT))
    command = [
        str(GUNICORN), "--config=python:webapp.core.gunicorn_conf", "webapp.wsgi:application",
        f"--bind=127.0.0.1:{port}", "--workers=1", "--access-logfile=-", "--error-logfile=-",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"gunicorn did not start:\n{log_path.read_text()[-3000:]}")
                time.sleep(0.1)
        query = f"api_key={KEY}&next=%2Fv1%3Fapi_key%3D{ENCODED_KEY}"
        request = urllib.request.Request(
            f"{base}/healthz?{query}", headers={"Referer": f"{base}/models/?token={KEY}"}
        )
        urllib.request.urlopen(request, timeout=5).read()
    finally:
        server.terminate()
        server.wait(timeout=30)
    text = log_path.read_text()
    assert "GET /healthz?api_key=[redacted]" in text, text
    assert KEY not in text and ENCODED_KEY not in text, text
    assert "token=[redacted]" in text  # the referrer too
