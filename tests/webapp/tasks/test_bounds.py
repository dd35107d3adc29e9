"""Untrusted task data is parsed within bounds: nesting depth, record size, field size and the
upload itself. A document past a bound is refused quickly, with its line (and field), in the
web process's preview and in the worker's import alike, and nothing is imported."""

from __future__ import annotations

import io
import json
import re
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadhandler import FileUploadHandler
from django.core.management import CommandError, call_command
from django.urls import reverse

from tests.factories import TaskSetFactory
from tests.webapp.tasks.imports.test_importing import start_upload
from webapp.tasks import bounds
from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.imports.mapping import FieldMapping
from webapp.tasks.imports.readers import read_json
from webapp.tasks.imports.services import import_into_task_set, task_import_confirm
from webapp.tasks.imports.sources import file_source, guess_format
from webapp.tasks.models import Task, TaskImport, TaskSet

# The attacker's file: 200 KB that took the web process to 22 GB (JSON) or a 500 (JSONL).
DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_MESSAGE = "JSON nested deeper than 100 levels, the most accepted"
QUICKLY = 5.0  # seconds; the refusal itself takes milliseconds


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.DIALAB_MAX_JSON_DEPTH = 100


@pytest.fixture
def import_worker(eager_celery):  # type: ignore[no-untyped-def]
    import workers.task_imports  # noqa: F401  (registers the import task for eager dispatch)

    return eager_celery


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def import_in_worker(task_import: TaskImport, columns: dict[str, str], capture) -> TaskImport:  # type: ignore[no-untyped-def]
    """Confirm a mapping as the mapping step would (the page itself refuses to show a file it
    cannot preview), so that the worker parses the whole file."""
    with capture(execute=True):
        assert task_import_confirm(task_import=task_import, columns=columns, defaults={})
    task_import.refresh_from_db()
    return task_import


# --- The nesting check -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "limit", "line"),
    [
        (json.dumps(nested(64)), 64, None),
        (json.dumps(nested(65)), 64, 1),
        ('{"a": "[[[[[[[[[[", "b": "\\\\\\"[[[["}', 2, None),  # brackets in strings do not count
        ('{\n"a":\n[[\n[1]]]}', 3, 4),
        (DEEP.decode(), 100, 1),
    ],
)
def test_nesting_is_checked_before_parsing_and_names_the_line(
    document: str, limit: int, line: int | None
) -> None:
    if line is None:
        bounds.check_nesting(document, limit=limit)
        return
    with pytest.raises(bounds.NestingTooDeep) as raised:
        bounds.check_nesting(document, limit=limit)
    assert raised.value.line == line


def test_nesting_guard_follows_strings_and_escapes_across_chunks() -> None:
    document = json.dumps({'a\\"[': [']]]"', {"b": [[["x\\"]]]}], "c": "{{{"}).encode()
    for size in (1, 2, 3, 7):
        guard = bounds.NestingGuard(limit=6)
        for start in range(0, len(document), size):
            guard.feed(document[start : start + size])
        assert guard.depth == 0 and not guard.in_string
        with pytest.raises(bounds.NestingTooDeep):
            tight = bounds.NestingGuard(limit=5)
            for start in range(0, len(document), size):
                tight.feed(document[start : start + size])


# --- The attacker's files, through the web pages and the worker --------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "message"),
    [("deep.json", f"item 1 (line 1): {DEEP_MESSAGE}"), ("deep.jsonl", f"line 1: {DEEP_MESSAGE}")],
)
def test_deeply_nested_upload_is_refused_quickly_by_preview_and_worker(
    researcher_client, import_worker, django_capture_on_commit_callbacks, name, message
) -> None:  # type: ignore[no-untyped-def]
    start_upload(researcher_client, name, DEEP)
    task_import = TaskImport.objects.get()
    started = time.monotonic()
    page = researcher_client.get(reverse("task_import_map", args=[task_import.pk]))
    assert time.monotonic() - started < QUICKLY
    assert page.status_code == 400
    assert message in page.content.decode()

    started = time.monotonic()
    task_import = import_in_worker(
        task_import, {"prompt": "q", "answer": "a"}, django_capture_on_commit_callbacks
    )
    assert time.monotonic() - started < QUICKLY
    assert task_import.status == "failed"
    assert task_import.error == message
    assert not TaskSet.objects.exists() and not Task.objects.exists()


@pytest.mark.django_db
def test_deeply_nested_file_is_refused_by_the_command(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b'{"q": "1+1?", "a": "2"}\n' + DEEP + b"\n")
    with pytest.raises(CommandError, match=rf"^Nothing imported: line 2: {DEEP_MESSAGE}$"):
        call_command("import_tasks", str(path), "--map", "prompt=q", "--map", "answer=a")
    assert not TaskSet.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("file_format", ["jsonl", "json"])
