"""Paging a transcript list of any length in a fixed number of small queries.

Two differences from Django's paginator, both for lists of 100,000 dialogues and more:

- **A bounded count.** Counting every match of a filter costs as much as reading them all, so
  the count stops at ``COUNT_LIMIT`` rows (or at the end of the page asked for, when that lies
  further): past it the page says "more than 10,000", never a wrong number, and the next page
  is always reachable (its own count reaches one row past it). A list whose matches are dear
  to find (a search that checks each turn) counts only to the end of its page (limit 0): its
  page query reads one row more, and that is the count (no count query of its own).
- **Ids first.** A page reads the ids of its rows in the list's order (a narrow query that the
  sort's index answers, with the filters alone deciding the plan), then those rows with what
  they show (``load``), by primary key. It reads one id past its end, so that a page that is
  not full knows it is the last and counts without a query of its own.

A program that reads a whole list walks it instead (``transcript_walk_page``): each page starts
after the last id the one before ended on, in id order. Numbered pages shift when a run adds
dialogues while they are read (newest run first, a row read on page 1 comes again on page 2),
and each deeper page skips more rows to reach its own; a walk sees every transcript once, the
new ones at its end, and its last page costs what its first did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.utils.functional import cached_property

from webapp.accounts.models import User
from webapp.dialogues import search
from webapp.transcripts import selectors
from webapp.transcripts.filters import DialogueFilters

COUNT_LIMIT = 10_000
# A word search is counted by reading every matching dialogue's row (its GIN index cannot
# count alone): on the benchmark's data a common word ("parity", in one dialogue of ten) took
# 10 ms of database time to count to 10,000, 3.5 ms to 1,000 and 1.4 ms to 500, on every page.
SEARCH_COUNT_LIMIT = 500


def _count_limit(search_text: str, *, searches_turns: bool) -> int:
    """How far a transcript list counts: a search that looks into
    each turn only to the end of its page (0), a word search to ``SEARCH_COUNT_LIMIT``, any
    other filter to ``COUNT_LIMIT``."""
    if searches_turns:
        return 0
    return SEARCH_COUNT_LIMIT if search_text else COUNT_LIMIT


# Past the end of any list (so it shows the last page), and small enough that the page's offset
# stays within the databases' integers.
MAX_PAGE = 10**9


def requested_page(value: str | None) -> int:
    """The page number a query string asks for (1 when it asks for none or nonsense, MAX_PAGE
    at most)."""
    value = (value or "").strip()
    if not (value.isascii() and value.isdigit()):
        return 1
    if len(value) > len(str(MAX_PAGE)):
        return MAX_PAGE
    return min(max(int(value), 1), MAX_PAGE)


class BoundedPaginator(Paginator):  # type: ignore[type-arg]
    def __init__(
        self,
        ids: QuerySet[Any],
        per_page: int,
        *,
        load: Callable[[Sequence[int]], list[Any]],
        page: int = 1,
        count_limit: int = COUNT_LIMIT,
    ) -> None:
        """``ids``: the list's primary keys in its order (a ``values_list("pk", flat=True)``);
        ``load``: the rows for some ids, in that order; ``page``: the page number asked for."""
        super().__init__(ids, per_page)
        self.load = load
        self.requested = page
        self.counts_to_page_end = count_limit <= page * self.per_page
        self.count_limit = max(count_limit, page * self.per_page)

    @property
    def ids(self) -> QuerySet[Any]:
        """The list's primary keys, as given (Paginator types its object list more loosely)."""
        return cast("QuerySet[Any]", self.object_list)

    @cached_property
    def count(self) -> int:
        """Exact up to ``count_limit``; ``count_limit + 1`` means "more than that"."""
        return int(self.ids.order_by()[: self.count_limit + 1].count())

    @property
    def count_is_exact(self) -> bool:
        return self.count <= self.count_limit

    @property
    def count_text(self) -> str:
        """``1,234`` or ``more than 10,000``."""
        return f"{self.count:,}" if self.count_is_exact else f"more than {self.count_limit:,}"

    def get_page(self, number: Any) -> Page[Any]:
        """The page asked for in the constructor (``number`` is the same, unparsed); a page past
        the end gives the last page, as Django's does. The page's ids come first, one row past
        its end: a page that is not full is the last, and then its count needs no query."""
        bottom = (self.requested - 1) * self.per_page
        ids = list(self.ids[bottom : bottom + self.per_page + 1])
        if not ids and self.requested > 1:  # past the end: count, and show the last page
            return super().get_page(number)
        if self.counts_to_page_end or len(ids) <= self.per_page:
            self.__dict__["count"] = bottom + len(ids)  # the cached_property's value
        return Page(self.load(ids[: self.per_page]), self.requested, self)

    def page(self, number: Any) -> Page[Any]:
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        ids = list(self.ids[bottom : bottom + self.per_page])
        return Page(self.load(ids), number, self)


def transcript_page(
    *,
    filters: DialogueFilters,
    reader: User,
    per_page: int,
    page: str | None,
    load: Callable[[Sequence[int]], list[Any]],
) -> Page[Any]:
    """One page of the transcript list for ``filters``, of what ``reader`` may see, counted as
    far as ``_count_limit`` says; ``page``: the number asked for, unparsed. The list page and
    the API both call this, so that they select, order and count alike."""
    return _paginator(filters, reader, per_page, load, page=requested_page(page)).get_page(page)


@dataclass(frozen=True)
class WalkPage:
    """One page of a walk: its rows, the id the next page starts after (None: this was the
    last), and the list's count as its first numbered page gives it."""

    rows: list[Any]
    next_after: int | None
    count: int
    count_is_exact: bool


def transcript_walk_page(
    *,
    filters: DialogueFilters,
    reader: User,
    per_page: int,
    after: int,
    load: Callable[[Sequence[int]], list[Any]],
) -> WalkPage:
    """The first ``per_page`` transcripts for ``filters`` (of what ``reader`` may see) whose id
    is above ``after``, in id order, whatever the filters' sort; 0 starts the walk. It selects
    as ``transcript_page`` does, and counts as the list's first page does."""
    paginator = _paginator(filters, reader, per_page, load)
    page_ids = list(paginator.ids.filter(pk__gt=after).order_by("pk")[: per_page + 1])
    shown = page_ids[:per_page]
    return WalkPage(
        rows=load(shown),
        next_after=shown[-1] if len(page_ids) > per_page else None,
        count=paginator.count,
        count_is_exact=paginator.count_is_exact,
    )


def _paginator(
    filters: DialogueFilters,
    reader: User,
    per_page: int,
    load: Callable[[Sequence[int]], list[Any]],
    *,
    page: int = 1,
) -> BoundedPaginator:
    """The list's ids for ``filters``, in its order, counted as far as ``_count_limit`` says."""
    searches_turns = search.searches_turns(filters.search)
    ids = selectors.dialogue_list(filters=filters, reader=reader, searches_turns=searches_turns)
    return BoundedPaginator(
        ids.values_list("pk", flat=True),
        per_page,
        load=load,
        page=page,
        count_limit=_count_limit(filters.search, searches_turns=searches_turns),
    )
