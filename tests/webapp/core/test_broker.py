"""The file-based broker of the embedded default (``webapp.core.broker``): a worker polling the
queue folder never takes a message before it is whole, and an exchange's table of bound queues
is never read half made.

With Kombu's own filesystem transport in its place, the reader below fails on every message of
this test (checked when the class was written: 300 of 300 read half-written): it creates the
file, then writes it.
"""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from queue import Empty
from typing import Any

from kombu import Connection

from webapp.core.broker import Transport

MESSAGES = 100
PAYLOAD = "x" * 2_000_000  # large, so that a write takes long enough to be caught half-done


def _options(folder: str) -> dict[str, Any]:
    return {
        "data_folder_in": folder, "data_folder_out": folder, "store_processed": False,
        "polling_interval": 0,
    }  # fmt: skip


def _send_all(folder: str) -> None:
    """The web process's side, in a process of its own as in production."""
    with Connection("filesystem://", transport=Transport, transport_options=_options(folder)) as c:
        for number in range(MESSAGES):
            c.default_channel._put("jobs", {"number": number, "body": PAYLOAD})


def test_a_worker_polling_while_messages_are_written_gets_each_one_whole(tmp_path: Path) -> None:
    sender = multiprocessing.get_context("spawn").Process(target=_send_all, args=(str(tmp_path),))
    sender.start()
    received: list[dict[str, Any]] = []
    options = _options(str(tmp_path))
    with Connection("filesystem://", transport=Transport, transport_options=options) as conn:
        channel = conn.default_channel
        deadline = time.monotonic() + 120
        while len(received) < MESSAGES and time.monotonic() < deadline:
            try:
                received.append(channel._get("jobs"))  # a half-written file raises here
            except Empty:
                continue
    sender.join(timeout=60)
    assert sorted(message["number"] for message in received) == list(range(MESSAGES))
    assert all(message["body"] == PAYLOAD for message in received)
    assert not list(tmp_path.iterdir()), "no message and no half-written file is left"


def _channel(folder: Path) -> Any:
    options = {**_options(str(folder)), "control_folder": str(folder / "control")}
    return Connection("filesystem://", transport=Transport, transport_options=options).channel()


def test_an_exchange_file_caught_empty_is_an_empty_table(tmp_path: Path) -> None:
    """Kombu creates an exchange's file and only then locks and writes it: a process that binds
    or reads in between read no JSON (the Workers page failed so in CI). An empty file binds
    no queue, and binding to it writes the table."""
    channel = _channel(tmp_path)
    (tmp_path / "control").mkdir()
    (tmp_path / "control" / "celery.pidbox.exchange").write_bytes(b"")
    assert channel.get_table("celery.pidbox") == []
    channel._queue_bind("celery.pidbox", "", "", "worker-1")
    channel._queue_bind("celery.pidbox", "", "", "worker-1")  # once only
    assert [binding.queue for binding in channel.get_table("celery.pidbox")] == ["worker-1"]


def _bind_many(folder: str, name: str) -> None:
    channel = _channel(Path(folder))
    for number in range(30):
        channel._queue_bind("celery.pidbox", "", "", f"{name}-{number}")


def test_processes_binding_at_once_lose_no_binding(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    binders = [context.Process(target=_bind_many, args=(str(tmp_path), f"w{n}")) for n in range(3)]
    for binder in binders:
        binder.start()
    for binder in binders:
        binder.join(timeout=60)
        assert binder.exitcode == 0
    bound = {binding.queue for binding in _channel(tmp_path).get_table("celery.pidbox")}
    assert bound == {f"w{n}-{number}" for n in range(3) for number in range(30)}
