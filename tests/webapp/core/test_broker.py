"""The file-based broker of the embedded default (``webapp.core.broker``): a worker polling the
queue folder never takes a message before it is whole.

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
