"""Exporting transcripts: JSONL (function, streamed download, command) and a Hugging Face dataset
saved to disk; the teacher's private context only when asked for; the list's filters; labels;
queries per chunk, not per dialogue; researchers only."""

from __future__ import annotations

import io
import json
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.http import StreamingHttpResponse
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from models_gpu.spec.results import DialogueRow
from tests.factories import (
    TaskFactory,
    TaskSetFactory,
    TeacherFactory,
    UserFactory,
    frozen_run,
)
from webapp.annotations.models import Annotation, LabelQuestion, LabelSchema
from webapp.dialogues.models import Dialogue, Turn
from webapp.runs.models import Run
from webapp.runs.services import dialogues_store
from webapp.transcripts import exporting
from webapp.transcripts.filters import DialogueFilters

pytestmark = pytest.mark.django_db

# Planted in everything the teacher privately saw; it must never leave without include_private.
SENTINEL = "SENTINEL-private-7f3a"

DIALOGUE_KEYS = [
    "id", "run", "task", "sample_index", "seed", "outcome", "first_correct_turn", "num_turns",
    "end_reason", "ended_by", "end_note", "turns", "labels",
]  # fmt: skip
TURN_KEYS = [
    "index", "message_number", "round", "role", "kind", "text", "extracted_answer",
    "is_correct", "score", "move_valid", "move_consistent", "move_chance", "verdict_sandbox",
    "leak_flag", "prompt_tokens", "completion_tokens", "latency_ms", "labels",
]  # fmt: skip
PRIVATE_TURN_KEYS = [*TURN_KEYS[:13], "verdict_details", "private_context", *TURN_KEYS[13:]]


def turn(role: str, kind: str, text: str, **fields: Any) -> dict[str, Any]:
    return {
        "role": role, "kind": kind, "text": text, "private_context": {}, "extracted_answer": "",
        "is_correct": None, "score": None, "verdict_details": {}, "leak_flag": False,
        "prompt_tokens": 11, "completion_tokens": 7, "latency_ms": 12.5, **fields,
    }  # fmt: skip


def attempt(text: str, answer: str, correct: bool) -> dict[str, Any]:
    return turn(
        "student", "attempt", text, extracted_answer=answer, is_correct=correct,
        score=float(correct), verdict_details={"expected": SENTINEL, "distance": 1.5},
    )  # fmt: skip


def feedback(text: str, leak: bool = False) -> dict[str, Any]:
    return turn(
        "teacher", "feedback", text, leak_flag=leak,
        private_context={"reference": SENTINEL, "notes": ["a", {"b": 2}]},
    )  # fmt: skip


def store(run: Run, task_id: int, sample: int, seed: int, turns: list[dict[str, Any]]) -> Dialogue:
    rounds = 0
    for index, item in enumerate(turns):
        rounds += item["role"] == "student"
        item.update(index=index, round=max(rounds, 1))
    correct = [t["round"] for t in turns if t["kind"] == "attempt" and t["is_correct"]]
    dialogues_store(
        run_id=run.pk,
        dialogues=[
            DialogueRow.from_json({
                "task_id": task_id, "sample_index": sample, "seed": seed,
                "outcome": "solved" if correct else "unsolved",
                "first_correct_turn": correct[0] if correct else None, "num_turns": rounds,
                "end_reason": "solved" if correct else "max_turns", "turns": turns,
            })
        ],
    )  # fmt: skip
    return Dialogue.objects.get(run=run, task_id=task_id, sample_index=sample)


def make_run(name: str, task_set: Any, teacher: Any = None) -> Run:
    return frozen_run(name=name, task_set=task_set, teacher=teacher)


