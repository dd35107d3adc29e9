"""The embedded default's file-based broker, with whole messages only.

Kombu's filesystem transport creates a message's file in the queue folder and then writes it. A
worker that looks at the folder in between takes the file and reads it empty: the worker's
consumer stops on the JSON error and the message (a run's job) is lost, leaving the run queued.
Seen once a quick poll (``DIALAB_BROKER_POLL_MS``) made it likely. Here a message is written
under a name no reader takes (``.writing`` after ``.msg``) and renamed into place, which is atomic
within a folder, so a reader finds either nothing or the whole message.

Used through ``CELERY_BROKER_TRANSPORT`` whenever the broker URL is ``filesystem://``.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
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


class Transport(filesystem.Transport):
    Channel = Channel
