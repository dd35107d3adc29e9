"""CSV columns are bounded: a header of more than ``bounds.MAX_COLUMNS`` columns, or a row of more
values than its header names, is refused before csv.reader parses it, with one short line that
says how many; messages that list column names show a few, cut short. The mapping page reads
the header and a few rows, so its memory does not grow with a wide or a long file."""

from __future__ import annotations

import csv
import io
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from tests.webapp.tasks.imports.test_importing import start_upload
from webapp.tasks import bounds
from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.imports.readers import _FieldCounter, csv_header, read_csv
from webapp.tasks.models import TaskImport, TaskSet

TEN_MB = 10 * 2**20
MILLION = 1_000_000
SMALL_OUTPUT = 5_000  # characters: what the command may say about a file it refuses
# The mapping page's peak memory (tracemalloc) for a 10 MB file. Before the bound it was 115 MB
# for a million-column header and 118 MB for a row of 2.5 million values; now about 15 MB.
PAGE_PEAK = 30 * 2**20


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"


def wide_header(columns: int) -> bytes:
    return ",".join(f"c{n}" for n in range(columns)).encode() + b"\n"


def a_million_columns() -> bytes:
    """About 9 MB: a header of a million columns, and one row."""
    return b"q,a," + wide_header(MILLION - 2) + b"1+1?,2" + b",1" * (MILLION - 2) + b"\n"