@pytest.fixture
def corpus() -> dict[str, Any]:
    """Three dialogues in two runs; labels on a teacher turn and on a dialogue, and a draft."""
    task_set = TaskSetFactory()
    task_one = TaskFactory(
        task_set=task_set, external_id="gsm-1", difficulty=0.5, reference={"answer": SENTINEL}
    )
    task_two = TaskFactory(task_set=task_set, reference={"answer": SENTINEL})
    run_a = make_run("run A", task_set, teacher=TeacherFactory())
    run_b = make_run("run B", task_set)
    solved = store(run_a, task_one.pk, 0, 101, [
        attempt("It is 4.", "4", False) | {"move_valid": True},  # a first move: no consistency
        feedback("Check the carry. Ünïcode ✓", leak=True),
        attempt("Then 3.", "3", True)
        | {"move_valid": True, "move_consistent": True, "move_chance": 0.5},
    ])  # fmt: skip
    unsolved = store(run_a, task_two.pk, 0, 102, [
        turn("student", "question", "Base ten?"),
        feedback("Yes."),
        attempt("penguins 7", "7", False),
    ])  # fmt: skip
    other = store(run_b, task_one.pk, 0, 103, [attempt("5", "5", False)])

    schema = LabelSchema.objects.create(name="feedback quality")
    helpful = LabelQuestion.objects.create(
        schema=schema, key="helpfulness", text="How helpful?", kind="rating",
        target="teacher_turn", options=[1, 5], position=0,
    )  # fmt: skip
    overall = LabelQuestion.objects.create(
        schema=schema, key="overall", text="Notes", kind="free_text", target="dialogue",
        position=1,
    )  # fmt: skip
    kinds = LabelQuestion.objects.create(
        schema=schema, key="kinds", text="Kinds", kind="multiple_choice", target="teacher_turn",
        options=["hint", "socratic"], position=2,
    )  # fmt: skip
    ann, bob = UserFactory(username="ann", role="annotator"), UserFactory(username="bob")
    teacher_turn = solved.turns.get(index=1)
    labels = [
        Annotation.objects.create(
            question=helpful, dialogue=solved, turn=teacher_turn, author=ann, value=4
        ),
        Annotation.objects.create(
            question=kinds, dialogue=solved, turn=teacher_turn, author=bob, value=["hint"]
        ),
        Annotation.objects.create(
            question=overall, dialogue=solved, turn=None, author=bob, value="clear"
        ),
        # A draft: work in progress, never exported.
        Annotation.objects.create(
            question=overall, dialogue=unsolved, turn=None, author=ann, value="draft", is_draft=True
        ),
    ]
    return {
        "runs": (run_a, run_b), "tasks": (task_one, task_two), "labels": labels,
        "solved": solved, "unsolved": unsolved, "other": other, "questions": (helpful, overall),
    }  # fmt: skip


def records(query: str = "", **options: Any) -> list[dict[str, Any]]:
    filters = exporting.filters_from_query(query)
    return list(exporting.dialogue_records(filters=filters, **options))


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def stamp(annotation: Annotation) -> str:
    return annotation.updated_at.astimezone(UTC).isoformat()


# -- Records ------------------------------------------------------------------------------------


def test_a_record_holds_the_dialogue_its_turns_verdicts_and_labels(corpus):
    solved = corpus["solved"]
    run_a, task_one = corpus["runs"][0], corpus["tasks"][0]
    helpful_label, kinds_label, overall_label, _ = corpus["labels"]
    exported = records()
    assert [record["id"] for record in exported] == sorted(
        [solved.pk, corpus["unsolved"].pk, corpus["other"].pk]
    )
    record = exported[0]
    assert list(record) == DIALOGUE_KEYS
    assert record["run"] == {
        "id": run_a.pk, "name": "run A", "config_hash": run_a.config_hash,
        "student": run_a.student.name, "teacher": run_a.teacher.name,
        "protocol": run_a.protocol.name,
    }  # fmt: skip
    assert record["task"] == {
        "id": task_one.pk, "external_id": "gsm-1", "prompt": task_one.prompt,
        "domain": "arithmetic", "difficulty": 0.5,
    }  # fmt: skip
    assert {key: record[key] for key in DIALOGUE_KEYS[3:9]} == {
        "sample_index": 0, "seed": 101, "outcome": "solved", "first_correct_turn": 2,
        "num_turns": 2, "end_reason": "solved",
    }  # fmt: skip
    assert [list(t) for t in record["turns"]] == [TURN_KEYS] * 3
    first, teacher, last = record["turns"]
    assert first == {
        "index": 0, "message_number": 1, "round": 1, "role": "student", "kind": "attempt",
        "text": "It is 4.",
        "extracted_answer": "4", "is_correct": False, "score": 0.0, "move_valid": True,
        "move_consistent": None, "move_chance": None, "verdict_sandbox": None,
        "leak_flag": False, "prompt_tokens": 11, "completion_tokens": 7, "latency_ms": 12.5,
        "labels": [],
    }  # fmt: skip
    assert teacher["text"] == "Check the carry. Ünïcode ✓"
    assert teacher["leak_flag"] is True and teacher["is_correct"] is None
    assert teacher["labels"] == [
        {"schema": "feedback quality", "question": "helpfulness", "value": 4,
         "author": "ann", "updated_at": stamp(helpful_label)},
        {"schema": "feedback quality", "question": "kinds", "value": ["hint"],
         "author": "bob", "updated_at": stamp(kinds_label)},
    ]  # fmt: skip
    assert last["is_correct"] is True and last["labels"] == []
    assert (last["move_valid"], last["move_consistent"], last["move_chance"]) == (True, True, 0.5)
    assert teacher["move_valid"] is None, "not a move"
    assert record["labels"] == [
        {"schema": "feedback quality", "question": "overall", "value": "clear",
         "author": "bob", "updated_at": stamp(overall_label)},
    ]  # fmt: skip
    # A run without a teacher model.
    assert exported[2]["run"]["teacher"] is None


