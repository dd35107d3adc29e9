"""Queries whose SQL the ORM writes once per process, for pages where writing it costs more than
running it.

Compiling a query of several joins and JSON lookups takes Django's ORM a millisecond or more,
and a hot page that runs the same query shape on every request pays it every time. Such a query
is built once with markers where the per-request values go (``ROW_MARKER`` for a primary key,
``READER_MARKER`` for the reader's id), compiled to SQL and parameters, and run with the markers
replaced (``bind``). Callers keep their compiled SQL in a ``functools.cache`` keyed by the
database vendor and whatever else changes the query's shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

# Numbers no row or user has, standing for the values a compiled query takes per request.
READER_MARKER = 987654321987654321
ROW_MARKER = 987654321987654322


def values_sql(values: QuerySet[Any]) -> tuple[str, tuple[Any, ...], tuple[str, ...]]:
    """A ``values(...)`` query's SQL, parameters and column names, in the order of its columns
    (its fields, then its annotations, as Django's compiler writes them)."""
    query = values.query
    sql, params = query.sql_with_params()
    names = (*query.values_select, *query.annotation_select)
    return sql, tuple(params), names


def bind(params: Sequence[Any], markers: Mapping[int, Any]) -> tuple[Any, ...]:
    """``params`` with each marker replaced by its value."""
    return tuple(
        markers.get(param, param) if type(param) is int else param  # not bools, lists, ...
        for param in params
    )


def fetch_dicts(sql: str, params: Sequence[Any], names: Sequence[str]) -> list[dict[str, Any]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def json_value(value: Any) -> Any:
    """A JSON column or key as a raw cursor returns it, decoded as Django's ``JSONField`` does:
    JSON text is parsed; on SQLite a key's number comes as a number and a key's string as bare
    text, which is kept."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def datetime_value(value: datetime | str | None) -> datetime | None:
    """A datetime column as a raw cursor returns it, as Django's ``DateTimeField`` gives it:
    aware. PostgreSQL's driver gives an aware datetime; SQLite gives the UTC time Django
    stored, as text."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and timezone.is_naive(value):
        value = timezone.make_aware(value, UTC)
    return value
