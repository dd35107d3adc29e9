"""The transcript list's results, ready to print: rows, column heads, the count, the links.

A page shows 50 rows of ten cells. Each cell's text is worked out here (truncating, formatting
the date, the run's link); ``templates/jinja2/transcripts/transcript_results.html`` writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.http import QueryDict
from django.urls import reverse
from django.utils import timezone
from django.utils.text import Truncator

from webapp.core.context_processors import reverse_once
from webapp.dialogues.models import Dialogue

OUTCOME_LABELS = dict(Dialogue.Outcome.choices)


def _truncate(text: str, length: int) -> str:
    """As the ``truncatechars`` filter, which costs a translation lookup even for short text."""
    return text if len(text) <= length else Truncator(text).chars(length)


@dataclass(frozen=True)
class ListRow:
    pk: int
    run_name: str  # "#12 " and the name, shortened: runs named alike stay apart by their number
    run_title: str  # the whole name, shown on hover
    run_href: str  # "" for readers who may not open runs
    task_id: int
    prompt: str
    prompt_title: str
    student: str
    sample: int
    outcome: str
    outcome_label: str
    ended_by_person: bool  # ended by hand, not played to its end (nor timed out)
    first_correct: str
    turns: int
    leaked: bool
    created: str


def list_rows(rows: Sequence[Mapping[str, Any]], *, link_runs: bool) -> list[ListRow]:
    """``rows`` as ``selectors.dialogue_rows`` reads them. A page's rows come from a few runs:
    each run's link is reversed once (``reverse`` costs some 45 microseconds). The time zone is
    looked up once too (``timezone.localtime`` does it for each date, 7 microseconds a time)."""
    run_urls: dict[int, str] = {}
    zone = timezone.get_current_timezone()

    def run_url(run_id: int) -> str:
        if run_id not in run_urls:
            run_urls[run_id] = reverse("run_detail", args=[run_id])
        return run_urls[run_id]

    return [
        ListRow(
            pk=row["pk"],
            run_name=_truncate(f"#{row['run_id']} {row['run__name']}", 36),
            run_title=row["run__name"],
            run_href=run_url(row["run_id"]) if link_runs else "",
            task_id=row["task_id"],
            prompt=_truncate(row["prompt_head"], 60),
            prompt_title=_truncate(row["prompt_head"], 300),
            student=_truncate(row["student_name"], 24),
            sample=row["sample_index"],
            outcome=row["outcome"],
            outcome_label=OUTCOME_LABELS.get(row["outcome"], row["outcome"]),
            ended_by_person=row["end_reason"] == Dialogue.EndReason.ENDED_BY_PERSON,
            first_correct=str(row["first_correct_turn"] or "—"),
            turns=row["num_turns"],
            leaked=row["leaked"],
            created=row["created_at"].astimezone(zone).strftime("%Y-%m-%d %H:%M"),
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
    kept = query.copy()
    for name in ("page", "sort"):
        kept.pop(name, None)
    before_sort = f"{kept.urlencode()}&" if kept else ""  # encoded once, not once per column
    heads = []
    for key, label in COLUMNS:
        if not key:
            heads.append(ColumnHead(label))
            continue
        sort = f"-{key}" if current == key else key  # a sort key is plain text: no encoding
        heads.append(
            ColumnHead(
                label, f"{before_sort}sort={sort}", sorted=key == key_now, descending=descending
            )
        )
    return heads


def count_line(
    count: int,
    count_text: str,
    *,
    filtered: bool,
    in_play: int = 0,
    of_run: bool = False,
    some_will_match: bool = False,
) -> str:
    """ "12 transcripts match these filters.", "More than 10,000 transcripts." (``count_text``:
    the paginator's, exact or bounded), and how many dialogues are not listed yet because
    their run still plays them (``in_play``; ``of_run``: the run the list is filtered by;
    ``some_will_match``: the filters read the dialogues themselves, so only some will match)."""
    one = count == 1
    line = f"{count_text} transcript{'' if one else 's'}"
    if filtered:
        line += f" match{'es' if one else ''} these filters"
    line = f"{line[:1].upper()}{line[1:]}."
    if in_play:
        whose = "this run" if of_run else "runs still playing"
        line += (
            f" {in_play:,} dialogue{'' if in_play == 1 else 's'} of {whose} (playing, or waiting"
            " for a person) "
        )
        line += (
            "are not over yet: those that match will be listed as they end."
            if some_will_match
            else "will be listed as they end."
        )
    return line


def action_links() -> dict[str, str]:
    """Where the list's buttons lead (labelling, training, replay, compare)."""
    return {
        "label": reverse_once("queue_create"),
        "train": reverse_once("training_create"),
        "prime": reverse_once("training_online_create"),
        "replay": reverse_once("fork_counterfactual_create"),
        "compare": reverse_once("dialogue_compare"),
    }