def test_an_unsandboxed_verdict_is_marked_even_without_the_private_context(corpus):
    turn = Turn.objects.filter(dialogue=corpus["unsolved"], kind="attempt").first()
    turn.verdict_details = {"reason": "tests_failed", "sandbox": "none", "secret": SENTINEL}
    turn.save(update_fields=["verdict_details"])
    text = "".join(exporting.jsonl_lines(filters=DialogueFilters()))
    assert SENTINEL not in text
    record = next(r for r in lines(text) if r["id"] == corpus["unsolved"].pk)
    marks = [t["verdict_sandbox"] for t in record["turns"] if t["index"] == turn.index]
    assert marks == ["none"]


def test_drafts_are_not_exported(corpus):
    unsolved = next(r for r in records() if r["id"] == corpus["unsolved"].pk)
    assert unsolved["labels"] == []
    Annotation.objects.filter(is_draft=True).update(is_draft=False)  # submitted
    unsolved = next(r for r in records() if r["id"] == corpus["unsolved"].pk)
    assert [label["value"] for label in unsolved["labels"]] == ["draft"]


def test_private_context_is_left_out_unless_asked_for(corpus):
    text = "".join(exporting.jsonl_lines(filters=DialogueFilters()))
    assert SENTINEL not in text
    for record in lines(text):
        assert "reference" not in record["task"]
        for item in record["turns"]:
            assert "private_context" not in item and "verdict_details" not in item

    private = "".join(exporting.jsonl_lines(filters=DialogueFilters(), include_private=True))
    assert SENTINEL in private
    record = lines(private)[0]
    assert record["task"]["reference"] == {"answer": SENTINEL}
    assert [list(t) for t in record["turns"]] == [PRIVATE_TURN_KEYS] * 3
    assert record["turns"][0]["verdict_details"] == {"expected": SENTINEL, "distance": 1.5}
    assert record["turns"][1]["private_context"] == {
        "reference": SENTINEL, "notes": ["a", {"b": 2}]
    }  # fmt: skip
    assert record["turns"][0]["private_context"] == {}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", {"solved", "unsolved", "other"}),
        ("outcome=unsolved", {"unsolved", "other"}),
        ("outcome=solved", {"solved"}),
        ("leak=yes", {"solved"}),
        ("has=question", {"unsolved"}),
        ("turns=1", {"other"}),
        ("q=penguins", {"unsolved"}),
        ("outcome=unsolved&page=7&format=jsonl&include_private=1", {"unsolved", "other"}),
    ],
)
def test_the_transcript_list_filters_select_what_is_exported(corpus, query, expected):
    ids = {corpus[name].pk: name for name in ("solved", "unsolved", "other")}
    assert {ids[record["id"]] for record in records(query)} == expected


def test_run_and_task_filters(corpus):
    run_a, run_b = corpus["runs"]
    assert {r["id"] for r in records(f"run={run_b.pk}")} == {corpus["other"].pk}
    query = f"run={run_a.pk}&task={corpus['tasks'][0].pk}"
    assert [r["id"] for r in records(query)] == [corpus["solved"].pk]


