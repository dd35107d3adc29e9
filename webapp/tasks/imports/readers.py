"""File formats -> records: JSONL, JSON and CSV, streamed, as ``(number, record)`` pairs.

The number is a JSONL or CSV line number or a JSON item number, for messages. Each reader holds
one record at a time, so memory stays flat in file size; untrusted files are read within the
bounds of :mod:`webapp.tasks.bounds` (nesting depth, record and field size, CSV columns), checked
before anything is parsed. A problem raises :class:`TaskImportError` naming its line.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections.abc import Iterator
from typing import IO, Any, Protocol

from webapp.tasks import bounds
from webapp.tasks.imports.errors import TaskImportError


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


class LineStream(Protocol):
    """What reading lines needs of a binary stream (a gzip file has it, but is no IO[bytes])."""

    def readline(self, size: int = -1, /) -> bytes: ...


def _lines(stream: LineStream) -> Iterator[tuple[int, str, int]]:
    """Physical lines with their size in bytes, at most one record long each: a longer line is
    refused before it is read whole, so one line can never fill memory. Each is decoded strictly
    (UTF-8 never has a newline byte inside a character, so splitting the bytes on newlines first
    is safe), and its bytes let go before its text is handed on. A leading BOM is dropped."""
    limit = bounds.max_record_bytes()
    number = 0
    while raw := stream.readline(limit + 1):
        number += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            raise _record_too_large(f"line {number}")
        if number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        size = len(raw)
        line = _decode_line(raw, number)
        del raw  # not held while the line is parsed
        yield number, line, size


def read_jsonl(stream: LineStream) -> Iterator[tuple[int, dict[str, Any]]]:
    """One JSON object per line; blank lines are skipped. Nesting is checked before parsing."""
    depth = bounds.max_json_depth()
    for number, line, _size in _lines(stream):
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


# How csv.reader (the excel dialect) splits a record into fields, for counting them without
# making them: a field that starts with a quote (at the start of the record, or just after a
# comma) runs to the next quote that is not doubled, newlines included; any other quote is an
# ordinary character.
_QUOTED_FIELD_REST = re.compile(r'(?:[^"]++|"")*+(")?')  # group 1: the closing quote


class _FieldCounter:
    """Counts one CSV record's fields, fed its physical lines in turn, as csv.reader will split
    them: a few passes in C per line and one step per quoted field, with nothing made per field.
    (A list of a million short cells takes some 60 MB; the line itself is a few MB.)"""

    def __init__(self) -> None:
        self.fields = 1
        self.in_quotes = False
        self.started = False

    def feed(self, line: str) -> bool:
        """Count the fields on the record's next line; True when the record ends on it."""
        position = 0
        if self.in_quotes:
            position = self._past_quoted(line, 0)
        elif not self.started and line.startswith('"'):
            position = self._past_quoted(line, 1)
        self.started = True
        # A line ends on its only "\n"; outside quoted fields a "\r" ends the record too
        # (csv.reader refuses anything after it but a "\n").
        carriage_return = line.find("\r", position)
        while not self.in_quotes:
            # Outside quoted fields every comma ends a field, so a comma and a quote start one.
            quote = line.find(',"', position)
            stop = len(line) if quote < 0 else quote + 1
            if 0 <= carriage_return < position:  # it was inside the quoted field just passed
                carriage_return = line.find("\r", position)
            end = carriage_return if 0 <= carriage_return < stop else stop
            self.fields += line.count(",", position, end)
            if quote < 0 or end < stop:
                return True
            position = self._past_quoted(line, quote + 2)
        return False

    def _past_quoted(self, line: str, start: int) -> int:
        match = _QUOTED_FIELD_REST.match(line, start)
        assert match is not None  # the pattern matches the empty string too
        self.in_quotes = match.group(1) is None
        return match.end()


def _csv_records(stream: IO[bytes]) -> Iterator[tuple[int, list[str]]]:
    """Every record, the header first, each with the physical line it starts on (quoted cells
    may span lines). A record is at most one record long in bytes, and its fields are counted
    before csv.reader parses it: the header may name at most ``bounds.MAX_COLUMNS`` columns,
    and a row may hold no more values than the header names."""
    _allow_csv_cells_up_to_a_record()
    limit = bounds.max_record_bytes()
    lines = _lines(stream)
    current_line = 0
    row_start = 1
    row_bytes = 0
    header_columns: int | None = None  # until the header is read
    counter = _FieldCounter()

    def count_line(number: int, line: str, size: int) -> bool:
        nonlocal current_line, row_bytes, counter
        current_line = number
        if not row_bytes:
            counter = _FieldCounter()
        row_bytes += size
        if row_bytes > limit:  # a quoted cell that runs on over many lines
            raise _record_too_large(f"line {row_start}")
        return counter.feed(line)

    def too_many_fields(ended: bool) -> TaskImportError:
        # The rest of the record is counted, not parsed, so the message can say how many.
        while not ended and (following := next(lines, None)) is not None:
            ended = count_line(*following)
        if header_columns is None:
            return TaskImportError(
                f"line {row_start}: the CSV header names {counter.fields:,} columns; "
                f"the most accepted is {bounds.MAX_COLUMNS:,}"
            )
        return TaskImportError(
            f"line {row_start}: {counter.fields:,} values but the header names "
            f"{header_columns:,} columns"
        )

    def text() -> Iterator[str]:
        for number, line, size in lines:
            ended = count_line(number, line, size)
            allowed = bounds.MAX_COLUMNS if header_columns is None else header_columns
            if counter.fields > allowed:
                raise too_many_fields(ended)
            yield line

    reader = csv.reader(text())
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            where = current_line if header_columns is None else row_start
            raise TaskImportError(f"line {where}: malformed CSV: {error}") from None
        number = row_start
        row_start, row_bytes = current_line + 1, 0
        if header_columns is None:
            header_columns = len(row)
        yield number, row


def read_csv(stream: IO[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows keyed by the header; the number is the physical line a row starts on (quoted cells
    may span lines). A row, like a line, is at most one record long; the header names at most
    ``bounds.MAX_COLUMNS`` columns, and a row holds no more values than the header names."""
    records = _csv_records(stream)
    first = next(records, None)
    if first is None:
        return
    header = [name.strip() for name in first[1]]
    for number, row in records:
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) > len(header):  # the count before parsing says so first; this is a backstop
            raise TaskImportError(
                f"line {number}: {len(row):,} values but the header names {len(header):,} columns"
            )
        # A short row leaves its last columns missing; the mapping reports any it needs.
        yield number, dict(zip(header, row, strict=False))


def csv_header(stream: IO[bytes]) -> list[str]:
    """The header's column names (at most ``bounds.MAX_COLUMNS``: more are refused unparsed)."""
    first = next(_csv_records(stream), None)
    return [] if first is None else [name.strip() for name in first[1]]


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


def _first_list_key(stream: io.RawIOBase) -> str | None:
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
