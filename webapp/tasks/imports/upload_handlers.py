"""An upload handler that stops storing a file once it is larger than the upload limit.

Django stores every uploaded file whole (in memory, or in a temporary file past
FILE_UPLOAD_MAX_MEMORY_SIZE) before any form sees it, so on its own a 20 GB upload fills the
disk before the import form refuses it. This handler comes first in FILE_UPLOAD_HANDLERS: past
``DIALAB_MAX_UPLOAD_BYTES`` it passes no more bytes on to the handlers that store them, and
hands the form an empty stand-in of the file's real size, which the form refuses by its size.
"""

from __future__ import annotations

from io import BytesIO
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler


class UploadSizeLimitHandler(FileUploadHandler):
    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.too_large = False

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        if start + len(raw_data) > settings.DIALAB_MAX_UPLOAD_BYTES:
            self.too_large = True
        # None keeps the rest of the file from the storing handlers; it is still read (and
        # dropped) so that the form fields after it arrive.
        return None if self.too_large else raw_data

    def file_complete(self, file_size: int) -> UploadedFile | None:
        if not self.too_large:
            return None  # the next handler stored it whole
        # The storing handler's partial copy is dropped with it (a temporary file is deleted
        # when it is closed or collected).
        return UploadedFile(BytesIO(), self.file_name, self.content_type, file_size)
