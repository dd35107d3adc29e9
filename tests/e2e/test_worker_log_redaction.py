"""A real Celery worker's log shows no secret, even when a library logs one.

The student is an openai-backend model whose URL carries a key-shaped path segment (a row stored
before such URLs were refused, written here through the ORM; a URL with a query, userinfo or
fragment is refused by the backend itself), served by a small local OpenAI-compatible server.
httpx logs every request's full URL at INFO, so without the worker's redacting filter the key
would be in the worker's output (data/worker.log under scripts/demo.sh).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import transaction

from tests.e2e.conftest import wait_until
from tests.factories import ProtocolFactory, TaskFactory, TeacherFactory
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.runs.services import evaluation_run_create

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

URL_KEY = "sk-url0123456789abcdefghij"


class ChatCompletions(BaseHTTPRequestHandler):
    """Answers every POST with the same chat completion."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "The answer is 1."}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
        }).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ChatCompletions)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_the_worker_log_shows_no_key(endpoint: str, start_worker) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory()
    student = ModelSpec.objects.create(
        name="hosted", backend="openai", location=f"{endpoint}/{URL_KEY}",
        generation_params={"model": "m", "max_retries": 0},
    )  # fmt: skip
    with transaction.atomic():
        run = evaluation_run_create(
            name="redaction", task_set=task.task_set, student=student,
            teacher=TeacherFactory(), protocol=ProtocolFactory(max_turns=1), created_by=None,
        )  # fmt: skip
    worker = start_worker()
    wait_until(lambda: Run.objects.get(pk=run.pk).is_finished, timeout=60)
    worker.stop()

    output = "\n".join(worker.lines)
    assert Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED, worker.output()
    assert "HTTP Request: POST" in output, "httpx logged the request"
    assert "/v1/[redacted]/chat/completions" in output
    assert URL_KEY not in output
