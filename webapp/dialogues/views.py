"""Transcript pages: the filtered list, one dialogue, and two runs of a task side by side.

Researchers read every transcript; an annotator reads only the dialogues a labelling queue
assigns to them (the selectors take ``reader``; anything else answers 404).
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.utils.safestring import SafeString
from django_htmx.http import push_url

from webapp.accounts.models import User
from webapp.core.fragments import render_fragment
from webapp.dialogues import search, selectors
from webapp.dialogues.filters import DEFAULT_SORT
from webapp.dialogues.forms import CompareForm, DialogueFilterForm
from webapp.dialogues.listing import column_heads, list_rows
from webapp.dialogues.models import Dialogue
from webapp.dialogues.pagination import COUNT_LIMIT, BoundedPaginator, requested_page

DIALOGUES_PER_PAGE = 50
ROWS_TARGET = "dialogue-rows"
# A word search is counted by reading every matching dialogue's row (its GIN index cannot
# count alone): on the benchmark's data, 10,000 matches took about 10 ms of database time on
# each page and 1,000 under 2 ms. A search that looks into each turn counts only to the end of
# its page (pagination.py).
SEARCH_COUNT_LIMIT = 1_000


def _count_limit(search_text: str, searches_turns: bool) -> int:
    if searches_turns:
        return 0
    return SEARCH_COUNT_LIMIT if search_text else COUNT_LIMIT


def _reader(request: HttpRequest) -> User:
    return request.user  # type: ignore[return-value]


def _clean_query(query: QueryDict) -> QueryDict:
    """The query without empty parameters (what a GET form sends for untouched fields), so
    shared links stay short."""
    clean = QueryDict(mutable=True)
    for name, values in query.lists():
        kept = [value for value in values if value.strip()]
        if kept:
            clean.setlist(name, kept)
    return clean


def _filter_controls(form: DialogueFilterForm, *, reader: User) -> SafeString:
    """The filters' labelled controls; the annotator and agreement filters only for
    researchers."""
    # Annotators see only their own labels (blind labelling): agreement is not theirs to see.
    hidden = {"q", "has"} if reader.is_researcher else {"q", "has", "annotator", "agree"}
    return render_fragment(
        "dialogues/transcript_filters.html",
        {
            "search": form["q"],
            "kinds": form["has"],
            "fields": [field for field in form if field.name not in hidden],
        },
    )


def dialogue_list(request: HttpRequest) -> HttpResponse:
    form = DialogueFilterForm.from_query(request.GET, reader=_reader(request))
    filters = form.filters()
    searches_turns = search.searches_turns(filters.search)
    ids = selectors.dialogue_list(
        filters=filters, reader=_reader(request), searches_turns=searches_turns
    )
    link_runs = _reader(request).is_researcher
    page = BoundedPaginator(
        ids.values_list("pk", flat=True),
        DIALOGUES_PER_PAGE,
        load=lambda pks: list_rows(selectors.dialogue_rows(pks), link_runs=link_runs),
        page=requested_page(request.GET.get("page")),
        count_limit=_count_limit(filters.search, searches_turns),
    ).get_page(request.GET.get("page"))
    query = _clean_query(request.GET)
    row_query = query.copy()
    row_query["page"] = str(page.number)
    context = {
        "form": form,
        "filters": filters,
        "page": page,
        "run": form.cleaned_data.get("run"),
        "filtered": any(value for name, value in form.cleaned_data.items() if name != "sort"),
        "column_heads": column_heads(query, filters.sort),
        "rows_html": render_fragment(
            "dialogues/transcript_rows.html",
            {"rows": page.object_list, "query": row_query.urlencode()},
        ),
        "row_query": row_query.urlencode(),
        "default_sort": DEFAULT_SORT,
    }
    if request.htmx and request.htmx.target == ROWS_TARGET:
        response = render(request, "dialogues/dialogue_list.html#rows", context)
        # The address bar shows the short, shareable form of the filters.
        return push_url(response, f"{request.path}?{query.urlencode()}" if query else request.path)
    context["filter_controls"] = _filter_controls(form, reader=_reader(request))
    return render(request, "dialogues/dialogue_list.html", context)


def dialogue_detail(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        dialogue = selectors.dialogue_with_turns(pk=pk, reader=_reader(request))
    except Dialogue.DoesNotExist:
        raise Http404("No such dialogue.") from None
    list_query = _clean_query(request.GET).urlencode()
    neighbours = None
    if list_query:  # opened from a list: walk it with prev/next
        filters = DialogueFilterForm.from_query(request.GET, reader=_reader(request)).filters()
        neighbours = selectors.dialogue_neighbours(
            filters=filters,
            pk=dialogue.pk,
            page_number=requested_page(request.GET.get("page")),
            per_page=DIALOGUES_PER_PAGE,
            reader=_reader(request),
        )
    list_params = _clean_query(request.GET)
    list_params.pop("page", None)
    context = {
        "dialogue": dialogue,
        "turns": list(dialogue.turns.all()),
        "list_query": list_query,
        "list_query_without_page": list_params.urlencode(),
        "neighbours": neighbours,
        "other_runs": selectors.runs_with_task(
            task_id=dialogue.task_id, exclude_run_id=dialogue.run_id, reader=_reader(request)
        ),
    }
    return render(request, "dialogues/dialogue_detail.html", context)


def dialogue_compare(request: HttpRequest) -> HttpResponse:
    form = CompareForm.from_query(request.GET, reader=_reader(request))
    refused = form.errors.keys() & {"task", "left_run", "right_run"}
    if refused and not _reader(request).is_researcher:
        # The form offers an annotator only the tasks and runs of their queues; any other
        # answers 404, as the dialogues outside their queues do (a note would echo the id).
        raise Http404("No such task or run in your queues.")
    data = form.cleaned_data
    task, left_run, right_run = data.get("task"), data.get("left_run"), data.get("right_run")
    sample = data.get("sample") or 0
    context: dict[str, object] = {
        "form": form,
        "task": task,
        "left_run": left_run,
        "right_run": right_run,
        "sample": sample,
    }
    if task is not None:
        context["runs"] = list(selectors.runs_with_task(task_id=task.pk, reader=_reader(request)))
    if task is not None and left_run is not None and right_run is not None:
        left = selectors.compare_dialogue(
            task_id=task.pk, run_id=left_run.pk, sample_index=sample, reader=_reader(request)
        )
        right = selectors.compare_dialogue(
            task_id=task.pk, run_id=right_run.pk, sample_index=sample, reader=_reader(request)
        )
        if left is None and right is None and not _reader(request).is_researcher:
            raise Http404("No such dialogue in your queues.")
        context.update(
            left=left,
            right=right,
            rounds=selectors.align_rounds(
                left=list(left.turns.all()) if left else [],
                right=list(right.turns.all()) if right else [],
            ),
        )
    return render(request, "dialogues/dialogue_compare.html", context)