def _many(count: int) -> None:
    """``count`` more dialogues, each with turns and a turn label and a dialogue label."""
    task_set = TaskSetFactory()
    run = make_run(f"bulk {count}", task_set)
    question = LabelQuestion.objects.first()
    author = UserFactory()
    for sample in range(count):
        dialogue = store(
            run, TaskFactory(task_set=task_set).pk, sample, sample,
            [attempt("x", "1", False), feedback("y"), attempt("z", "2", True)],
        )  # fmt: skip
        Annotation.objects.create(
            question=question, dialogue=dialogue, turn=dialogue.turns.get(index=1),
            author=author, value=3,
        )  # fmt: skip
        Annotation.objects.create(question=question, dialogue=dialogue, author=author, value=1)


def _queries(chunk_size: int, **options: Any) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as queries:
        exported = list(
            exporting.dialogue_records(
                filters=exporting.filters_from_query("outcome=solved"),
                chunk_size=chunk_size,
                **options,
            )
        )
    assert all(record["turns"] and record["labels"] for record in exported)
    return len(exported), len(queries.captured_queries)


def _drop_newest(count: int) -> None:
    newest = Dialogue.objects.order_by("-pk").values_list("pk", flat=True)[:count]
    Dialogue.objects.filter(pk__in=list(newest)).delete()


def test_queries_are_counted_per_chunk_not_per_dialogue(corpus):
    Dialogue.objects.filter(pk=corpus["solved"].pk).update(outcome="unsolved")
    _many(12)
    # Three chunks each time, of 1, 2 or 4 dialogues: the same number of queries, which is
    # one for the dialogues plus one for the turns and one for the labels of each chunk.
    assert _queries(chunk_size=4) == (12, 1 + 2 * 3)
    assert _queries(chunk_size=6) == (12, 1 + 2 * 2)
    Dialogue.objects.filter(
        pk__in=list(Dialogue.objects.order_by("-pk").values_list("pk", flat=True)[:6])
    ).delete()
    assert _queries(chunk_size=2) == (6, 1 + 2 * 3)
    Dialogue.objects.filter(
        pk__in=list(Dialogue.objects.order_by("-pk").values_list("pk", flat=True)[:3])
    ).delete()
    assert _queries(chunk_size=1) == (3, 1 + 2 * 3)
    assert _queries(chunk_size=1, include_private=True) == (3, 1 + 2 * 3)


def test_chunking_does_not_change_the_records(corpus):
    _many(5)
    whole = records(chunk_size=1000)
    assert records(chunk_size=1) == whole
    assert records(chunk_size=3) == whole
    assert len(whole) == 8


# -- Hugging Face dataset -----------------------------------------------------------------------


@pytest.mark.parametrize("include_private", [False, True])
def test_the_hf_dataset_round_trips_to_the_jsonl_records(corpus, tmp_path, include_private):
    import datasets

    expected = records(include_private=include_private)
    path = tmp_path / "export"
    written = exporting.save_hf_dataset(
        filters=DialogueFilters(), path=path, include_private=include_private, chunk_size=2
    )
    assert written == len(expected) == 3
    loaded = datasets.load_from_disk(str(path))
    assert loaded.features == exporting.hf_features(include_private=include_private)
    assert [exporting.hf_row_decode(row) for row in loaded] == expected
    # The scratch cache is gone; only the saved dataset is left.
    assert [p.name for p in tmp_path.iterdir()] == ["export"]
    stored = b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())
    assert (SENTINEL.encode() in stored) is include_private


