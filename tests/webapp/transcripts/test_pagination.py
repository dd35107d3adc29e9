"""The transcript list's paginator: a bounded count, and none at all for dear searches."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import TaskSetFactory
from webapp.tasks.models import TaskSet
from webapp.transcripts.pagination import MAX_PAGE, BoundedPaginator, requested_page

pytestmark = pytest.mark.django_db


def paginate(page: int, count_limit: int) -> tuple[list[int], str, int]:
    """The page's ids, its count text and how many queries the page took, over five rows
    two to a page."""
    ids = TaskSet.objects.order_by("pk").values_list("pk", flat=True)
    paginator = BoundedPaginator(
        ids, 2, load=lambda pks: list(pks), page=page, count_limit=count_limit
    )
    with CaptureQueriesContext(connection) as queries:
        shown = paginator.get_page(str(page))
        text = paginator.count_text
    return list(shown.object_list), text, len(queries)


@pytest.fixture
def five() -> list[int]:
    return [TaskSetFactory().pk for _ in range(5)]


def test_count_is_exact_up_to_its_limit(five: list[int]) -> None:
    assert paginate(1, count_limit=10) == (five[:2], "5", 2)
    assert paginate(1, count_limit=3) == (five[:2], "more than 3", 2)
    # A page past the limit counts to its own end, from its own query.
    assert paginate(2, count_limit=3) == (five[2:4], "more than 4", 1)


def test_a_page_that_is_not_full_is_the_last_and_counts_without_a_query(five: list[int]) -> None:
    assert paginate(3, count_limit=10) == (five[4:], "5", 1)
    assert paginate(1, count_limit=10)[2] == 2  # a full page: there may be more


def test_page_end_count_reads_one_row_more_and_no_count(five: list[int]) -> None:
    assert paginate(1, count_limit=0) == (five[:2], "more than 2", 1)
    assert paginate(2, count_limit=0) == (five[2:4], "more than 4", 1)
    assert paginate(3, count_limit=0) == (five[4:], "5", 1)


def test_page_past_the_end_shows_the_last(five: list[int]) -> None:
    for limit in (0, 10):
        ids, text, _queries = paginate(9, count_limit=limit)
        assert (ids, text) == (five[4:], "5")


@pytest.mark.parametrize("asked", ["163139726857974688", "9" * 5000])
def test_a_page_number_past_any_list_shows_the_last_page(
    five: list[int], researcher_client, asked: str
) -> None:  # type: ignore[no-untyped-def]
    """Found by fuzzing the API: the offset of a page this far out overflowed the database's
    integers (a server error on both the list page and the API)."""
    assert requested_page(asked) == MAX_PAGE
    assert [requested_page(v) for v in ("", "0", "-3", "²", "7")] == [1, 1, 1, 1, 7]
    shown = researcher_client.get(reverse("dialogue_list"), {"page": asked})
    assert shown.status_code == 200
