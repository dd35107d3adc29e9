"""The runs table: every run with its headline figures, filtered, sorted and grouped.

Sorting by name, status or date happens in the database, and figures are counted for the
shown page only. Sorting by a figure, or grouping, counts the figures of every run that passes
the filters (three grouped queries, ``selectors.run_summaries``), then sorts in Python.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet

from webapp.metrics.figures import RunSummary
from webapp.metrics.stats import MeanEstimate, Proportion, mean_rate_across
from webapp.runs.models import Run
from webapp.runs.selectors import run_list, run_summaries
from webapp.tasks.models import TaskSet


@dataclass(frozen=True)
class RunRow:
    run: Run
    summary: RunSummary | None  # None for training runs


@dataclass(frozen=True)
class RowGroup:
    label: str
    rows: list[RunRow]
    # Grouped by seed: the mean accuracy after turn T across the group's runs, with a t interval.
    seeds_final: MeanEstimate | None = None


def _rate(proportion: Proportion | None) -> float | None:
    return proportion.rate if proportion is not None and proportion.total else None


# (label, the value sorted on); runs without the figure sort last either way.
FIGURE_SORTS: dict[str, tuple[str, Callable[[RunSummary], float | None]]] = {
    "accuracy_first": ("accuracy after turn 1", lambda s: _rate(s.single_turn_accuracy)),
    "accuracy_final": ("accuracy after turn T", lambda s: _rate(s.final_accuracy)),
    "pass_at_k": ("pass@k", lambda s: s.pass_at_k.value if s.pass_at_k else None),
    "leak_rate": ("leak rate", lambda s: _rate(s.leak_rate)),
    "question_rate": ("question rate", lambda s: _rate(s.question_rate)),
    "tokens": ("tokens", lambda s: s.spent.tokens),
    "wall": ("wall time", lambda s: s.spent.wall_seconds),
}
DATABASE_SORTS = {"created": "created_at", "name": "name", "status": "status"}
DEFAULT_SORT = "-created"
RUNS_PER_PAGE = 25


def _seed_group_key(run: Run) -> str:
    if run.kind != Run.Kind.EVAL:
        return f"run {run.pk}"
    return run.frozen_config.seed_group_hash()


def _seed_group_label(rows: Sequence[RunRow]) -> str:
    run = rows[0].run
    if run.kind != Run.Kind.EVAL:
        return run.name
    config = run.frozen_config
    seeds = ", ".join(str(seed) for seed in sorted(row.run.frozen_config.seed for row in rows))
    task_set = TaskSet(name=config.task_set.name, version=config.task_set.version)
    what = f"{task_set} · {config.student.name} · "  # the task set named as in the rows
    return f"{what}{config.protocol.name} (seed{'s' if len(rows) > 1 else ''} {seeds})"


# (label, the key rows group by, the group's heading from its rows).
GROUPINGS: dict[str, tuple[str, Callable[[Run], Any], Callable[[Sequence[RunRow]], str]]] = {
    "task_set": ("task set", lambda r: r.task_set_id, lambda rows: str(rows[0].run.task_set)),
    "student": ("student", lambda r: r.student_id, lambda rows: str(rows[0].run.student)),
    "protocol": ("protocol", lambda r: r.protocol_id, lambda rows: str(rows[0].run.protocol)),
    "seeds": ("configuration (seeds together)", _seed_group_key, _seed_group_label),
}


def filtered_runs(filters: Mapping[str, Any]) -> QuerySet[Run]:
    """The runs passing the table's filters (``RunFilterForm``'s cleaned data)."""
    runs = run_list().prefetch_related("tags")
    if filters.get("q"):
        runs = runs.filter(name__icontains=filters["q"])
    if filters.get("model"):
        model = filters["model"]
        runs = runs.filter(
            Q(student=model) | Q(teacher=model) | Q(user_simulator=model) | Q(judge=model)
        )
    for field in ("task_set", "protocol", "kind", "status", "tags"):
        if filters.get(field):
            runs = runs.filter(**{field: filters[field]})
    return runs


def split_sort(sort: str) -> tuple[str, bool]:
    """``"-wall"`` → ("wall", descending); an unknown key is the default sort."""
    key = sort.removeprefix("-")
    if key not in FIGURE_SORTS and key not in DATABASE_SORTS:
        return split_sort(DEFAULT_SORT)
    return key, sort.startswith("-")


def database_order(runs: QuerySet[Run], sort: str) -> QuerySet[Run]:
    key, descending = split_sort(sort)
    field = DATABASE_SORTS.get(key, "created_at")
    return runs.order_by(f"-{field}" if descending else field, "-pk")


def sorted_rows(runs: QuerySet[Run], sort: str) -> list[RunRow]:
    """Every run with its figures, sorted (by a figure: runs without it last)."""
    key, descending = split_sort(sort)
    ordered = list(database_order(runs, sort if key in DATABASE_SORTS else DEFAULT_SORT))
    summaries = run_summaries(runs=ordered)
    rows = [RunRow(run, summaries.get(run.pk)) for run in ordered]
    if key in DATABASE_SORTS:
        return rows

    def value(row: RunRow) -> float | None:
        return FIGURE_SORTS[key][1](row.summary) if row.summary else None

    present = [row for row in rows if value(row) is not None]
    missing = [row for row in rows if value(row) is None]
    present.sort(key=lambda row: value(row) or 0.0, reverse=descending)
    return present + missing


def table_page(
    runs: QuerySet[Run], *, sort: str, grouping: str, page_number: str | None
) -> tuple[Page[Any], list[RowGroup]]:
    """The page of the table to show, its rows under their group headings. Sorted by a column of
    the database and not grouped, only the page's runs are counted; otherwise every run is."""
    key, _ = split_sort(sort)
    if key in DATABASE_SORTS and not grouping:
        run_page = Paginator(database_order(runs, sort), RUNS_PER_PAGE).get_page(page_number)
        summaries = run_summaries(runs=run_page)
        rows = [RunRow(run, summaries.get(run.pk)) for run in run_page]
        return run_page, [RowGroup("", rows)]
    every_row = sorted_rows(runs, sort)
    page = Paginator(every_row, RUNS_PER_PAGE).get_page(page_number)
    if not grouping:
        return page, [RowGroup("", list(page.object_list))]
    shown = {row.run.pk for row in page.object_list}
    groups = [
        replace(group, rows=[row for row in group.rows if row.run.pk in shown])
        for group in grouped(every_row, grouping)
    ]
    return page, [group for group in groups if group.rows]


def grouped(rows: Sequence[RunRow], grouping: str) -> list[RowGroup]:
    """Rows under headings, groups in order of their first row. Grouped by seed, each group of
    several runs also gets the mean accuracy after turn T across its seeds."""
    _, key, heading = GROUPINGS[grouping]
    members: dict[Any, list[RunRow]] = {}
    for row in rows:
        members.setdefault(key(row.run), []).append(row)
    groups = []
    for group_rows in members.values():
        seeds = None
        if grouping == "seeds" and len(group_rows) > 1:
            finals = [_rate(row.summary.final_accuracy) for row in group_rows if row.summary]
            seeds = mean_rate_across([rate for rate in finals if rate is not None])
        groups.append(RowGroup(heading(group_rows), group_rows, seeds))
    return groups
