"""The mapping step: a draft import's columns, its first records, and a guessed mapping.

Only the first few records are read, in the web process, within the same bounds as the import
(:mod:`webapp.tasks.bounds`); the worker reads the rest when the mapping is confirmed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from models_gpu.spec.numbers import reference_number
from webapp.tasks import bounds
from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.imports.mapping import FieldMapping, is_blank, lookup
from webapp.tasks.imports.readers import csv_header, read_csv, read_json, read_jsonl
from webapp.tasks.imports.sources import read_hf_dataset
from webapp.tasks.models import TaskImport

PREVIEW_ROWS = 5
# After the first record, more are read only while the preview has read less of the file than
# this: the mapping step holds one large record, not five.
PREVIEW_BYTES = 2**20

# Lost-in-Conversation records: {task_id, task (the task type), shards: [{shard_id, shard_text}],
# then fields that depend on the task type}. These are guesses the mapping step lets users change.
LIC_PROMPT_KEYS = ("fully_specified_question", "question", "prompt", "instruction", "query")
LIC_ANSWER_KEYS = ("answer", "reference_answer", "solution", "target", "label")


def lic_guess(columns: Iterable[str]) -> dict[str, str]:
    """Starting mapping for Lost-in-Conversation records (the user can change it)."""
    available = list(columns)
    guess = {"shards": "shards", "external_id": "task_id", "domain": "task"}
    for name, candidates in (("prompt", LIC_PROMPT_KEYS), ("answer", LIC_ANSWER_KEYS)):
        found = next((key for key in candidates if key in available), "")
        if found:
            guess[name] = found
    return {name: column for name, column in guess.items() if column in available}


SYNONYMS = {
    "prompt": ("prompt", "question", "problem", "instruction", "input", "query", "text"),
    "answer": ("answer", "target", "label", "output", "final_answer"),
    "tests": ("tests", "test", "test_list"),
    "tests_setup": ("tests_setup", "test_setup_code"),
    "entry_point": ("entry_point",),
    "solution": ("solution", "canonical_solution", "code"),
    "shards": ("shards",),
    "verifier_kind": ("verifier_kind", "verifier"),
    "domain": ("domain", "subject", "topic"),
    "difficulty": ("difficulty", "level"),
    "tags": ("tags",),
    "external_id": ("external_id", "id", "task_id"),
}


def guess_mapping(columns: Iterable[str], records: Iterable[dict[str, Any]] = ()) -> dict[str, str]:
    """Task field -> column, guessed from the names and then from the sampled values: a name
    alone misleads (a "solution" column of numbers is an answer, not a code solution)."""
    available = {column.lower(): column for column in columns}
    guess: dict[str, str] = {}
    for name, candidates in SYNONYMS.items():
        found = next((available[key] for key in candidates if key in available), "")
        if found and found not in guess.values():
            guess[name] = found
    return _guess_from_values(guess, list(available.values()), list(records))


# Lines that only code starts with: a definition, an import, a return, a test's assert.
_CODE_LINE = re.compile(
    r"^\s*(?:def \w+\s*\(|class \w+|import \w|from [\w.]+ import |return\b|assert )",
    re.MULTILINE,
)


def _samples(records: list[dict[str, Any]], column: str) -> list[Any]:
    values = (lookup(record, column) for record in records)
    return [value for value in values if not is_blank(value)]


def _is_number(value: Any) -> bool:
    """42, -3.5, "3/4", "1,234": a number as the numeric verifier reads a reference answer."""
    return reference_number(value) is not None


def _is_code(value: Any) -> bool:
    return isinstance(value, str) and ("```" in value or _CODE_LINE.search(value) is not None)


def _all(test: Callable[[Any], bool], samples: list[Any]) -> bool:
    return bool(samples) and all(test(value) for value in samples)


def _guess_from_values(
    guess: dict[str, str], columns: list[str], records: list[dict[str, Any]]
) -> dict[str, str]:
    """Correct and complete a guess by names with what the sampled values look like: numbers
    are an answer, code is a code solution."""
    guess = dict(guess)
    if not records:
        return guess
    solution = guess.get("solution")
    if solution and "answer" not in guess and _all(_is_number, _samples(records, solution)):
        guess["answer"] = guess.pop("solution")
    answer = guess.get("answer")
    if answer and "solution" not in guess and _all(_is_code, _samples(records, answer)):
        guess["solution"] = guess.pop("answer")
    unmapped = [column for column in columns if column not in guess.values()]
    if "answer" not in guess and "tests" not in guess:
        numbers = [c for c in unmapped if _all(_is_number, _samples(records, c))]
        if len(numbers) == 1:  # two number columns: which one is the answer is a real question
            guess["answer"] = numbers[0]
            unmapped.remove(numbers[0])
    if "solution" not in guess and "tests" in guess:
        code = [c for c in unmapped if _all(_is_code, _samples(records, c))]
        if len(code) == 1:
            guess["solution"] = code[0]
    return guess


def guessed_default_verifier(guess: dict[str, str], records: Iterable[dict[str, Any]]) -> str:
    """``numeric`` when the guessed answer column holds only numbers and no column names the
    verifier; else nothing (the import then uses code with tests, exact otherwise)."""
    answer = guess.get("answer")
    if not answer or "verifier_kind" in guess or "tests" in guess:
        return ""
    return "numeric" if _all(_is_number, _samples(list(records), answer)) else ""


def _too_many_columns(where: str, count: int) -> TaskImportError:
    # The mapping step offers every column in a select for each task field: a record with a
    # million keys would make a page of millions of options, so the preview refuses it.
    return TaskImportError(
        f"{where}: {count:,} keys or columns; the mapping step lists at most {bounds.MAX_COLUMNS}"
    )


def preview(
    source_records: Iterator[tuple[int, dict[str, Any]]],
    rows: int = PREVIEW_ROWS,
    *,
    unit: str = "line",
) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    """The first records with their numbers, and their columns (top-level keys, plus one level
    of dotted keys into nested objects), for the mapping step."""
    records = []
    columns: dict[str, None] = {}  # ordered, and a set for the lookups
    for number, record in source_records:
        records.append((number, record))
        for key, value in record.items():
            columns[key] = None
            if isinstance(value, dict):
                columns.update((f"{key}.{inner}", None) for inner in value)
            if len(columns) > bounds.MAX_COLUMNS:
                raise _too_many_columns(f"{unit} {number}", len(columns))
        if len(records) >= rows:
            break
    return list(columns), records


def _first_record_or_so(
    records: Iterator[tuple[int, dict[str, Any]]], stream: IO[bytes]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The first record, then more only while less than :data:`PREVIEW_BYTES` of the file has
    been read: checked before the next record is read, so a large first record is the only one
    held. A record's objects can take some 30 times its bytes (``{}`` is 3 bytes, a dict about
    64; csv.reader holds a cell in 4 bytes a character while it reads it), so the web process
    holds about one record's worth, not one per row."""
    for pair in records:
        yield pair
        if stream.tell() >= PREVIEW_BYTES:
            return