def test_hf_label_values_keep_their_types_as_in_the_jsonl(corpus, tmp_path):
    """A rating is 4, a yes/no is true and a choice is its text in the dataset as in the JSONL
    (not the JSON text '4', 'true', '"points at the error"'): each in its typed column."""
    import datasets

    schema = corpus["questions"][0].schema
    bob = corpus["labels"][1].author
    solved = corpus["solved"]
    for key, kind, options, value in [
        ("leaked", "yes_no", [], True),
        ("fault", "single_choice", ["points at the error", "vague"], "points at the error"),
        ("extras", "multiple_choice", ["a", "b"], []),  # an empty choice is not a null
        ("odd", "free_text", [], {"typed": "elsewhere", "n": 2.5}),  # no form stores this
    ]:
        question = LabelQuestion.objects.create(
            schema=schema, key=key, text=key, kind=kind, target="dialogue", options=options,
            position=5,
        )  # fmt: skip
        Annotation.objects.create(question=question, dialogue=solved, author=bob, value=value)
    datasets_path = tmp_path / "export"
    exporting.save_hf_dataset(filters=DialogueFilters(), path=datasets_path)
    loaded = datasets.load_from_disk(str(datasets_path))
    row = next(row for row in loaded if row["id"] == solved.pk)
    label_columns = loaded.features["labels"].feature
    assert {name: label_columns[name].dtype for name in ("value_int", "value_bool")} == {
        "value_int": "int64", "value_bool": "bool"
    }  # fmt: skip
    typed = {
        label["question"]: {
            name: value
            for name, value in label.items()
            if name.startswith("value_") and value is not None
        }
        for label in [*row["labels"], *row["turns"][1]["labels"]]
    }
    assert typed == {
        "helpfulness": {"value_int": 4},
        "kinds": {"value_list": ["hint"]},
        "overall": {"value_text": "clear"},
        "leaked": {"value_bool": True},
        "fault": {"value_text": "points at the error"},
        "extras": {"value_list": []},
        "odd": {"value_json": '{"n": 2.5, "typed": "elsewhere"}'},
    }
    assert [exporting.hf_row_decode(row) for row in loaded] == records()
    jsonl = {label["question"]: label["value"] for label in records()[0]["labels"]}
    assert jsonl["leaked"] is True and jsonl["fault"] == "points at the error"


def test_the_hf_schema_is_the_same_for_an_empty_export(corpus, tmp_path):
    import datasets

    exporting.save_hf_dataset(
        filters=exporting.filters_from_query("outcome=error"), path=tmp_path / "empty"
    )
    loaded = datasets.load_from_disk(str(tmp_path / "empty"))
    assert loaded.num_rows == 0
    assert loaded.features == exporting.hf_features()


# -- Browser ------------------------------------------------------------------------------------


def test_the_download_is_streamed_jsonl_without_private_context(researcher_client, corpus):
    response = researcher_client.get(
        reverse("dialogue_export_download"), {"outcome": "unsolved", "format": "jsonl"}
    )
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert response["Content-Disposition"].startswith('attachment; filename="dialogues-')
    text = b"".join(response.streaming_content).decode()
    assert SENTINEL not in text
    assert [r["id"] for r in lines(text)] == sorted([corpus["unsolved"].pk, corpus["other"].pk])
    assert lines(text) == records("outcome=unsolved")


def test_the_download_includes_private_context_when_checked(researcher_client, corpus):
    response = researcher_client.get(
        reverse("dialogue_export_download"), {"leak": "yes", "include_private": "1"}
    )
    text = b"".join(response.streaming_content).decode()
    assert SENTINEL in text
    assert lines(text) == records("leak=yes", include_private=True)
    assert "-private.jsonl" in response["Content-Disposition"]


def test_the_hf_download_is_a_streamed_zip_of_the_saved_dataset(
    researcher_client, corpus, tmp_path, settings
):
    import zipfile

    import datasets

    settings.DATA_DIR = tmp_path / "data"
    response = researcher_client.get(
        reverse("dialogue_export_download"), {"outcome": "unsolved", "format": "hf"}
    )
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "application/zip"
    disposition = response["Content-Disposition"]
    assert disposition.startswith('attachment; filename="dialogues-') and ".zip" in disposition
    folder = disposition.split('"')[1].removesuffix(".zip")
    archive = tmp_path / "download.zip"
    archive.write_bytes(b"".join(response.streaming_content))
    with zipfile.ZipFile(archive) as opened:
        assert {name.split("/")[0] for name in opened.namelist()} == {folder}
        opened.extractall(tmp_path / "unzipped")
    loaded = datasets.load_from_disk(str(tmp_path / "unzipped" / folder))
    assert loaded.features == exporting.hf_features()
    assert [exporting.hf_row_decode(row) for row in loaded] == records("outcome=unsolved")
    assert SENTINEL.encode() not in archive.read_bytes()
    # The dataset was written to a scratch folder that is gone once the download is done.
    assert list((tmp_path / "data" / "exports").iterdir()) == []


def test_a_dropped_hf_download_leaves_no_scratch_folder(corpus, tmp_path):
    chunks = exporting.hf_dataset_zip(
        filters=DialogueFilters(), scratch_root=tmp_path, folder="d", block_size=64
    )
    assert list(tmp_path.iterdir()) == []  # nothing is written before the first chunk
    assert next(chunks).startswith(b"PK")
    assert len(list(tmp_path.iterdir())) == 1
    chunks.close()  # what the server does when the browser goes away
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_download_format_is_refused(researcher_client, corpus):
    response = researcher_client.get(reverse("dialogue_export_download"), {"format": "<b>hf</b>"})
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")