def test_nesting_up_to_the_limit_imports_and_one_level_more_is_refused(
    settings, file_format: str
) -> None:
    # The record is level 1 and its "m" object level 2: 62 lists more make 64 levels; in a
    # JSON file the wrapping object and its list make 66.
    record = {"q": "1+1?", "a": "2", "m": {"deep": nested(62)}}
    content = (
        json.dumps(record) + "\n" if file_format == "jsonl" else json.dumps({"tasks": [record]})
    ).encode()
    depth = 64 if file_format == "jsonl" else 66
    mapping = FieldMapping({"prompt": "q", "answer": "a", "metadata": "m"})

    def run(limit: int) -> TaskSet:
        settings.DIALAB_MAX_JSON_DEPTH = limit
        source = file_source(io.BytesIO(content), file_format=file_format, mapping=mapping, size=1)
        return import_into_task_set(source=source, task_set_name=f"limit {limit}")

    assert run(depth).tasks.get().metadata == {"deep": nested(62)}
    with pytest.raises(TaskImportError, match=rf"line 1: JSON nested deeper than {depth - 1} "):
        run(depth - 1)
    assert list(TaskSet.objects.values_list("name", flat=True)) == [f"limit {depth}"]


@pytest.mark.django_db
def test_json_cells_in_a_csv_are_depth_checked(tmp_path: Path) -> None:
    deep_shards = "[" * 5000 + "]" * 5000
    content = f'q,a,s\n1+1?,2,"[""x""]"\n2+2?,4,{deep_shards}\n'.encode()
    mapping = FieldMapping({"prompt": "q", "answer": "a", "shards": "s"}, column_word="column")
    source = file_source(io.BytesIO(content), file_format="csv", mapping=mapping, size=1)
    with pytest.raises(
        TaskImportError,
        match=rf"^line 3: field 'shards' \(mapped from column 's'\): {DEEP_MESSAGE}$",
    ):
        import_into_task_set(source=source, task_set_name="csv")
    assert not TaskSet.objects.exists()


def test_long_keys_deep_down_do_not_cost_memory_by_the_square_of_the_depth() -> None:
    """ijson's prefixes repeat every key on the way down: 60 levels of 20 KB keys (1.2 MB) took
    36 MB of prefixes. Now only the record is held."""
    key = "k" * 20_000
    value: Any = "bottom"
    for _ in range(60):
        value = {key: value}
    document = json.dumps([value]).encode()
    tracemalloc.start()
    try:
        records = list(read_json(io.BytesIO(document)))
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(records) == 1
    assert peak < 12 * len(document), f"peak {peak:,} bytes for a {len(document):,}-byte file"


# --- Record and field sizes --------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "big.jsonl",
            b'{"q": "1+1?", "a": "2"}\n{"q": "' + b"x" * 5000 + b'", "a": "4"}\n',
            r"^line 2: longer than 4 KiB, the largest record accepted$",
        ),
        (
            "big.json",
            b'[{"q": "1+1?", "a": "2"},\n{"q": "' + b"x" * 200_000 + b'", "a": "4"}]',
            r"^item 2 \(near line 2\): longer than 4 KiB, the largest record accepted$",
        ),
        (
            "big.csv",
            b'q,a\n1+1?,2\n"' + b"x\n" * 5000 + b'",4\n',
            r"^line 3: longer than 4 KiB, the largest record accepted$",
        ),
    ],
)
def test_a_record_over_the_limit_is_refused_before_it_is_read_whole(
    settings, name: str, content: bytes, message: str
) -> None:
    settings.DIALAB_MAX_RECORD_BYTES = 4096
    column_word = "column" if name.endswith(".csv") else "key"
    mapping = FieldMapping({"prompt": "q", "answer": "a"}, column_word=column_word)
    source = file_source(
        io.BytesIO(content), file_format=guess_format(name), mapping=mapping, size=1
    )
    with pytest.raises(TaskImportError, match=message):
        import_into_task_set(source=source, task_set_name=name)
    assert not TaskSet.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "content", "columns", "message"),
    [
        (
            "long.jsonl",
            b'{"q": "1+1?", "a": "2"}\n{"q": "' + b"x" * 1001 + b'", "a": "4"}\n',
            {"map_prompt": "q", "map_answer": "a"},
            r"line 2: field 'prompt' \(mapped from key 'q'\) is 1,001 characters long; "
            r"the largest accepted is 1,000",
        ),
        (
            "long.csv",
            b"q,t\n1+1?,assert True\nwrite f,assert f() == '" + b"x" * 1000 + b"'\n",
            {"map_prompt": "q", "map_tests": "t"},
            r"line 3: field 'tests' \(mapped from column 't'\) is 1,016 characters long",
        ),
        (
            "long.json",
            b'[{"q": "1+1?", "a": "2"},\n {"q": "2+2?", "a": "4", "m": {"n": "'
            + b"x" * 1000
            + b'"}}]',
            {"map_prompt": "q", "map_answer": "a", "map_metadata": "m"},
            r"item 2: field 'metadata' \(mapped from key 'm'\) is 1,009 characters long",
        ),
    ],
)
def test_an_oversized_field_fails_the_import_naming_line_and_field(
    researcher_client,
    import_worker,
    django_capture_on_commit_callbacks,
    settings,
    name,
    content,
    columns,
    message,
) -> None:  # type: ignore[no-untyped-def]
    settings.DIALAB_MAX_FIELD_CHARS = 1000
    start_upload(researcher_client, name, content)
    task_import = TaskImport.objects.get()
    # The preview shows the first records (cells are cut short); the worker reads every field.
    map_url = reverse("task_import_map", args=[task_import.pk])
    assert researcher_client.get(map_url).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(map_url, columns)
    task_import.refresh_from_db()
    assert task_import.status == "failed"
    assert re.match(message, task_import.error or ""), task_import.error
    assert not TaskSet.objects.exists() and not Task.objects.exists()