@dataclass(frozen=True)
class ImportPreview:
    """What the mapping step shows of a source: its columns, and its first records with their
    numbers (``unit`` says what a number counts: a line, a JSON item, a dataset row)."""

    columns: list[str]
    numbered_records: list[tuple[int, dict[str, Any]]]
    unit: str

    @property
    def records(self) -> list[dict[str, Any]]:
        return [record for _number, record in self.numbered_records]


def import_preview(*, task_import: TaskImport) -> ImportPreview:
    """Columns and first records of a draft import's source, for the mapping step."""
    if task_import.source == TaskImport.Source.HF_DATASET:
        rows = read_hf_dataset(task_import.dataset, task_import.split)
        columns, numbered = preview(rows, unit="row")
        return ImportPreview(columns, numbered, "row")
    if not task_import.upload:
        raise TaskImportError("the uploaded file is missing")
    # Only the first few records are read, each within the bounds (webapp.tasks.bounds): the
    # web process never parses the whole upload; the worker does, under the same bounds.
    with task_import.upload.open("rb") as stream:
        readers = {"jsonl": read_jsonl, "csv": read_csv, "json": read_json}
        unit = "item" if task_import.file_format == "json" else "line"
        first = _first_record_or_so(readers[task_import.file_format](stream), stream)
        columns, records = preview(first, unit=unit)
        if task_import.file_format == "csv":
            stream.seek(0)
            columns = csv_header(stream)  # refused unparsed past bounds.MAX_COLUMNS
    if not records:
        raise TaskImportError("the file has no records: no tasks to import")
    return ImportPreview(columns, records, unit)


def preview_problems(*, source_preview: ImportPreview, mapping: FieldMapping) -> list[str]:
    """Why previewed records would be refused under ``mapping``, one line each (empty: none
    is): each is built exactly as the import builds it, reference check included, so the
    mapping step shows what the import would fail on before a worker reads the whole source.
    Nothing when the mapping itself is incomplete (the form says what is missing)."""
    if mapping.problems():
        return []
    problems = []
    for index, (number, record) in enumerate(source_preview.numbered_records):
        try:
            mapping.build(f"{source_preview.unit} {number}", record, index)
        except TaskImportError as error:
            problems.append(str(error))
    return problems


def import_mapping_guess(
    *, task_import: TaskImport, columns: list[str], records: list[dict[str, Any]]
) -> dict[str, str]:
    """The mapping step's starting point: task field -> column."""
    if task_import.source == TaskImport.Source.LOST_IN_CONVERSATION:
        return lic_guess(columns)
    return guess_mapping(columns, records)


def mapping_form_initial(
    task_import: TaskImport, columns: list[str], records: list[dict[str, Any]]
) -> dict[str, str]:
    """The mapping form's starting values: the mapping that was tried, when a failed import is
    mapped again; otherwise a guess from the columns' names and values."""
    if task_import.field_mapping:
        mapping = dict(task_import.field_mapping)
        defaults = dict(task_import.defaults)
    else:
        mapping = import_mapping_guess(task_import=task_import, columns=columns, records=records)
        defaults = {"verifier_kind": guessed_default_verifier(mapping, records)}
    initial = {f"map_{name}": column for name, column in mapping.items() if column in columns}
    initial["default_verifier_kind"] = defaults.get("verifier_kind", "")
    initial["default_domain"] = defaults.get("domain", "")
    return initial
