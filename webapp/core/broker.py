"""The embedded default's file-based broker, with whole messages only.

Kombu's filesystem transport creates a message's file in the queue folder and then writes it. A
worker that looks at the folder in between takes the file and reads it empty: the worker's
consumer stops on the JSON error and the message (a run's job) is lost, leaving the run queued.
Seen once a quick poll (``DIALAB_BROKER_POLL_MS``) made it likely. Here a message is written
under a name no reader takes (``.writing`` after ``.msg``) and renamed into place, which is atomic
within a folder, so a reader finds either nothing or the whole message.

The same holds for an exchange's table of bound queues (the broadcast exchange that the Workers
page's inspection and each worker bind to): Kombu creates the file empty and then locks it, so a
process binding or reading in between read no JSON, and the page failed (seen once in CI). Here
the file is created without truncating, under the lock, and an empty one is an empty table.

Used through ``CELERY_BROKER_TRANSPORT`` whenever the broker URL is ``filesystem://``.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

# Kombu ships py.typed but leaves the helpers used here unannotated (pyproject.toml excludes
# kombu from mypy's untyped-call check; its methods called through self are marked below).

Binding = filesystem.exchange_queue_t


def _table(text: bytes) -> list[Any]:
    """An exchange file's bound queues; an empty file (just created) binds none."""
    return [Binding(*entry) for entry in loads(bytes_to_str(text))] if text else []


class Channel(filesystem.Channel):
    # As kombu's filesystem Channel has it, whose signature differs from its base's (``message``,
    # no keywords): any override is incompatible with one of them.
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Put ``payload`` onto ``queue``: written aside, then renamed into the folder."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        path = os.path.join(self.data_folder_out, name)
        writing = f"{path}.writing"
        try:
            with open(writing, "wb") as file:
                file.write(str_to_bytes(dumps(payload)))
            os.replace(writing, path)
        except OSError as error:
            raise ChannelError(f"Cannot add file {path!r} to directory") from error

    def get_table(self, exchange: str) -> list[Any]:
        file = self._exchange_file(exchange)  # type: ignore[no-untyped-call]  # kombu's, unannotated
        try:
            with file.open("rb") as f_obj:
                filesystem.lock(f_obj, filesystem.LOCK_SH)
                try:
                    return _table(f_obj.read())
                finally:
                    filesystem.unlock(f_obj)
        except FileNotFoundError:
            return []
        except OSError as error:
            raise ChannelError(f"Cannot open {file}") from error

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        file = self._exchange_file(exchange)  # type: ignore[no-untyped-call]  # kombu's, unannotated
        self.control_folder.mkdir(exist_ok=True)
        binding = Binding(routing_key or "", pattern or "", queue or "")
        try:
            # "a+b" creates the file if missing and never truncates it: it is read and written
            # only under the lock (appending mode writes at the end, so truncate first).
            with file.open("a+b", buffering=0) as f_obj:
                filesystem.lock(f_obj, filesystem.LOCK_EX)
                try:
                    f_obj.seek(0)
                    bindings = _table(f_obj.read())
                    if binding not in bindings:
                        bindings.insert(0, binding)
                        f_obj.truncate(0)
                        f_obj.write(str_to_bytes(dumps(bindings)))
                finally:
                    filesystem.unlock(f_obj)
        except OSError as error:
            raise ChannelError(f"Cannot open {file}") from error


class Transport(filesystem.Transport):
    Channel = Channel