@pytest.mark.django_db
def test_an_oversized_field_of_a_dialab_export_is_named(settings) -> None:
    settings.DIALAB_MAX_FIELD_CHARS = 1000
    line = {"prompt": "p", "reference": {"answer": "1", "tests": "x" * 1001}}
    source = file_source(
        io.BytesIO(json.dumps(line).encode() + b"\n"), file_format="dialab", size=1
    )
    with pytest.raises(
        TaskImportError, match=r"^line 1: field 'reference.tests' is 1,001 characters long"
    ):
        import_into_task_set(source=source, task_set_name="export")
    assert not TaskSet.objects.exists()


@pytest.mark.django_db
def test_the_preview_refuses_a_record_with_too_many_keys(researcher_client) -> None:  # type: ignore[no-untyped-def]
    record = {"q": "1+1?", "a": "2", **{f"k{n}": n for n in range(600)}}
    start_upload(researcher_client, "wide.jsonl", json.dumps(record).encode() + b"\n")
    task_import = TaskImport.objects.get()
    page = researcher_client.get(reverse("task_import_map", args=[task_import.pk]))
    assert page.status_code == 400
    assert "line 1: 501 keys or columns; the mapping step lists at most 500" in (
        page.content.decode()
    )


# --- The upload itself -------------------------------------------------------------------------


class RecordingHandler(FileUploadHandler):
    """Sits just before the handlers that store files, to see how much of a file reaches them."""

    received: list[int] = []

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        RecordingHandler.received.append(len(raw_data))
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


@pytest.mark.django_db
def test_an_upload_over_the_limit_is_not_stored_and_the_form_says_how_large(
    researcher_client, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.DIALAB_MAX_UPLOAD_BYTES = 100_000
    handlers = list(settings.FILE_UPLOAD_HANDLERS)
    storing = next(i for i, handler in enumerate(handlers) if handler.startswith("django."))
    recording = f"{__name__}.RecordingHandler"
    settings.FILE_UPLOAD_HANDLERS = [*handlers[:storing], recording, *handlers[storing:]]
    RecordingHandler.received = []
    response = start_upload(researcher_client, "big.csv", b"q,a\n" + b"1+1?,2\n" * 300_000)
    assert sum(RecordingHandler.received) <= 100_000, "nothing past the limit is stored"
    assert "This file is too large: the file is 2.0 MiB" in response.content.decode()
    assert not TaskImport.objects.exists()


# --- The task editor ---------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"prompt": "x" * 1001},
            "This field is 1,001 characters long; the largest accepted is 1,000.",
        ),
        (
            {"verifier_kind": "code", "answer": "", "entry_point": "f", "tests": "t" * 1001},
            "This field is 1,001 characters long",
        ),
        ({"verifier_config": '{"a": "' + "x" * 1000 + '"}'}, "This field is 1,009 characters"),
        ({"shards": "s\n" * 600}, "This field is 1,199 characters long"),  # stripped
        ({"reference_extra": "[" * 100_000}, f"Line 1: {DEEP_MESSAGE}."),
    ],
)
def test_the_editor_refuses_an_oversized_or_deeply_nested_field(
    researcher_client, settings, change, message
) -> None:  # type: ignore[no-untyped-def]
    settings.DIALAB_MAX_FIELD_CHARS = 1000 if "reference_extra" not in change else 1_000_000
    task_set = TaskSetFactory()
    form = {"prompt": "p", "verifier_kind": "numeric", "answer": "1", **change}
    response = researcher_client.post(reverse("task_create", args=[task_set.pk]), form)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Task.objects.exists()


@pytest.mark.django_db
def test_the_editor_accepts_a_field_at_the_limit(researcher_client, settings) -> None:  # type: ignore[no-untyped-def]
    settings.DIALAB_MAX_FIELD_CHARS = 1000
    task_set = TaskSetFactory()
    form = {"prompt": "x" * 1000, "verifier_kind": "numeric", "answer": "1"}
    researcher_client.post(reverse("task_create", args=[task_set.pk]), form)
    assert Task.objects.get().prompt == "x" * 1000
    form["prompt"] = "x" * 1001
    researcher_client.post(reverse("task_create", args=[task_set.pk]), form)
    assert Task.objects.count() == 1
