"""An import checks each record's reference with the task editor's rule (one function,
``models_gpu.spec.verifiers.reference_problems``): a row its verifier cannot check refuses the
whole import with its line and the reason, and the mapping step shows it before a worker runs.
Before, a numeric answer "six" imported ("Imported 5/5") and every evaluation then failed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from models_gpu.spec.numbers import reference_number
from models_gpu.spec.verifiers import reference_problems
from webapp.tasks.forms import TaskForm
from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.imports.mapping import FieldMapping, build_dialab_task
from webapp.tasks.imports.services import import_into_task_set
from webapp.tasks.imports.sources import file_source, humaneval_source
from webapp.tasks.models import Task, TaskImport, TaskSet

NUMERIC_CSV = FieldMapping(
    {"prompt": "question", "answer": "answer"}, {"verifier_kind": "numeric"}, "column"
)
SIX = "the numeric verifier needs a number (like 42, -3.5 or 3/4); got 'six'"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def run(tmp_path: Path, name: str, content: str, file_format: str, mapping: Any) -> TaskSet:
    path = tmp_path / name
    path.write_text(content)
    with path.open("rb") as stream:
        source = file_source(stream, file_format=file_format, mapping=mapping)
        return import_into_task_set(source=source, task_set_name=path.stem)


def csv_with(answers: list[str]) -> str:
    rows = [f"What is {n} + {n}?,{answer}" for n, answer in enumerate(answers)]
    return "question,answer\n" + "\n".join(rows) + "\n"


# --- The import refuses, names the line and the reason, and stores nothing ----------------------


@pytest.mark.django_db
def test_csv_with_a_word_for_a_numeric_answer_is_refused_with_its_line(tmp_path: Path) -> None:
    content = csv_with(["0", "2", "six", "6", "8"])  # the bad row is line 4 (the header is 1)
    with pytest.raises(TaskImportError) as refused:
        run(tmp_path, "sums.csv", content, "csv", NUMERIC_CSV)
    assert str(refused.value) == f"line 4: field 'answer' (mapped from column 'answer'): {SIX}"
    assert not TaskSet.objects.exists() and not Task.objects.exists()


@pytest.mark.django_db
def test_jsonl_with_a_word_for_a_numeric_answer_is_refused_with_its_line(tmp_path: Path) -> None:
    lines = [{"q": "1 + 1?", "a": 2}, {"q": "2 + 2?", "a": "4"}, {"q": "3 + 3?", "a": "six"}]
    content = "\n".join(json.dumps(line) for line in lines) + "\n"
    mapping = FieldMapping({"prompt": "q", "answer": "a"}, {"verifier_kind": "numeric"})
    with pytest.raises(TaskImportError) as refused:
        run(tmp_path, "sums.jsonl", content, "jsonl", mapping)
    assert str(refused.value) == f"line 3: field 'answer' (mapped from key 'a'): {SIX}"
    assert not TaskSet.objects.exists() and not Task.objects.exists()


@pytest.mark.django_db
def test_a_verifier_kind_column_is_checked_row_by_row(tmp_path: Path) -> None:
    """A word is a fine answer for exact, not for numeric: the rule follows each row's kind."""
    content = "q,a,kind\n1+1?,2,numeric\nCapital of France?,Paris,exact\nHalf of 7?,three,numeric\n"
    mapping = FieldMapping({"prompt": "q", "answer": "a", "verifier_kind": "kind"}, {}, "column")
    with pytest.raises(TaskImportError, match=r"^line 4: field 'answer' .*got 'three'$"):
        run(tmp_path, "mixed.csv", content, "csv", mapping)
    assert not Task.objects.exists()


@pytest.mark.django_db
def test_dialab_jsonl_with_a_bad_numeric_reference_is_refused_with_its_line(
    tmp_path: Path,
) -> None:
    lines = [
        {"prompt": "1 + 1?", "reference": {"answer": "2"}, "verifier_kind": "numeric"},
        {"prompt": "2 + 2?", "reference": {"answer": "four"}, "verifier_kind": "numeric"},
    ]
    content = "\n".join(json.dumps(line) for line in lines) + "\n"
    with pytest.raises(TaskImportError) as refused:
        run(tmp_path, "export.jsonl", content, "dialab", None)
    assert str(refused.value) == (
        "line 2: field 'reference.answer': the numeric verifier needs a number "
        "(like 42, -3.5 or 3/4); got 'four'"
    )
    assert not TaskSet.objects.exists()


