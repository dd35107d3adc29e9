"""Bounds on untrusted task data: JSON nesting depth, record size, field size and columns.

An upload is parsed twice, a few records in the web process for the mapping step and all of
them in a worker for the import; the task editor parses what a browser posts. Every one of
these goes through the checks here, so no document can make a process recurse without end
(``json.loads`` raises RecursionError on deep nesting) or grow without bound (ijson's prefixes
grow with the square of the depth: 100,000 nested arrays took 22 GB).

The nesting check is a linear scan over the bytes that skips strings and counts brackets. It
runs *before* a parser sees the bytes, so a document nested too deeply is refused at once, with
the line where it went too deep. Most of the work is ``bytes.find``/``count`` and one regular
expression per string, so it costs little next to the parsing it protects.

The limits come from settings (``DIALAB_MAX_JSON_DEPTH``, ``DIALAB_MAX_RECORD_BYTES``,
``DIALAB_MAX_FIELD_CHARS``) and are read when used, so a changed setting takes effect at once.
The number of columns is fixed (:data:`MAX_COLUMNS`): it is what the mapping page can show.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from itertools import accumulate, islice
from typing import Any

from django.conf import settings

# A JSON string's body up to (not including) its closing quote, or up to a backslash that ends
# the data (its escaped character is in the next chunk). Unrolled so that it never backtracks.
_STRING_BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# Brackets, and strings (complete, or running on to the end) so that their brackets are skipped.
_TOKENS = re.compile(rb'[\[\]{}]|"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
# Opening brackets become +1 and closing ones -1 (0xFF read as a signed byte).
_BRACKET_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_BACKSLASH = ord("\\")


def max_json_depth() -> int:
    return int(settings.DIALAB_MAX_JSON_DEPTH)


def max_record_bytes() -> int:
    return int(settings.DIALAB_MAX_RECORD_BYTES)


def max_field_chars() -> int:
    return int(settings.DIALAB_MAX_FIELD_CHARS)


# The most columns a CSV file (or keys a JSON record) may have. The mapping step offers every one
# in a select for each task field: a page for 500 columns already takes seconds to render, and a
# CSV header of a million columns took 115 MB to parse. A CSV file is refused before its header
# (or a row with more values than the header names) is parsed: see ``readers.read_csv``.
MAX_COLUMNS = 500
# Messages that list names (a CSV header's columns, a record's keys) show this many, each cut short.
NAMES_SHOWN = 20
NAME_CHARS = 40


def name_text(name: str) -> str:
    """A name for a one-line message: newlines escaped, cut to :data:`NAME_CHARS` characters."""
    text = str(name)[: NAME_CHARS + 1].replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "…"


def names_text(names: Collection[str]) -> str:
    """Names for a one-line message: the first :data:`NAMES_SHOWN`, each cut short
    (:func:`name_text`), then how many more there are ("q, a, … and 480 more")."""
    shown = [name_text(name) for name in islice(names, NAMES_SHOWN)]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f", … and {more:,} more" if more > 0 else "")


def size_text(size: int) -> str:
    """A byte count as people read it in messages: 8 MiB, 1.5 MiB, 4 KiB, 100 bytes."""
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.{0 if size % scale == 0 else 1}f} {unit}"
    return f"{size} bytes"


class NestingTooDeep(ValueError):
    """JSON nested deeper than the limit; ``line`` is where it first went too deep."""

    def __init__(self, *, line: int, limit: int) -> None:
        super().__init__(f"JSON nested deeper than {limit} levels, the most accepted")
        self.line = line
        self.limit = limit


class NestingGuard:
    """Follows the bracket nesting of JSON fed to it in chunks of any size, and raises
    :class:`NestingTooDeep` as soon as the depth passes ``limit``.

    Brackets inside strings do not count. Each chunk costs a few passes in C (drop the strings,
    count the brackets) whatever it holds; only a chunk that goes too deep is walked token by
    token, to name the line. Malformed input is not this class's business: after a stray closing
    bracket it may count too low, but a parser fails at that bracket before it reaches anything
    deeper, so the guard only needs to be right about well-formed text. UTF-8 needs no decoding
    for this: no byte of a multi-byte character is ASCII.
    """

    def __init__(self, *, limit: int) -> None:
        self.limit = limit
        self.depth = 0
        self.line = 1  # of the start of the next chunk
        self.in_string = False
        self.escaped = False  # the last chunk ended inside a string, on a backslash

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        start = self._string_end(chunk) if self.in_string else 0
        if start < len(chunk):
            # Outside strings from ``start`` on: drop every complete string. A quote left over
            # opens a string that goes on into the next chunk (nothing after it was dropped:
            # a quote after it would have closed it).
            outside = _STRINGS.sub(b"", chunk[start:])
            quote = outside.find(b'"')
            if quote >= 0:
                body = outside[quote + 1 :]
                body_match = _STRING_BODY.match(body)
                assert body_match is not None  # the pattern matches the empty string too
                self.in_string = True
                self.escaped = body_match.end() < len(body)  # it ends on a backslash
                outside = outside[:quote]
            self._brackets(outside, chunk, start)
        self.line += chunk.count(b"\n")

    def _string_end(self, chunk: bytes) -> int:
        """Where the string the last chunk left open ends in this one (``len(chunk)`` if not)."""
        position = 0
        if self.escaped:
            self.escaped = False
            position = 1
        match = _STRING_BODY.match(chunk, position)
        assert match is not None
        position = match.end()
        if position == len(chunk):
            return position
        if chunk[position] == _BACKSLASH:  # only possible as the chunk's last byte
            self.escaped = True
            return len(chunk)
        self.in_string = False
        return position + 1  # after the closing quote

    def _brackets(self, outside: bytes, chunk: bytes, start: int) -> None:
        """Brackets outside strings (``outside``, from ``chunk[start:]``)."""
        opening = outside.count(b"[") + outside.count(b"{")
        closing = outside.count(b"]") + outside.count(b"}")
        if self.depth + opening > self.limit:
            # It may go too deep here: follow the depth bracket by bracket (in C, not Python).
            steps = outside.translate(_BRACKET_STEPS, _NOT_BRACKETS)
            deepest = max(accumulate(memoryview(steps).cast("b"), initial=self.depth))
            if deepest > self.limit:
                raise NestingTooDeep(line=self._line_too_deep(chunk, start), limit=self.limit)
        self.depth = max(self.depth + opening - closing, 0)

    def _line_too_deep(self, chunk: bytes, start: int) -> int:
        depth = self.depth
        for token in _TOKENS.finditer(chunk, start):
            if token.group() in (b"[", b"{"):
                depth += 1
                if depth > self.limit:
                    return self.line + chunk.count(b"\n", 0, token.start())
            elif token.group() in (b"]", b"}"):
                depth -= 1
        return self.line  # not reached: the caller saw the depth pass the limit


def check_nesting(document: bytes | str, *, limit: int) -> None:
    """Raise :class:`NestingTooDeep` if a whole JSON document is nested deeper than ``limit``."""
    # A document cannot be deeper than it has opening brackets: the common case needs no scan.
    if isinstance(document, str):
        if document.count("[") + document.count("{") <= limit:
            return
        document = document.encode("utf-8", "surrogatepass")
    elif document.count(b"[") + document.count(b"{") <= limit:
        return
    NestingGuard(limit=limit).feed(document)


def json_loads(text: str) -> Any:
    """``json.loads`` for untrusted text, refusing deep nesting first (a ValueError)."""
    check_nesting(text, limit=max_json_depth())
    return json.loads(text)


def field_size(value: Any) -> int:
    """How long a task field is, in characters: text as it is, lists and objects as JSON."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list | dict):
        return len(json.dumps(value, ensure_ascii=False, default=str))
    return len(str(value))


def field_too_large(value: Any) -> str:
    """Why ``value`` is too large for one task field, or "" if it is not."""
    limit = max_field_chars()
    if isinstance(value, str) and len(value) <= limit:
        return ""  # the common case, without measuring anything twice
    size = field_size(value)
    if size <= limit:
        return ""
    return f"is {size:,} characters long; the largest accepted is {limit:,}"