def a_row_of_many_values() -> bytes:
    """10 MB: a narrow header, then a row of 2.5 million values (7.5 MB, under the record
    limit), then ordinary rows."""
    head = b"q,a\n" + b"ab," * 2_500_000 + b"2\n"
    row = b"What is 1+1?,2\n"
    return head + row * ((TEN_MB - len(head)) // len(row))


def many_rows() -> bytes:
    row = b"What is 1 + 1? Say it in words and in digits.,2\n"
    return b"q,a\n" + row * (TEN_MB // len(row))


# --- Counting fields before parsing ------------------------------------------------------------


def csv_fields(lines: list[str]) -> int:
    """How many fields csv.reader finds in the first record (a blank line: one empty field)."""
    return max(len(next(csv.reader(lines))), 1)


def counted_fields(lines: list[str]) -> int:
    counter = _FieldCounter()
    for line in lines:
        if counter.feed(line):
            break
    return counter.fields


@pytest.mark.parametrize(
    "text",
    [
        "q,a\n",
        '"a, b",c\n',
        '"say ""hi"", then go",b\n',
        '"two\nlines, one field",b\n',
        'a"b,c\n',  # a quote inside an unquoted field is an ordinary character
        '"a"b,c,"d\n',  # after the closing quote the field goes on; the last quote never closes
        ' "a,b"\n',  # a quote after a space does not start a quoted field
        '"a",,"",""""\r\n',
        "\n",
        "a,b",  # the last line, without a newline
    ],
)
def test_fields_are_counted_as_csv_reader_splits_them(text: str) -> None:
    lines = text.splitlines(keepends=True)
    assert counted_fields(lines) == csv_fields(lines)


@given(st.lists(st.sampled_from(["a", "b c", ",", '"', '""', "\n", "\r\n"]), max_size=40))
def test_any_record_is_counted_as_csv_reader_splits_it(tokens: list[str]) -> None:
    lines = "".join(tokens).splitlines(keepends=True)
    if not lines:
        return
    try:
        expected = csv_fields(lines)
    except csv.Error:
        return  # csv.reader refuses it ("new-line character seen in unquoted field")
    assert counted_fields(lines) == expected


# --- The header and the rows -------------------------------------------------------------------


def test_a_header_at_the_limit_is_read_and_one_column_more_is_refused() -> None:
    at_limit = wide_header(bounds.MAX_COLUMNS)
    assert len(csv_header(io.BytesIO(at_limit))) == bounds.MAX_COLUMNS
    with pytest.raises(TaskImportError) as refused:
        csv_header(io.BytesIO(wide_header(bounds.MAX_COLUMNS + 1)))
    assert str(refused.value) == (
        "line 1: the CSV header names 501 columns; the most accepted is 500"
    )


def test_a_header_over_quoted_lines_is_read_whole() -> None:
    content = b'q,"the\nanswer, in digits"\n1+1?,2\n'
    assert csv_header(io.BytesIO(content)) == ["q", "the\nanswer, in digits"]
    assert list(read_csv(io.BytesIO(content))) == [
        (3, {"q": "1+1?", "the\nanswer, in digits": "2"})
    ]


def test_commas_in_quoted_cells_are_not_values() -> None:
    content = b'q,a\n"1, 2, 3: which is largest?","3"\n"a,\nb",c\n'
    rows = list(read_csv(io.BytesIO(content)))
    assert [number for number, _ in rows] == [2, 3]
    assert rows[0][1] == {"q": "1, 2, 3: which is largest?", "a": "3"}


def test_a_row_of_too_many_values_is_refused_before_it_is_parsed() -> None:
    """2.5 million short values made a list of some 150 MB before the row was refused."""
    content = a_row_of_many_values()
    tracemalloc.start()
    try:
        with pytest.raises(TaskImportError) as refused:
            list(read_csv(io.BytesIO(content)))
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PAGE_PEAK, f"peak {peak / 2**20:.1f} MiB"
    assert str(refused.value) == "line 2: 2,500,001 values but the header names 2 columns"


def test_the_values_of_a_row_over_quoted_lines_are_all_counted() -> None:
    content = b'q,a\n1+1?,"two\nlines",3,4\n5+5?,10\n'
    with pytest.raises(TaskImportError, match=r"^line 2: 4 values but the header names 2 columns$"):
        list(read_csv(io.BytesIO(content)))


# --- The command -------------------------------------------------------------------------------


def run_command(*args: str) -> tuple[str, str, str]:
    """What the command prints and what it fails with."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("import_tasks", *args, "--no-progress", stdout=stdout, stderr=stderr)
    return stdout.getvalue(), stderr.getvalue(), str(failed.value)


@pytest.mark.django_db
@pytest.mark.parametrize("answer_column", ["a", "answer"], ids=["mapped", "missing-column"])
def test_the_command_refuses_a_million_columns_in_one_short_line(
    tmp_path: Path, answer_column: str
) -> None:
    """The file once imported (every column mapped) or printed all its column names (9 MB)."""
    path = tmp_path / "wide.csv"
    path.write_bytes(a_million_columns())
    stdout, stderr, error = run_command(
        str(path), "--map", "prompt=q", "--map", f"answer={answer_column}"
    )
    assert error == (
        "Nothing imported: line 1: the CSV header names 1,000,000 columns; the most accepted is 500"
    )
    assert len(stdout) + len(stderr) + len(error) < SMALL_OUTPUT
    assert not TaskSet.objects.exists()


@pytest.mark.django_db
def test_the_command_names_a_few_of_the_columns_a_mapping_misses(tmp_path: Path) -> None:
    """Each of 500 names of 104 characters was printed whole (52 KB)."""
    names = [f"c{n:03}_" + "x" * 100 for n in range(bounds.MAX_COLUMNS)]
    path = tmp_path / "long_names.csv"
    path.write_text(",".join(names) + "\n" + ",".join("1" * len(names)) + "\n")
    stdout, stderr, error = run_command(str(path), "--map", "prompt=q", "--map", "answer=a")
    shown = ", ".join(f"c{n:03}_{'x' * 34}…" for n in range(20))
    assert error == (
        "Nothing imported: line 1: the CSV header has no column 'q' (for prompt), "
        f"'a' (for answer); it has: {shown}, … and 480 more"
    )
    assert len(stdout) + len(stderr) + len(error) < SMALL_OUTPUT
    assert not TaskSet.objects.exists()


def test_names_in_messages_are_few_and_short() -> None:
    assert bounds.names_text(["q", "a"]) == "q, a"
    assert bounds.names_text([f"c{n}" for n in range(25)]).endswith(", c19, … and 5 more")
    assert bounds.names_text(["two\nlines", "x" * 100]) == f"two\\nlines, {'x' * 39}…"


# --- The mapping page --------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("make", "status", "message"),
    [
        (
            a_million_columns,
            400,
            "line 1: the CSV header names 1,000,000 columns; the most accepted is 500",
        ),
        (a_row_of_many_values, 400, "line 2: 2,500,001 values but the header names 2 columns"),
        (many_rows, 200, "What is 1 + 1? Say it in words and in digits."),
    ],
    ids=["wide-header", "wide-row", "many-rows"],
)
def test_the_mapping_page_reads_a_10_mb_csv_in_bounded_memory(
    researcher_client, make: Callable[[], bytes], status: int, message: str
) -> None:  # type: ignore[no-untyped-def]
    start_upload(researcher_client, "big.csv", make())
    task_import = TaskImport.objects.get()
    tracemalloc.start()
    try:
        page = researcher_client.get(reverse("task_import_map", args=[task_import.pk]))
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PAGE_PEAK, f"peak {peak / 2**20:.1f} MiB"
    assert page.status_code == status
    assert message in page.content.decode()
