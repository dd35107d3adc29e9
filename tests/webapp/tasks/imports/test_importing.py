"""Task imports: readers, mapping, every bad input (which imports nothing and names the line and
field), built-in sources, the web flow, the worker task and the command."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from tests.factories import TaskSetFactory
from webapp.tasks.imports.claims import task_import_claim, worker_identity
from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.imports.mapping import FieldMapping, lookup
from webapp.tasks.imports.preview import lic_guess, preview
from webapp.tasks.imports.readers import read_csv, read_json, read_jsonl
from webapp.tasks.imports.services import import_into_task_set, task_import_execute
from webapp.tasks.imports.sources import (
    HUMANEVAL_INSTRUCTION,
    file_source,
    hf_dataset_source,
    humaneval_source,
)
from webapp.tasks.models import Task, TaskImport, TaskSet

DATA = Path(__file__).resolve().parents[4] / "tests" / "data"
CSV_MAPPING = FieldMapping(
    {"prompt": "question", "answer": "solution", "difficulty": "level", "domain": "topic"},
    {"verifier_kind": "numeric"},
    "column",
)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def run_file(path: Path, file_format: str, mapping: FieldMapping | None = None) -> TaskSet:
    with path.open("rb") as stream:
        source = file_source(stream, file_format=file_format, mapping=mapping)
        return import_into_task_set(source=source, task_set_name=path.stem)


def write(tmp_path: Path, name: str, content: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


# --- Readers -----------------------------------------------------------------------------------


def test_jsonl_reader_yields_line_numbers_and_skips_blank_lines() -> None:
    with (DATA / "tasks.jsonl").open("rb") as stream:
        records = list(read_jsonl(stream))
    assert [number for number, _ in records] == [1, 3, 4]
    assert records[1][1]["q"] == "Wie viel ist 5 × 6?"


def test_csv_reader_numbers_rows_by_the_physical_line_they_start_on() -> None:
    with (DATA / "tasks.csv").open("rb") as stream:
        records = list(read_csv(stream))
    assert [number for number, _ in records] == [2, 3, 5]
    assert records[1][1]["question"] == "A line\nthat spans two lines: 3 * 3?"


def test_json_reader_streams_a_top_level_array_and_a_list_inside_an_object() -> None:
    with (DATA / "lost_in_conversation.json").open("rb") as stream:
        assert [n for n, _ in read_json(stream)] == [1, 2]
    with (DATA / "wrapped.json").open("rb") as stream:
        records = list(read_json(stream))
    assert records == [
        (1, {"prompt": "2 + 3?", "answer": 5}),
        (2, {"prompt": "7 - 1?", "answer": 6.0}),
    ]


def test_lookup_follows_dotted_paths_into_objects_and_lists() -> None:
    record = {"meta": {"answers": ["a", "b"]}, "x.y": 1}
    assert lookup(record, "meta.answers.1") == "b"
    assert lookup(record, "x.y") == 1
    assert lookup(record, "meta.missing") is None


# --- Mapping -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_csv_import_maps_columns_converts_values_and_keeps_positions() -> None:
    task_set = run_file(DATA / "tasks.csv", "csv", CSV_MAPPING)
    tasks = list(task_set.tasks.order_by("position"))
    assert [t.position for t in tasks] == [0, 1, 2]
    assert [t.reference for t in tasks] == [{"answer": "4"}, {"answer": "9"}, {"answer": "3"}]
    assert [t.difficulty for t in tasks] == [1.0, 2.0, 1.5]
    assert {t.verifier_kind for t in tasks} == {"numeric"}
    assert {t.domain for t in tasks} == {"arithmetic"}


@pytest.mark.django_db
def test_jsonl_import_with_nested_dotted_paths_tags_and_defaults() -> None:
    mapping = FieldMapping(
        {"prompt": "q", "answer": "meta.answer", "difficulty": "meta.level", "tags": "labels"},
        {"domain": "arithmetic"},
    )
    tasks = list(run_file(DATA / "tasks.jsonl", "jsonl", mapping).tasks.order_by("position"))
    assert [t.reference["answer"] for t in tasks] == ["2", "30", "3"]
    assert [t.difficulty for t in tasks] == [1.0, 2.0, None]
    assert tasks[0].tags == ["easy", "sum"] and tasks[2].tags == []
    assert tasks[0].verifier_kind == "exact", "no tests and no default: exact"
    assert tasks[1].prompt == "Wie viel ist 5 × 6?"


@pytest.mark.django_db
def test_lost_in_conversation_shards_are_ordered_by_shard_id() -> None:
    with (DATA / "lost_in_conversation.json").open("rb") as stream:
        columns, _ = preview(read_json(stream))
    guess = lic_guess(columns)
    assert guess == {
        "shards": "shards",
        "external_id": "task_id",
        "domain": "task",
        "prompt": "question",
        "answer": "answer",
    }
    tasks = list(
        run_file(DATA / "lost_in_conversation.json", "json", FieldMapping(guess)).tasks.order_by(
            "position"
        )
    )
    assert tasks[0].shards == [
        "How many apples does Tom have?",
        "Tom starts with 3 apples.",
        "He buys 4 more.",
    ]
    assert tasks[1].shards[-1] == "There are 5 boxes.", "10 sorts after 2 (numbers, not text)"
    assert tasks[1].external_id == "sharded-gsm8k-2" and tasks[1].domain == "math"


@pytest.mark.django_db
def test_humaneval_imports_164_code_tasks() -> None:
    task_set = import_into_task_set(source=humaneval_source(), task_set_name="HumanEval")
    assert task_set.tasks.count() == 164
    first = task_set.tasks.get(position=0)
    assert first.external_id == "HumanEval/0"
    assert first.verifier_kind == "code" and first.domain == "code"
    assert set(first.reference) == {"tests", "entry_point", "solution", "prompt_prefix"}
    assert first.reference["prompt_prefix"].startswith("from typing import List")
    assert first.reference["entry_point"] == "has_close_elements"
    assert "def check(candidate)" in first.reference["tests"]
    assert first.prompt.startswith(HUMANEVAL_INSTRUCTION)
    assert "```python\nfrom typing import List" in first.prompt
    assert first.reference["solution"].startswith("from typing import List")


@pytest.mark.django_db
def test_imported_humaneval_grades_on_the_prompts_own_helpers() -> None:
    """HumanEval/38's tests call ``encode_cyclic``, which the prompt defines: an answer that
    gives only the function asked for passes, one that redefines the helper to fit fails."""
    from models_gpu.verifiers import verify
    from webapp.tasks.selectors import task_payloads
    from workers.specs import task_spec

    task_set = import_into_task_set(source=humaneval_source(), task_set_name="HumanEval")
    assert task_set.tasks.get(position=38).external_id == "HumanEval/38"
    task = task_spec(task_payloads(task_set_id=task_set.pk)[38])
    honest = "def decode_cyclic(s: str):\n    return encode_cyclic(encode_cyclic(s))\n"
    assert verify(task, f"```python\n{honest}```").correct
    cheat = "def encode_cyclic(s):\n    return s\n\ndef decode_cyclic(s):\n    return s\n"
    verdict = verify(task, f"```python\n{cheat}```")
    assert not verdict.correct and verdict.details["reason"] == "tests_failed"


@pytest.mark.django_db
def test_imported_humaneval_solutions_verify_in_the_sandbox() -> None:
    """The imported reference solution passes the task's own tests through the code verifier,
    and a wrong one fails: the task as stored is usable."""
    from models_gpu.verifiers import verify
    from webapp.tasks.selectors import task_payloads
    from workers.specs import task_spec

    task_set = import_into_task_set(source=humaneval_source(), task_set_name="HumanEval")
    for payload in task_payloads(task_set_id=task_set.pk)[:4]:
        task = task_spec(payload)
        solution = payload["reference"]["solution"]
        assert verify(task, f"```python\n{solution}\n```").correct, payload["prompt"]
        entry_point = payload["reference"]["entry_point"]
        broken = f"{solution}\n\ndef {entry_point}(*args, **kwargs):\n    return None\n"
        assert not verify(task, f"```python\n{broken}\n```").correct


@pytest.mark.django_db
def test_hf_dataset_from_a_local_saved_directory(tmp_path: Path) -> None:
    import datasets

    rows = [{"problem": f"What is {n} + {n}?", "target": str(2 * n), "level": n} for n in range(7)]
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(rows), "test": datasets.Dataset.from_list(rows[:2])}
    ).save_to_disk(str(tmp_path / "sums"))
    mapping = FieldMapping({"prompt": "problem", "answer": "target", "difficulty": "level"})
    source = hf_dataset_source(str(tmp_path / "sums"), split="test", mapping=mapping)
    task_set = import_into_task_set(source=source, task_set_name="sums")
    assert list(task_set.tasks.order_by("position").values_list("prompt", "reference")) == [
        ("What is 0 + 0?", {"answer": "0"}),
        ("What is 1 + 1?", {"answer": "2"}),
    ]
    default_split = hf_dataset_source(str(tmp_path / "sums"), split="", mapping=mapping)
    assert default_split.total == 7, "train is the default split"


def test_hf_dataset_name_that_needs_the_hub_fails_at_once_with_a_clear_message() -> None:
    mapping = FieldMapping({"prompt": "q", "answer": "a"})
    with pytest.raises(TaskImportError, match="hub access is off"):
        hf_dataset_source("openai/gsm8k", split="", mapping=mapping)


# --- Bad input: nothing is imported, and the message names the line and field ----------------

BAD_INPUTS = [
    pytest.param(
        "bad.jsonl",
        b'{"q": "1+1?", "a": "2"}\n{"q": "2+2?", "a": "4"\n',
        "jsonl",
        r"^line 2: malformed JSON: Expecting ',' delimiter \(column 23\)$",
        id="malformed-json-line",
    ),
    pytest.param(
        "bad.jsonl",
        b'{"q": "1+1?", "a": "2"}\n{"q": "caf\xff", "a": "4"}\n',
        "jsonl",
        r"^line 2: not valid UTF-8 \(byte 0xff at column 11\)$",
        id="wrong-encoding-jsonl",
    ),
    pytest.param(
        "bad.csv",
        b"q,a\n1+1?,2\n3+3?,6\nna\xefve?,1\n",
        "csv",
        r"^line 4: not valid UTF-8 \(byte 0xef at column 3\)$",
        id="wrong-encoding-csv",
    ),
    pytest.param(
        "bad.json",
        b'[{"q": "1+1?", "a": "2"},\n {"q": "caf\xe9!", "a": "4"}]',
        "json",
        r"^line 2: not valid UTF-8 \(byte 0xe9 at column 12\)$",
        id="wrong-encoding-json",
    ),
    pytest.param(
        "bad.jsonl",
        b'{"q": "1+1?", "a": "2"}\n{"question": "2+2?", "a": "4"}\n',
        "jsonl",
        r"^line 2: missing required field 'prompt' \(mapped from key 'q'\)$",
        id="missing-prompt",
    ),
    pytest.param(
        "bad.jsonl",
        b'{"q": "1+1?", "a": "2"}\n{"q": "2+2?", "a": ""}\n',
        "jsonl",
        r"^line 2: missing required field 'answer' \(mapped from key 'a'\)$",
        id="missing-answer",
    ),
    pytest.param(
        "bad.json",
        b'[{"q": "1+1?", "a": "2"}, {"q": "2+2?", "a": "4"} {"q": "x"}]',
        "json",
        r"^item 3 \(near line 1\): malformed JSON",
        id="malformed-json-array",
    ),
    pytest.param("empty.jsonl", b"", "jsonl", r"^the file is empty", id="empty-file"),
    pytest.param(
        "blank.jsonl", b"\n\n", "jsonl", r"^the source has no records", id="only-blank-lines"
    ),
    pytest.param(
        "header.csv", b"q,a\n", "csv", r"^the source has no records", id="csv-header-only"
    ),
    pytest.param(
        "bad.csv",
        b"q,answer\n1+1?,2\n",
        "csv",
        r"^line 1: the CSV header has no column 'a' \(for answer\); it has: q, answer$",
        id="csv-missing-column",
    ),
    pytest.param(
        "bad.csv",
        b"q,a\n1+1?,2\n2+2?,4,extra\n",
        "csv",
        r"^line 3: 3 values but the header names 2 columns$",
        id="csv-extra-value",
    ),
    pytest.param(
        "bad.jsonl",
        b'{"q": "1+1?", "a": "2", "d": "hard"}\n',
        "jsonl",
        r"^line 1: field 'difficulty' \(mapped from key 'd'\): could not convert",
        id="bad-difficulty",
    ),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "content", "file_format", "message"), BAD_INPUTS)
def test_bad_input_imports_nothing_and_names_the_line_and_field(
    tmp_path: Path, name: str, content: bytes, file_format: str, message: str
) -> None:
    path = write(tmp_path, name, content)
    columns = {"prompt": "q", "answer": "a"}
    if file_format == "csv":
        mapping = FieldMapping(columns, column_word="column")
    else:
        mapping = FieldMapping({**columns, "difficulty": "d"})
    with pytest.raises(TaskImportError, match=message):
        run_file(path, file_format, mapping)
    assert not TaskSet.objects.exists() and not Task.objects.exists()


@pytest.mark.django_db
def test_a_bad_record_after_several_batches_rolls_back_every_batch(tmp_path: Path) -> None:
    lines = [json.dumps({"q": f"{n}+1?", "a": str(n + 1)}) for n in range(45)]
    lines.append('{"q": "broken"')
    path = write(tmp_path, "big.jsonl", "\n".join(lines) + "\n")
    with path.open("rb") as stream:
        source = file_source(
            stream, file_format="jsonl", mapping=FieldMapping({"prompt": "q", "answer": "a"})
        )
        with pytest.raises(TaskImportError, match=r"^line 46: malformed JSON"):
            import_into_task_set(source=source, task_set_name="big", batch_size=10)
    assert not Task.objects.exists() and not TaskSet.objects.exists()


@pytest.mark.django_db
def test_file_over_the_size_limit_is_refused_before_reading(settings, tmp_path: Path) -> None:
    settings.DIALAB_MAX_UPLOAD_BYTES = 10
    path = write(tmp_path, "big.jsonl", b'{"q": "1+1?", "a": "2"}\n')
    with pytest.raises(TaskImportError, match=r"the largest accepted is"):
        run_file(path, "jsonl", FieldMapping({"prompt": "q", "answer": "a"}))
    assert not TaskSet.objects.exists()


def test_a_mapping_without_prompt_or_reference_is_refused_before_reading() -> None:
    problems = FieldMapping({"answer": "a"}).problems()
    assert "map a source field to 'prompt'" in problems
    assert FieldMapping({"prompt": "q"}).problems() == [
        "map a source field to 'answer' or to 'tests' (the reference)"
    ]
    assert (
        "unknown verifier 'fuzzy'"
        in FieldMapping({"prompt": "q", "answer": "a"}, {"verifier_kind": "fuzzy"}).problems()[0]
    )


# --- Web flow ----------------------------------------------------------------------------------


@pytest.fixture
def import_worker(eager_celery):  # type: ignore[no-untyped-def]
    import workers.task_imports  # noqa: F401  (registers the import task for eager dispatch)

    return eager_celery


def start_upload(client, name: str, content: bytes, **fields: str):  # type: ignore[no-untyped-def]
    upload = SimpleUploadedFile(name, content)
    data = {"task_set_name": "Uploaded", "source": "upload", "file": upload, **fields}
    return client.post(reverse("task_import_start"), data)


@pytest.mark.django_db
def test_upload_preview_map_and_import_through_the_worker_task(
    researcher_client, import_worker, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    response = start_upload(researcher_client, "tasks.csv", (DATA / "tasks.csv").read_bytes())
    task_import = TaskImport.objects.get()
    assert task_import.status == "draft" and task_import.file_format == "csv"
    assert response["Location"] == reverse("task_import_map", args=[task_import.pk])

    page = researcher_client.get(response["Location"])
    assert page.context["columns"] == ["question", "solution", "level", "topic"]
    assert len(page.context["rows"]) == 3
    html = page.content.decode()
    assert "What is 10 - 7?" in html
    assert 'value="question" selected' in html, "the prompt column is guessed"

    mapping = {"map_prompt": "question", "map_answer": "solution", "map_difficulty": "level"}
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(
            page.request["PATH_INFO"], {**mapping, "default_verifier_kind": "numeric"}
        )
    assert response["Location"] == reverse("task_import_detail", args=[task_import.pk])
    task_import.refresh_from_db()
    assert task_import.status == "succeeded", task_import.error
    assert task_import.progress_done == 3 and task_import.progress_total == 3
    assert not task_import.upload, "the upload is not kept once imported"
    assert (
        list(task_import.task_set.tasks.values_list("verifier_kind", flat=True)) == ["numeric"] * 3
    )

    live = researcher_client.get(reverse("task_import_live", args=[task_import.pk]))
    assert live.status_code == 286, "finished imports stop the polling"
    assert reverse("task_set_detail", args=[task_import.task_set.pk]) in live.content.decode()


@pytest.mark.django_db
def test_mapping_step_requires_a_prompt_and_a_reference(researcher_client) -> None:  # type: ignore[no-untyped-def]
    start_upload(researcher_client, "tasks.csv", (DATA / "tasks.csv").read_bytes())
    task_import = TaskImport.objects.get()
    response = researcher_client.post(
        reverse("task_import_map", args=[task_import.pk]), {"map_prompt": "question"}
    )
    assert "Map a source field to &#x27;answer&#x27; or to &#x27;tests&#x27;" in (
        response.content.decode()
    )
    task_import.refresh_from_db()
    assert task_import.status == "draft"


@pytest.mark.django_db
def test_a_bad_file_fails_the_import_with_the_line_and_imports_nothing(
    researcher_client, import_worker, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    content = b'{"q": "1+1?", "a": "2"}\n{"q": "2+2?"}\n'
    start_upload(researcher_client, "bad.jsonl", content)
    task_import = TaskImport.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(
            reverse("task_import_map", args=[task_import.pk]),
            {"map_prompt": "q", "map_answer": "a"},
        )
    task_import.refresh_from_db()
    assert task_import.status == "failed"
    assert task_import.error == "line 2: missing required field 'answer' (mapped from key 'a')"
    assert not TaskSet.objects.exists()
    live = researcher_client.get(reverse("task_import_live", args=[task_import.pk]))
    assert live.status_code == 286 and "line 2: missing required field" in live.content.decode()


@pytest.mark.django_db
def test_oversized_and_empty_uploads_are_refused_by_the_form(researcher_client, settings) -> None:  # type: ignore[no-untyped-def]
    settings.DIALAB_MAX_UPLOAD_BYTES = 16
    response = start_upload(researcher_client, "big.csv", b"q,a\n" + b"1+1?,2\n" * 10)
    assert "This file is too large" in response.content.decode()
    response = start_upload(researcher_client, "empty.csv", b"")
    assert "empty" in response.content.decode()
    assert not TaskImport.objects.exists()


@pytest.mark.django_db
def test_humaneval_from_the_web_needs_no_mapping(
    researcher_client, import_worker, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(
            reverse("task_import_start"), {"task_set_name": "HE", "source": "humaneval"}
        )
    task_import = TaskImport.objects.get()
    assert response["Location"] == reverse("task_import_detail", args=[task_import.pk])
    task_import.refresh_from_db()
    assert task_import.status == "succeeded" and task_import.task_set.tasks.count() == 164


def test_a_pending_import_is_claimed_once(db) -> None:  # type: ignore[no-untyped-def]
    task_import = TaskImport.objects.create(source="humaneval", task_set_name="x")
    this_process = worker_identity()
    assert task_import_claim(import_id=task_import.pk, worker=this_process)
    assert not task_import_claim(import_id=task_import.pk, worker="another-host:1")
    task_import_execute(import_id=task_import.pk)  # already running: does nothing
    assert not TaskSet.objects.exists()


IMPORT_VIEWS = ["task_import_detail", "task_import_map", "task_import_live"]


@pytest.mark.django_db
def test_annotators_cannot_use_any_import_or_export_view(annotator_client) -> None:  # type: ignore[no-untyped-def]
    task_import = TaskImport.objects.create(source="upload", task_set_name="x", status="draft")
    for name in IMPORT_VIEWS:
        assert annotator_client.get(reverse(name, args=[task_import.pk])).status_code == 403
        assert annotator_client.post(reverse(name, args=[task_import.pk])).status_code == 403
    assert annotator_client.get(reverse("task_import_start")).status_code == 403
    upload = SimpleUploadedFile("t.csv", b"q,a\n1,1\n")
    response = annotator_client.post(
        reverse("task_import_start"), {"task_set_name": "x", "source": "upload", "file": upload}
    )
    assert response.status_code == 403
    task_set = TaskSetFactory()
    assert annotator_client.get(reverse("task_set_export", args=[task_set.pk])).status_code == 403
    assert TaskImport.objects.count() == 1


@pytest.mark.django_db
def test_researchers_reach_the_import_page_from_the_task_set_list(researcher_client) -> None:  # type: ignore[no-untyped-def]
    html = researcher_client.get(reverse("task_set_list")).content.decode()
    assert reverse("task_import_start") in html
    assert researcher_client.get(reverse("task_import_start")).status_code == 200


# --- Command -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_import_command_maps_columns_and_sets_defaults() -> None:
    out = io.StringIO()
    call_command(
        "import_tasks", str(DATA / "tasks.csv"), "--name", "cli", "--map", "prompt=question",
        "--map", "answer=solution", "--default", "verifier_kind=numeric", "--no-progress",
        stdout=out,
    )  # fmt: skip
    task_set = TaskSet.objects.get(name="cli")
    assert f"Imported 3 tasks into task set {task_set.pk}" in out.getvalue()
    assert set(task_set.tasks.values_list("verifier_kind", flat=True)) == {"numeric"}


@pytest.mark.django_db
def test_import_command_fails_with_the_line_and_imports_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.jsonl", b'{"q": "1"}\n{"q": "2", "a": "x"}\n{oops}\n')
    with pytest.raises(CommandError, match=r"^Nothing imported: line 1: missing required field"):
        call_command("import_tasks", str(path), "--map", "prompt=q", "--map", "answer=a")
    assert not TaskSet.objects.exists()


@pytest.mark.django_db
def test_import_command_builtin_sources(tmp_path: Path) -> None:
    call_command("import_tasks", "--humaneval", "--no-progress", stdout=io.StringIO())
    assert TaskSet.objects.get(name="HumanEval").tasks.count() == 164
    call_command(
        "import_tasks", "--lost-in-conversation", str(DATA / "lost_in_conversation.json"),
        "--name", "lic", "--no-progress", stdout=io.StringIO(),
    )  # fmt: skip
    lic = TaskSet.objects.get(name="lic").tasks.get(position=0)
    assert lic.shards[0] == "How many apples does Tom have?"


def test_import_command_exits_non_zero_from_the_shell(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    path = write(tmp_path, "bad.csv", b"q,a\n1+1?,2\n\xff,3\n")
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    root = Path(__file__).resolve().parents[4]
    migrate = [sys.executable, "manage.py", "migrate", "-v0"]
    subprocess.run(migrate, cwd=root, env=env, check=True)
    result = subprocess.run(
        [sys.executable, "manage.py", "import_tasks", str(path), "--map", "prompt=q",
         "--map", "answer=a", "--no-progress"],
        cwd=root, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert result.returncode != 0
    assert "line 3: not valid UTF-8 (byte 0xff at column 1)" in result.stderr


# Records in MBPP's shape (our own problems): the tests rely on the solution's imports, on setup
# code, on a function named like a builtin, and pass a class as an argument.
MBPP_SHAPED = [
    {
        "task_id": 1,
        "text": "Write a function for the area of a circle of radius r.",
        "code": "import math\ndef circle_area(r):\n    return math.pi * r * r",
        "test_setup_code": "",
        "test_list": ["assert math.isclose(circle_area(1), 3.14159, rel_tol=1e-3)"],
    },
    {
        "task_id": 2,
        "text": "Write a function for the depth of a binary tree.",
        "code": (
            "class Node:\n    def __init__(self, left=None, right=None):\n"
            "        self.left, self.right = left, right\n"
            "def depth(node):\n    if node is None:\n        return 0\n"
            "    return 1 + max(depth(node.left), depth(node.right))"
        ),
        "test_setup_code": "root = Node(Node(Node()), Node())",
        "test_list": ["assert depth(root) == 3", "assert depth(None) == 0"],
    },
    {
        "task_id": 3,
        "text": "Write a function sum(a, b) for the sum of the common divisors of a and b.",
        "code": (
            "def sum(a, b):\n    total = 0\n    for i in range(1, min(a, b) + 1):\n"
            "        if a % i == 0 and b % i == 0:\n            total += i\n    return total"
        ),
        "test_setup_code": "",
        "test_list": ["assert sum(10, 15) == 6", "assert sum(4, 6) == 3"],
    },
    {
        "task_id": 4,
        "text": "Write a function that removes the elements of a given type from a tuple.",
        "code": (
            "def remove_type(items, kind):\n"
            "    return [x for x in items if not isinstance(x, kind)]"
        ),
        "test_setup_code": "",
        "test_list": ["assert remove_type((4, 7.5, 'a'), int) == [7.5, 'a']"],
    },
]


@pytest.mark.django_db
def test_mbpp_shaped_records_import_with_a_guessed_mapping_and_grade_right(tmp_path: Path) -> None:
    from models_gpu.verifiers import verify
    from webapp.tasks.imports.preview import guess_mapping
    from webapp.tasks.selectors import task_payloads
    from workers.specs import task_spec

    guess = guess_mapping(MBPP_SHAPED[0].keys(), MBPP_SHAPED)
    assert guess == {
        "prompt": "text",
        "tests": "test_list",
        "tests_setup": "test_setup_code",
        "solution": "code",
        "external_id": "task_id",
    }
    path = write(tmp_path, "mbpp.jsonl", "\n".join(json.dumps(r) for r in MBPP_SHAPED))
    task_set = run_file(path, "jsonl", FieldMapping(guess, {"verifier_kind": "code"}, "key"))
    for payload in task_payloads(task_set_id=task_set.pk):
        task = task_spec(payload)
        solution = payload["reference"]["solution"]
        verdict = verify(task, f"```python\n{solution}\n```")
        assert verdict.correct, (payload["reference"], verdict.details)
        wrong = solution.rsplit("return", 1)[0] + "return None"
        assert not verify(task, f"```python\n{wrong}\n```").correct, payload["reference"]
    assert task_set.tasks.get(position=1).reference["tests"].startswith("root = Node(")