@pytest.mark.django_db
def test_dialab_jsonl_with_an_unknown_verifier_setting_is_refused(tmp_path: Path) -> None:
    line = {"prompt": "1 + 1?", "reference": {"answer": "2"}, "verifier_kind": "numeric"}
    content = json.dumps({**line, "verifier_config": {"tolerance": 0.1}}) + "\n"
    with pytest.raises(TaskImportError, match=r"^line 1: field 'verifier_config': .*tolerance"):
        run(tmp_path, "export.jsonl", content, "dialab", None)


# --- Code tasks: HumanEval, MBPP-style asserts, a check() with no entry point --------------------


@pytest.mark.django_db
def test_humaneval_still_imports_every_problem() -> None:
    task_set = import_into_task_set(source=humaneval_source(), task_set_name="HumanEval")
    assert task_set.tasks.count() == 164


@pytest.mark.django_db
def test_mbpp_style_records_import_with_their_test_list_as_source(tmp_path: Path) -> None:
    """MBPP's records: ``text``, ``code``, ``test_list`` (asserts calling the function by name),
    no entry point. The asserts become the tests, one per line, as the code verifier reads them."""
    record = {
        "task_id": 11,
        "text": "Write a python function to remove first and last occurrence of a given character.",
        "code": "def remove_Occ(s, ch):\n    return s.replace(ch, '', 1)",
        "test_list": [
            'assert remove_Occ("hello","l") == "heo"',
            'assert remove_Occ("abcda","a") == "bcd"',
        ],
    }
    mapping = FieldMapping(
        {"prompt": "text", "tests": "test_list", "solution": "code", "external_id": "task_id"},
        {"domain": "code"},
    )
    task = run(tmp_path, "mbpp.jsonl", json.dumps(record) + "\n", "jsonl", mapping).tasks.get()
    assert task.verifier_kind == "code" and task.external_id == "11"
    assert task.reference["tests"] == "\n".join(record["test_list"])
    assert "entry_point" not in task.reference


@pytest.mark.django_db
def test_a_check_function_without_an_entry_point_is_refused(tmp_path: Path) -> None:
    record = {
        "p": "Add two numbers.",
        "t": "def check(candidate):\n    assert candidate(1, 2) == 3",
    }
    mapping = FieldMapping({"prompt": "p", "tests": "t"})
    with pytest.raises(TaskImportError) as refused:
        run(tmp_path, "code.jsonl", json.dumps(record) + "\n", "jsonl", mapping)
    assert str(refused.value).startswith(
        "line 1: field 'entry_point' (not mapped): the code verifier needs the entry point"
    )


# --- The mapping step shows the problem, and does not send such a mapping to a worker -----------


@pytest.fixture
def import_worker(eager_celery):  # type: ignore[no-untyped-def]
    import workers.task_imports  # noqa: F401  (registers the import task for eager dispatch)

    return eager_celery


def upload(client, name: str, content: bytes) -> TaskImport:  # type: ignore[no-untyped-def]
    data = {"task_set_name": "Sums", "source": "upload", "file": SimpleUploadedFile(name, content)}
    client.post(reverse("task_import_start"), data)
    return TaskImport.objects.latest("pk")


MAPPING_POST = {
    "map_prompt": "question",
    "map_answer": "answer",
    "default_verifier_kind": "numeric",
}