def test_the_options_page_carries_the_filters(researcher_client, corpus):
    run_a = corpus["runs"][0]
    response = researcher_client.get(
        reverse("dialogue_export"),
        {"run": run_a.pk, "outcome": "unsolved", "page": "3", "turns": "", "first_correct": "x"},
    )
    assert response.status_code == 200
    assert response.context["count"] == 1
    page = response.content.decode()
    assert f'<input type="hidden" name="run" value="{run_a.pk}">' in page
    assert '<input type="hidden" name="outcome" value="unsolved">' in page
    assert 'name="page"' not in page and 'name="turns"' not in page
    assert "Ignored first_correct=" in page
    assert (
        'name="include_private"' in page and "checked" not in page.split("include_private")[1][:80]
    )
    assert "manage.py export_dialogues --format hf --out DIR --filter" in page
    assert 'name="format" value="jsonl"' in page and 'name="format" value="hf"' in page
    assert f"run={run_a.pk}&amp;outcome=unsolved" in page


def test_the_transcript_list_links_to_the_export_with_its_filters(
    client, researcher, annotator, corpus
):
    client.force_login(researcher)
    page = client.get(reverse("dialogue_list"), {"outcome": "solved"}).content.decode()
    assert 'id="export-link"' in page
    assert f"{reverse('dialogue_export')}?outcome=solved" in page
    client.force_login(annotator)
    page = client.get(reverse("dialogue_list")).content.decode()
    assert 'id="export-link"' not in page


@pytest.mark.parametrize("name", ["dialogue_export", "dialogue_export_download"])
def test_exports_are_for_researchers_only(client, annotator_client, corpus, name):
    assert annotator_client.get(reverse(name)).status_code == 403
    client.logout()
    response = client.get(reverse(name))
    assert response.status_code == 302 and "/login/" in response["Location"]


# -- Management command -------------------------------------------------------------------------


def test_command_writes_jsonl(corpus, tmp_path):
    out = tmp_path / "sub" / "dialogues.jsonl"
    err = io.StringIO()
    call_command("export_dialogues", "--out", str(out), "--filter", "outcome=unsolved", stderr=err)
    assert lines(out.read_text(encoding="utf-8")) == records("outcome=unsolved")
    assert "Exported 2 dialogues" in err.getvalue()
    assert [p.name for p in out.parent.iterdir()] == ["dialogues.jsonl"]


def test_command_writes_jsonl_to_stdout_with_private_context(corpus):
    stdout = io.StringIO()
    call_command(
        "export_dialogues", "--out", "-", "--include-private", "--no-progress",
        stdout=stdout, stderr=io.StringIO(),
    )  # fmt: skip
    assert lines(stdout.getvalue()) == records(include_private=True)
    assert SENTINEL in stdout.getvalue()


def test_command_writes_a_hf_dataset(corpus, tmp_path):
    import datasets

    out = tmp_path / "hf"
    call_command(
        "export_dialogues", "--format", "hf", "--out", str(out), "--filter", "?leak=no",
        "--chunk-size", "1", stderr=io.StringIO(),
    )  # fmt: skip
    loaded = datasets.load_from_disk(str(out))
    assert [exporting.hf_row_decode(row) for row in loaded] == records("leak=no")
    assert "reference" not in loaded.features["task"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--filter", "outcom=solved"], "Unknown filter parameter(s): outcom"),
        (["--filter", "first_correct=soon"], "Bad filter: Ignored first_correct="),
        (["--chunk-size", "0"], "--chunk-size must be at least 1"),
        (["--format", "hf", "--out", "-"], "--format hf needs a directory"),
    ],
)
def test_command_refuses_what_it_cannot_honour(corpus, tmp_path, arguments, message):
    base = ["--out", str(tmp_path / "x.jsonl")]
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_command("export_dialogues", *base, *arguments)


def test_command_does_not_write_into_a_non_empty_directory(corpus, tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(CommandError, match="not an empty directory"):
        call_command("export_dialogues", "--format", "hf", "--out", str(tmp_path))
    assert [p.name for p in Path(tmp_path).iterdir()] == ["keep.txt"]
