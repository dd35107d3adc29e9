"""Export transcripts from the browser: an options page for the list's current filters, and the
download, streamed: JSONL, or the Hugging Face dataset saved to disk as a zip. The same dataset
can be written on the server from the command line (``manage.py export_dialogues --format hf``);
the page shows the command for these filters.

Researchers only: an export holds every label of every annotator.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    QueryDict,
    StreamingHttpResponse,
)
from django.shortcuts import render

from webapp.core.permissions import researcher_required
from webapp.transcripts import exporting

FORMATS = {
    "jsonl": "JSONL (one dialogue per line)",
    "hf": "Hugging Face dataset (a zipped save_to_disk folder)",
}
_CONTENT_TYPES = {
    "jsonl": "application/x-ndjson; charset=utf-8",
    "hf": "application/zip",
}
_TRUE = {"1", "on", "true", "yes"}


def _include_private(request: HttpRequest) -> bool:
    return request.GET.get("include_private", "").strip().lower() in _TRUE


def _filter_query(request: HttpRequest) -> QueryDict:
    """The non-empty filter parameters (what a GET form sends for untouched fields is dropped,
    so the links and the command line stay short)."""
    query = QueryDict(mutable=True)
    for name, values in exporting.filter_query(request.GET).lists():
        kept = [value for value in values if value.strip()]
        if kept:
            query.setlist(name, kept)
    return query


@researcher_required
def export_options(request: HttpRequest) -> HttpResponse:
    form = exporting.filter_form(request.GET)
    query = _filter_query(request)
    encoded = query.urlencode()
    command = ["python", "manage.py", "export_dialogues", "--format", "hf", "--out", "DIR"]
    if encoded:
        command += ["--filter", encoded]
    context = {
        "form": form,
        # Carried to the download as hidden fields.
        "params": [(name, value) for name, values in query.lists() for value in values],
        "list_query": encoded,
        "count": exporting.export_count(filters=form.filters()),
        "formats": FORMATS,
        "include_private": _include_private(request),
        "hf_command": shlex.join(command),
    }
    return render(request, "transcripts/export.html", context)


@researcher_required
def export_download(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    export_format = request.GET.get("format", "jsonl")
    if export_format not in FORMATS:
        return HttpResponseBadRequest(
            f"Unknown export format {export_format!r}: the browser offers {', '.join(FORMATS)}.",
            content_type="text/plain; charset=utf-8",
        )
    include_private = _include_private(request)
    filters = exporting.filters_from_query(request.GET)
    filename = exporting.export_filename(
        include_private=include_private, extension="zip" if export_format == "hf" else "jsonl"
    )
    content: Iterator[bytes] | Iterator[str]
    if export_format == "hf":
        content = exporting.hf_dataset_zip(
            filters=filters,
            include_private=include_private,
            scratch_root=Path(settings.DATA_DIR) / "exports",
            folder=filename.removesuffix(".zip"),
        )
    else:
        content = exporting.jsonl_lines(filters=filters, include_private=include_private)
    response = StreamingHttpResponse(content, content_type=_CONTENT_TYPES[export_format])
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response