@pytest.mark.django_db
def test_the_mapping_step_shows_a_previewed_row_the_import_refused(
    researcher_client, import_worker, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    content = csv_with(["0", "2", "six", "6", "8"]).encode()
    task_import = upload(researcher_client, "sums.csv", content)
    url = reverse("task_import_map", args=[task_import.pk])
    page = researcher_client.get(url)
    assert page.context["problems"] == [], "the guess (exact: not all are numbers) takes 'six'"
    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(url, MAPPING_POST)
    task_import.refresh_from_db()
    assert task_import.status == "failed"
    assert task_import.error == f"line 4: field 'answer' (mapped from column 'answer'): {SIX}"
    assert not TaskSet.objects.exists()
    # Mapping again: the page names the previewed row the numeric verifier cannot check.
    page = researcher_client.get(url)
    assert page.context["problems"] == [task_import.error]
    html = page.content.decode()
    assert 'id="preview-problems"' in html and "got &#x27;six&#x27;" in html
    # Under the exact verifier the same rows are fine, and the import goes through.
    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(url, {**MAPPING_POST, "default_verifier_kind": "exact"})
    task_import.refresh_from_db()
    assert task_import.status == "succeeded", task_import.error
    assert task_import.task_set.tasks.count() == 5


@pytest.mark.django_db
def test_a_verifier_column_guessed_from_the_file_is_checked_when_the_page_opens(
    researcher_client,
) -> None:  # type: ignore[no-untyped-def]
    content = b"question,answer,verifier\n1 + 1?,2,numeric\nHalf of 7?,three,numeric\n"
    task_import = upload(researcher_client, "kinds.csv", content)
    page = researcher_client.get(reverse("task_import_map", args=[task_import.pk]))
    assert page.context["form"].initial["map_verifier_kind"] == "verifier"
    assert page.context["problems"] == [
        "line 3: field 'answer' (mapped from column 'answer'): the numeric verifier needs a "
        "number (like 42, -3.5 or 3/4); got 'three'"
    ]


@pytest.mark.django_db
def test_a_bad_row_past_the_preview_fails_the_import_with_its_line(
    researcher_client, import_worker, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    content = csv_with(["0", "2", "4", "6", "8", "10", "twelve"]).encode()
    task_import = upload(researcher_client, "sums.csv", content)
    url = reverse("task_import_map", args=[task_import.pk])
    assert researcher_client.get(url).context["problems"] == []
    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(url, MAPPING_POST)
    task_import.refresh_from_db()
    assert task_import.status == "failed"
    assert task_import.error.startswith("line 8: field 'answer' (mapped from column 'answer'): ")
    assert not TaskSet.objects.exists() and not Task.objects.exists()
    page = researcher_client.get(reverse("task_import_detail", args=[task_import.pk]))
    assert "line 8: field" in page.content.decode()


# --- One rule: the task form and the import accept and refuse the same references ---------------

CASES = [
    ("numeric", {"answer": "42"}),
    ("numeric", {"answer": "-3.5"}),
    ("numeric", {"answer": "3/4"}),
    ("numeric", {"answer": "1,234"}),
    ("numeric", {"answer": "six"}),
    ("numeric", {"answer": "1e5"}),
    ("numeric", {"answer": "1e9999"}),  # Fraction reads it; the verifier's exponents stop at 999
    ("numeric", {"answer": "1,2345"}),
    ("numeric", {"answer": "3/0"}),
    ("exact", {"answer": "Paris"}),
    ("code", {"tests": "assert add(1, 2) == 3"}),
    ("code", {"tests": "def check(candidate):\n    assert candidate(1, 2) == 3"}),
    (
        "code",
        {"tests": "def check(candidate):\n    assert candidate(1, 2) == 3", "entry_point": "f"},
    ),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("kind", "reference"), CASES)
def test_the_task_form_and_the_import_share_the_reference_rule(
    kind: str, reference: dict[str, str]
) -> None:
    form = TaskForm({"prompt": "p", "verifier_kind": kind, "domain": "d", **reference})
    record = {"prompt": "p", "verifier_kind": kind, **reference}
    mapping = FieldMapping({name: name for name in record})
    try:
        mapping.build("line 1", record, 0)
        import_refusal = ""
    except TaskImportError as error:
        import_refusal = str(error)
    problems = reference_problems(kind, reference)
    assert form.is_valid() == (not import_refusal) == (not problems)
    if problems:
        message = problems[0].message
        assert import_refusal.endswith(f": {message}")
        shown = [error for errors in form.errors.values() for error in errors]
        assert f"{message[0].upper()}{message[1:]}." in shown


@pytest.mark.parametrize(
    "answer", ["42", "-3.5", "3/4", "1,234", "six", "1e5", "1e9999", "1,2345", "3/0"]
)
def test_the_numeric_verifier_reads_exactly_the_references_the_rule_accepts(answer: str) -> None:
    from models_gpu.types import TaskSpec
    from models_gpu.verifiers import verify

    task = TaskSpec(task_id=1, prompt="p", reference={"answer": answer}, verifier_kind="numeric")
    accepted = not reference_problems("numeric", {"answer": answer})
    assert accepted == (reference_number(answer) is not None)
    if accepted:
        verify(task, "The answer is 0")
    else:
        with pytest.raises(ValueError, match="is not a number"):
            verify(task, "The answer is 0")


def test_generated_tasks_pass_the_rule() -> None:
    """The built-in generators' tasks go through the same check (build_dialab_task)."""
    from models_gpu.generators import generate

    for family in ("arithmetic", "guess_number", "maze", "code_guess"):
        for position, task in enumerate(generate(family, 20, seed=1)):
            built = build_dialab_task(f"{family} {position}", dict(task), position)
            assert not reference_problems(built.verifier_kind, built.reference)
