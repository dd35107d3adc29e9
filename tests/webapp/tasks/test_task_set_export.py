"""Export a task set as Dialab JSONL and import it back: every field survives the round trip."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from tests.factories import TaskFactory, TaskSetFactory
from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.imports.mapping import DIALAB_FIELDS
from webapp.tasks.imports.services import import_into_task_set
from webapp.tasks.imports.sources import file_source
from webapp.tasks.models import TaskImport, TaskSet

pytestmark = pytest.mark.django_db


def rich_task_set() -> TaskSet:
    task_set = TaskSetFactory(name="Rich")
    TaskFactory(
        task_set=task_set, position=0, prompt="Zähle: 1, 2, …?", reference={"answer": "3"},
        verifier_kind="numeric", domain="arithmetic", difficulty=0.25, tags=["a", "b"],
        shards=["Count.", "Start at 1."], metadata={"source": {"name": "gsm8k", "row": 7}},
        verifier_config={"rel_tol": 0.01}, external_id="gsm-7",
    )  # fmt: skip
    TaskFactory(
        task_set=task_set, position=1, prompt="def add(a, b):\n",
        reference={"tests": "assert add(1, 2) == 3", "entry_point": "add", "solution": "  ..."},
        verifier_kind="code", domain="code", difficulty=None, tags=[], shards=[], metadata={},
    )  # fmt: skip
    TaskFactory(task_set=task_set, position=2, verifier_kind="exact", reference={"answer": "x"})
    return task_set


def fields(task_set: TaskSet) -> list[dict[str, object]]:
    return list(task_set.tasks.order_by("position").values(*DIALAB_FIELDS))


def test_browser_export_streams_one_task_per_line_with_every_field(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task_set = rich_task_set()
    response = researcher_client.get(reverse("task_set_export", args=[task_set.pk]))
    assert response.streaming and response["Content-Type"] == "application/x-ndjson"
    assert f'filename="rich-{task_set.pk}.jsonl"' in response["Content-Disposition"]
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert [json.loads(line) for line in lines] == fields(task_set)
    assert set(json.loads(lines[0])) == set(DIALAB_FIELDS)
    page = researcher_client.get(reverse("task_set_detail", args=[task_set.pk]))
    assert reverse("task_set_export", args=[task_set.pk]) in page.content.decode()


def test_export_then_import_gives_an_identical_task_set(tmp_path: Path) -> None:
    original = rich_task_set()
    path = tmp_path / "rich.jsonl"
    call_command("export_tasks", str(original.pk), str(path), stderr=io.StringIO())
    call_command(
        "import_tasks", str(path), "--format", "dialab", "--name", "Copy", "--no-progress",
        stdout=io.StringIO(),
    )  # fmt: skip
    copy = TaskSet.objects.get(name="Copy")
    assert copy.pk != original.pk
    assert fields(copy) == fields(original)
    assert len(fields(copy)) == 3


def test_dialab_upload_in_the_browser_needs_no_mapping(
    researcher_client, eager_celery, django_capture_on_commit_callbacks, settings, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    from django.core.files.uploadedfile import SimpleUploadedFile

    import workers.task_imports  # noqa: F401

    settings.MEDIA_ROOT = tmp_path
    original = rich_task_set()
    exported = b"".join(
        researcher_client.get(reverse("task_set_export", args=[original.pk])).streaming_content
    )
    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(
            reverse("task_import_start"),
            {"task_set_name": "Back", "source": "upload", "file_format": "dialab",
             "file": SimpleUploadedFile("rich.jsonl", exported)},
        )  # fmt: skip
    task_import = TaskImport.objects.get()
    assert task_import.status == "succeeded", task_import.error
    assert fields(task_import.task_set) == fields(original)


def test_dialab_format_rejects_an_unknown_field_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"prompt": "p", "reference": {"answer": "1"}}\n{"prompt": "q", "anser": 1}\n')
    with (
        path.open("rb") as stream,
        pytest.raises(TaskImportError, match=r"^line 2: unknown field\(s\) anser$"),
    ):
        source = file_source(stream, file_format="dialab")
        import_into_task_set(source=source, task_set_name="x")
    assert not TaskSet.objects.exists()


def test_export_command_refuses_an_unknown_task_set(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="No task set with id 999"):
        call_command("export_tasks", "999", str(tmp_path / "x.jsonl"))
