"""The mapping step as a newcomer meets it: a guess from the columns' values as well as their
names, so the first import of a plain CSV works as guessed; a failed import keeps its upload and
can be mapped again; and the set records what made it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from webapp.tasks.imports.preview import guess_mapping
from webapp.tasks.models import TaskImport, TaskSet

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parents[3] / "data"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def import_worker(eager_celery):  # type: ignore[no-untyped-def]
    import workers.task_imports  # noqa: F401  (registers the import task for eager dispatch)

    return eager_celery


def upload(client, name: str, content: bytes) -> TaskImport:  # type: ignore[no-untyped-def]
    data = {
        "task_set_name": "Uploaded",
        "source": "upload",
        "file": SimpleUploadedFile(name, content),
    }
    client.post(reverse("task_import_start"), data)
    return TaskImport.objects.latest("pk")


def form_as_shown(response) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """What the mapping form posts if the researcher changes nothing."""
    form = response.context["form"]
    return {name: value for name, value in form.initial.items() if value}


def test_a_numeric_solution_column_is_guessed_as_the_answer_and_imports_as_shown(
    researcher_client, import_worker, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    # tests/data/tasks.csv: question,solution,level,topic with solutions 4, 9, 3.
    task_import = upload(researcher_client, "tasks.csv", (DATA / "tasks.csv").read_bytes())
    url = reverse("task_import_map", args=[task_import.pk])
    page = researcher_client.get(url)
    shown = form_as_shown(page)
    assert shown["map_answer"] == "solution" and "map_solution" not in shown
    assert shown["map_prompt"] == "question" and shown["map_difficulty"] == "level"
    assert shown["default_verifier_kind"] == "numeric", "an answer of numbers: numeric"
    html = page.content.decode()
    answer_select = html[html.index('name="map_answer"') :]
    assert answer_select[: answer_select.index("</select>")].count("selected") == 1
    assert '<option value="solution" selected>' in answer_select

    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(url, shown)
    task_import.refresh_from_db()
    assert task_import.status == "succeeded", task_import.error
    tasks = task_import.task_set.tasks.order_by("position")
    assert [t.reference for t in tasks] == [{"answer": "4"}, {"answer": "9"}, {"answer": "3"}]
    assert {t.verifier_kind for t in tasks} == {"numeric"}


@pytest.mark.parametrize(
    ("columns", "records", "expected"),
    [
        pytest.param(
            ["problem", "solution", "tests"],
            [{"problem": "Add.", "solution": "def add(a, b):\n    return a + b", "tests": "..."}],
            {"prompt": "problem", "solution": "solution", "tests": "tests"},
            id="code-solution-stays-a-solution",
        ),
        pytest.param(
            ["question", "output"],
            [{"question": "Write f.", "output": "```python\ndef f():\n    pass\n```"}],
            {"prompt": "question", "solution": "output"},
            id="code-named-output-is-a-solution",
        ),
        pytest.param(
            ["question", "result", "topic"],
            [
                {"question": "1+1?", "result": 2, "topic": "sums"},
                {"question": "?", "result": "3/4"},
            ],
            {"prompt": "question", "answer": "result", "domain": "topic"},
            id="the-one-number-column-is-the-answer",
        ),
        pytest.param(
            ["question", "x", "y"],
            [{"question": "?", "x": 1, "y": 2}],
            {"prompt": "question"},
            id="two-number-columns-are-left-to-the-researcher",
        ),
        pytest.param(
            ["question", "answer"],
            [{"question": "Capital of France?", "answer": "Paris"}],
            {"prompt": "question", "answer": "answer"},
            id="names-still-win",
        ),
    ],
)
def test_guess_from_values(
    columns: list[str], records: list[dict[str, Any]], expected: dict[str, str]
) -> None:
    assert guess_mapping(columns, records) == expected


BAD_LEVEL = b"question,solution,level\nWhat is 2 + 2?,4,1\nWhat is 3 * 3?,9,hard\n"


def test_a_failed_import_can_be_mapped_again_without_uploading_again(
    researcher_client, import_worker, django_capture_on_commit_callbacks, media_root
) -> None:  # type: ignore[no-untyped-def]
    task_import = upload(researcher_client, "levels.csv", BAD_LEVEL)
    url = reverse("task_import_map", args=[task_import.pk])
    first_try = form_as_shown(researcher_client.get(url))
    assert first_try["map_difficulty"] == "level"
    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(url, first_try)
    task_import.refresh_from_db()
    assert task_import.status == "failed"
    assert task_import.error.startswith(
        "line 3: field 'difficulty' (mapped from column 'level'): could not convert"
    )
    assert not TaskSet.objects.exists()
    assert task_import.upload, "the upload is kept for mapping again"

    detail = researcher_client.get(reverse("task_import_detail", args=[task_import.pk]))
    assert f'id="change-mapping" href="{url}"' in detail.content.decode()

    # The form comes back as it was tried, with the error, over the same file.
    page = researcher_client.get(url)
    assert form_as_shown(page) == first_try
    assert "line 3: field &#x27;difficulty&#x27;" in page.content.decode()
    second_try = {key: value for key, value in first_try.items() if key != "map_difficulty"}
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(url, second_try)
    assert response["Location"] == reverse("task_import_detail", args=[task_import.pk])
    task_import.refresh_from_db()
    assert task_import.status == "succeeded", task_import.error
    assert task_import.error == "" and task_import.attempts == 1
    assert task_import.task_set.tasks.count() == 2
    assert not task_import.upload and not list((media_root / "imports").iterdir())

    # Done: the mapping step is closed again.
    assert researcher_client.get(url)["Location"] == detail.request["PATH_INFO"]


def test_a_malformed_file_mapped_again_still_names_the_line_and_imports_nothing(
    researcher_client, import_worker, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    # Past the records the mapping step previews, so the worker is the first to read it.
    good = b'{"q": "1+1?", "a": "2"}\n' * 6
    task_import = upload(researcher_client, "bad.jsonl", good + b'{"q": "x", "a": \n')
    url = reverse("task_import_map", args=[task_import.pk])
    for _attempt in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            researcher_client.post(url, {"map_prompt": "q", "map_answer": "a"})
        task_import.refresh_from_db()
        assert task_import.status == "failed"
        assert task_import.error.startswith("line 7: malformed JSON: Expecting value")
        assert not TaskSet.objects.exists()


def test_dialab_exports_fail_without_keeping_the_upload(
    researcher_client, import_worker, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    """Dialab's own format has no mapping to change: its upload goes as before."""
    content = b'{"prompt": "1+1?"}\n'
    data = {
        "task_set_name": "Export",
        "source": "upload",
        "file_format": "dialab",
        "file": SimpleUploadedFile("set.jsonl", content),
    }
    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(reverse("task_import_start"), data)
    task_import = TaskImport.objects.get()
    assert task_import.status == "failed" and not task_import.upload
    assert not task_import.can_change_mapping
    url = reverse("task_import_map", args=[task_import.pk])
    assert researcher_client.get(url).status_code == 302


def test_an_imported_set_records_and_shows_its_source_and_mapping(
    researcher_client, import_worker, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    task_import = upload(researcher_client, "tasks.csv", (DATA / "tasks.csv").read_bytes())
    url = reverse("task_import_map", args=[task_import.pk])
    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(url, form_as_shown(researcher_client.get(url)))
    task_import.refresh_from_db()
    provenance = task_import.task_set.provenance
    assert provenance["import"] == "upload" and provenance["format"] == "csv"
    assert provenance["file"].startswith("tasks") and provenance["file"].endswith(".csv")
    assert provenance["mapping"]["answer"] == "solution"
    assert provenance["defaults"] == {"verifier_kind": "numeric"}
    page = researcher_client.get(reverse("task_set_detail", args=[task_import.task_set.pk]))
    assert "answer ← solution" in page.content.decode()
