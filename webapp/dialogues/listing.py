"""The transcript list's rows and column heads, ready to print.

A page shows 50 rows of ten cells. Each cell's text and links are worked out here (truncating,
formatting the date, reversing URLs) and the rows are written in Python, every text escaped:
through the template engine, with a tag or filter per cell, the rows alone took longer than
everything else the page does in Python (measured with ``benchmarks/transcripts.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from django.http import QueryDict
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from webapp.dialogues.models import Dialogue

OUTCOME_LABELS = dict(Dialogue.Outcome.choices)


def _truncate(text: str, length: int) -> str:
    """As the ``truncatechars`` filter, which costs a translation lookup even for short text."""
    return text if len(text) <= length else Truncator(text).chars(length)


@dataclass(frozen=True)
class ListRow:
    pk: int
    href: str  # the dialogue (the page adds the list's query, so "back", prev and next keep it)
    run_name: str
    run_href: str  # "" for readers who may not open runs
    task_id: int
    prompt: str
    prompt_title: str
    student: str
    sample: int
    outcome: str
    outcome_label: str
    first_correct: str
    turns: int
    leaked: bool
    created: str


ROW_HTML = (
    '<tr><td><a href="{href}?{query}">#{pk}</a></td><td>{run}</td>'
    '<td title="{prompt_title}"><span class="muted">#{task_id}</span> {prompt}</td>'
    "<td>{student}</td><td>{sample}</td>"
    '<td><span class="outcome outcome-{outcome}">{outcome_label}</span></td>'
    '<td>{first_correct}</td><td>{turns}</td><td>{leak}</td><td class="muted">{created}</td></tr>'
)
LEAK_CHIP = (
    '<span class="leak-chip" title="A teacher turn was flagged as revealing the answer">leak</span>'
)


def rows_html(rows: Sequence[ListRow], *, query: str) -> SafeString:
    """The table rows; each dialogue's link carries ``query`` (the list's, with its page).
    Every text is escaped with ``html.escape``, which is what Django's ``escape`` does, less
    its checks for lazy strings (those checks cost more than the rest of a row)."""
    query = escape(query)
    return mark_safe(
        "\n".join(
            ROW_HTML.format(
                href=escape(row.href),
                query=query,
                pk=int(row.pk),
                run=f'<a href="{escape(row.run_href)}">{escape(row.run_name)}</a>'
                if row.run_href
                else escape(row.run_name),
                prompt_title=escape(row.prompt_title),
                task_id=int(row.task_id),
                prompt=escape(row.prompt),
                student=escape(row.student),
                sample=int(row.sample),
                outcome=escape(row.outcome),
                outcome_label=escape(row.outcome_label),
                first_correct=escape(row.first_correct),
                turns=int(row.turns),
                leak=LEAK_CHIP if row.leaked else "",
                created=escape(row.created),
            )
            for row in rows
        )
    )


def _url_for_pk(name: str) -> Callable[[Any], str]:
    """``reverse(name, args=[pk])`` for many primary keys at the cost of one ``reverse``."""
    marker = "987654321987654321"
    head, tail = reverse(name, args=[int(marker)]).split(marker)
    return lambda pk: f"{head}{int(pk)}{tail}"


def list_rows(rows: Sequence[Mapping[str, Any]], *, link_runs: bool) -> list[ListRow]:
    """``rows`` as ``selectors.dialogue_rows`` reads them."""
    dialogue_url, run_url = _url_for_pk("dialogue_detail"), _url_for_pk("run_detail")
    return [
        ListRow(
            pk=row["pk"],
            href=dialogue_url(row["pk"]),
            run_name=_truncate(row["run__name"], 32),
            run_href=run_url(row["run_id"]) if link_runs else "",
            task_id=row["task_id"],
            prompt=_truncate(row["prompt_head"], 60),
            prompt_title=_truncate(row["prompt_head"], 300),
            student=_truncate(row["student_name"], 24),
            sample=row["sample_index"],
            outcome=row["outcome"],
            outcome_label=OUTCOME_LABELS.get(row["outcome"], row["outcome"]),
            first_correct=str(row["first_correct_turn"] or "—"),
            turns=row["num_turns"],
            leaked=row["leaked"],
            created=timezone.localtime(row["created_at"]).strftime("%Y-%m-%d %H:%M"),
        )
        for row in rows
    ]


@dataclass(frozen=True)
class ColumnHead:
    """A column head; a sortable one has the query that sorts by it (toggling the direction
    when it is already the sort key; pagination restarts at page 1) and whether it is the
    sort now."""

    label: str
    query: str = ""
    sorted: bool = False
    descending: bool = False


# The list's columns, in order: a sort key (filters.SORTS) or, for a column that does not
# sort, its label.
COLUMNS = [
    ("", "Dialogue"), ("run", "Run"), ("task", "Task"), ("student", "Student"),
    ("", "Sample"), ("outcome", "Outcome"), ("first_correct", "First correct turn"),
    ("turns", "Turns"), ("", "Leak"), ("created", "Created"),
]  # fmt: skip


def column_heads(query: QueryDict, current: str) -> list[ColumnHead]:
    key_now, descending = current.removeprefix("-"), current.startswith("-")
    heads = []
    for key, label in COLUMNS:
        if not key:
            heads.append(ColumnHead(label))
            continue
        params = query.copy()
        params.pop("page", None)
        params["sort"] = f"-{key}" if current == key else key
        heads.append(
            ColumnHead(label, params.urlencode(), sorted=key == key_now, descending=descending)
        )
    return heads
