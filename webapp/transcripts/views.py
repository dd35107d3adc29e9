"""Transcript pages: the filtered list, one dialogue, and two runs of a task side by side.

Researchers read every transcript; an annotator reads only the dialogues a labelling queue
assigns to them (``scope``: the selectors take ``reader``; anything else answers 404).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import SafeString
from django_htmx.http import push_url

from webapp.accounts.models import User
from webapp.accounts.requests import SignedInRequest
from webapp.core.fragments import render_fragment
from webapp.dialogues.models import Dialogue
from webapp.dialogues.reading import who_saw
from webapp.dialogues.selectors import align_rounds
from webapp.runs.models import Run
from webapp.tasks.models import Task
from webapp.transcripts import selectors
from webapp.transcripts.forms import CompareForm, DialogueFilterForm, without_blanks
from webapp.transcripts.listing import action_links, column_heads, count_line, list_rows
from webapp.transcripts.pagination import BoundedPaginator, requested_page, transcript_page

DIALOGUES_PER_PAGE = 50
ROWS_TARGET = "dialogue-rows"


def _without_page(query: QueryDict) -> str:
    params = query.copy()
    params.pop("page", None)
    return params.urlencode()


def _compare_list_query(query: QueryDict, *, ignored: Iterable[str]) -> str:
    """The list's filter as the compare page reads it (``CompareForm``): its run becomes the
    left run, its task the task, and the rest picks the tasks it offers. Page and sort are the
    list's own, and a value the list ignored (with a note) is not carried over."""
    carried = query.copy()
    for name in ("page", "sort", *ignored):
        carried.pop(name, None)
    return carried.urlencode()


def _filter_controls(form: DialogueFilterForm, *, reader: User) -> SafeString:
    """The filters' labelled controls; the annotator and agreement filters only for
    researchers."""
    # Annotators see only their own labels (blind labelling): agreement is not theirs to see.
    hidden = {"q", "has"} if reader.is_researcher else {"q", "has", "annotator", "agree"}
    return render_fragment(
        "transcripts/transcript_filters.html",
        {
            "search": form["q"],
            "kinds": form["has"],
            "fields": [field for field in form if field.name not in hidden],
        },
    )


def dialogue_list(request: SignedInRequest) -> HttpResponse:
    reader = request.user
    form = DialogueFilterForm.from_query(request.GET, reader=reader)
    filters = form.filters()
    page = transcript_page(
        filters=filters,
        reader=reader,
        per_page=DIALOGUES_PER_PAGE,
        page=request.GET.get("page"),
        load=lambda pks: list_rows(selectors.dialogue_rows(pks), link_runs=reader.is_researcher),
    )
    paginator = page.paginator
    assert isinstance(paginator, BoundedPaginator)
    query = without_blanks(request.GET)
    row_query = query.copy()
    row_query["page"] = str(page.number)
    run = form.cleaned_data.get("run")
    filtered = any(value for name, value in form.cleaned_data.items() if name != "sort")
    results = render_fragment(
        "transcripts/transcript_results.html",
        {
            "notes": form.notes,
            "count_line": count_line(
                paginator.count,
                paginator.count_text,
                filtered=filtered,
                # Annotators read the dialogues queued for them, which are all ended.
                in_play=selectors.dialogues_in_play(filters) if reader.is_researcher else 0,
                of_run=run is not None,
                some_will_match=filters.narrows_dialogues,
            ),
            "researcher": reader.is_researcher,
            "links": action_links(),
            "page": page,
            "column_heads": column_heads(query, filters.sort),
            "row_query": row_query.urlencode(),
            "page_query": _without_page(query),
            "compare_query": _compare_list_query(query, ignored=form.errors.keys()),
            "filtered": filtered,
            "run": run,
        },
    )
    if request.htmx and request.htmx.target == ROWS_TARGET:
        # The address bar shows the short, shareable form of the filters (an address already
        # shown is not pushed again: static/dialab/history.js).
        return push_url(
            HttpResponse(results), f"{request.path}?{query.urlencode()}" if query else request.path
        )
    context = {
        "form": form,
        "page": page,
        "run": run,
        "filtered": filtered,
        "row_query": row_query.urlencode(),
        "filter_controls": _filter_controls(form, reader=reader),
        "results": results,
    }
    return render(request, "transcripts/dialogue_list.html", context)


@dataclass(frozen=True)
class CompareOffer:
    """Another run of a dialogue's task, as the dialogue page offers it for comparison:
    ``same_sample`` when it has a dialogue with this dialogue's sample index; else the page
    offers ``samples`` (its first few, ``more_samples`` left out) to set beside this one."""

    run: selectors.RunOfTask
    same_sample: bool
    samples: tuple[int, ...]
    more_samples: int


# Sample links offered per run on a dialogue page; the compare page lists every sample.
OFFERED_SAMPLES = 8


def compare_offers(runs: Sequence[selectors.RunOfTask], sample_index: int) -> list[CompareOffer]:
    """Only dialogues that exist: a run without this sample index offers its own samples."""
    offers = []
    for run in runs:
        others = tuple(index for index in run.sample_indexes if index != sample_index)
        offers.append(
            CompareOffer(
                run=run,
                same_sample=run.has_sample(sample_index),
                samples=others[:OFFERED_SAMPLES],
                more_samples=max(0, len(others) - OFFERED_SAMPLES),
            )
        )
    return offers


def dialogue_detail(request: SignedInRequest, pk: int) -> HttpResponse:
    try:
        dialogue, turns = selectors.dialogue_page(pk=pk, reader=request.user)
    except Dialogue.DoesNotExist:
        raise Http404("No such dialogue.") from None
    list_query = without_blanks(request.GET).urlencode()
    neighbours = None
    if list_query:  # opened from a list: walk it with prev/next
        filters = DialogueFilterForm.from_query(request.GET, reader=request.user).filters()
        neighbours = selectors.dialogue_neighbours(
            filters=filters,
            pk=dialogue.pk,
            page_number=requested_page(request.GET.get("page")),
            per_page=DIALOGUES_PER_PAGE,
            reader=request.user,
        )
    list_params = without_blanks(request.GET)
    list_params.pop("page", None)
    other_runs = selectors.runs_of_task(
        task_id=dialogue.task_id, exclude_run_id=dialogue.run_id, reader=request.user
    )
    saw = who_saw(
        turns,
        protocol_mode=dialogue.protocol_mode,
        teacher_sees_reference=dialogue.teacher_sees_reference,
    )
    context = {
        "dialogue": dialogue,
        "who_saw": saw,
        "list_query": list_query,
        "list_query_without_page": list_params.urlencode(),
        "neighbours": neighbours,
        "conversation_html": render_fragment(
            "transcripts/conversation.html",
            {
                "dialogue": dialogue,
                "turns": turns,
                "who_saw": saw,
                "fork_url": (
                    reverse("fork_panel", args=[dialogue.pk]) if request.user.is_researcher else ""
                ),
            },
        ),
        "compare_html": render_fragment(
            "transcripts/compare_offers.html",
            {
                "offers": compare_offers(other_runs, dialogue.sample_index),
                "sample_index": dialogue.sample_index,
                "compare_url": f"{reverse('dialogue_compare')}?task={dialogue.task_id}"
                f"&left_run={dialogue.run_id}",
            },
        ),
    }
    return render(request, "transcripts/dialogue_detail.html", context)


@dataclass(frozen=True)
class CompareSide:
    """One side of the compare page: a run, the sample shown from it, its dialogue of the task
    with that sample (``None`` when it has none) and then the samples it does have, each with
    the query that shows it on this side."""

    run: Run
    sample: int
    dialogue: Dialogue | None
    samples_it_has: str = ""
    sample_links: tuple[tuple[int, str], ...] = ()


def _compare_side(
    *,
    run: Run,
    sample: int,
    dialogue: Dialogue | None,
    runs: Sequence[selectors.RunOfTask],
    query: QueryDict,
    sample_param: str,
) -> CompareSide:
    if dialogue is not None:
        return CompareSide(run=run, sample=sample, dialogue=dialogue)
    played = next((option for option in runs if option.pk == run.pk), None)
    if played is None:
        return CompareSide(run=run, sample=sample, dialogue=None)
    links = []
    for index in played.sample_indexes:
        linked = query.copy()
        linked[sample_param] = str(index)
        links.append((index, linked.urlencode()))
    return CompareSide(
        run=run,
        sample=sample,
        dialogue=None,
        samples_it_has=played.sample_ranges,
        sample_links=tuple(links),
    )


def _default_right_run(
    runs: Sequence[selectors.RunOfTask], *, left_run_id: int, sample: int
) -> selectors.RunOfTask | None:
    """The newest other run with a dialogue of this sample, else the newest other run."""
    others = [run for run in runs if run.pk != left_run_id]
    with_sample = [run for run in others if run.has_sample(sample)]
    return next(iter(with_sample or others), None)


def _run_row(run: selectors.RunOfTask) -> Run:
    """A run chosen for the reader (from the runs that played the task, which they may read)
    as the page shows one: its id and name."""
    return Run.from_db(None, ["id", "name"], [run.pk, run.name])


@dataclass(frozen=True)
class CompareChoice:
    """What the compare page sets side by side, the link's choices completed (``complete``)."""

    left_run: Run | None
    right_run: Run | None
    sample: int
    right_sample: int
    prefilled: tuple[str, ...] = ()

    @property
    def prefilled_note(self) -> str:
        if not self.prefilled:
            return ""
        chosen = "runs were" if len(self.prefilled) > 1 else "run was"
        return (
            f"The {' and the '.join(self.prefilled)} {chosen} chosen for you among the runs "
            "that played this task; pick others above."
        )

    def query(self, task: Task) -> QueryDict:
        """The link to this comparison, both samples spelt out (a link that changes one side's
        sample leaves the other where it is)."""
        assert self.left_run is not None and self.right_run is not None
        query = QueryDict(mutable=True)
        query["task"] = str(task.pk)
        query["left_run"] = str(self.left_run.pk)
        query["right_run"] = str(self.right_run.pk)
        query["sample"] = str(self.sample)
        query["right_sample"] = str(self.right_sample)
        return query


def complete(data: dict[str, Any], runs: Sequence[selectors.RunOfTask]) -> CompareChoice:
    """What the link did not say, filled in from the runs that played the task: the newest run
    on the left, its first sample, the newest other run with that sample on the right, and the
    same sample there."""
    left_run, right_run = data.get("left_run"), data.get("right_run")
    prefilled: list[str] = []
    if left_run is None and runs:
        left_run = _run_row(runs[0])
        prefilled.append("left")
    sample = data.get("sample")
    if sample is None:
        played = next((run for run in runs if left_run and run.pk == left_run.pk), None)
        sample = played.sample_indexes[0] if played else 0
    if right_run is None and left_run is not None:
        other = _default_right_run(runs, left_run_id=left_run.pk, sample=sample)
        if other is not None:
            right_run = _run_row(other)
            prefilled.append("right")
    right_sample = data.get("right_sample")
    return CompareChoice(
        left_run=left_run,
        right_run=right_run,
        sample=sample,
        right_sample=sample if right_sample is None else right_sample,
        prefilled=tuple(prefilled),
    )


def _comparison(
    request: SignedInRequest,
    *,
    task: Task,
    choice: CompareChoice,
    runs: Sequence[selectors.RunOfTask],
) -> dict[str, object]:
    """Both dialogues, each side's head, and their turns round by round."""
    assert choice.left_run is not None and choice.right_run is not None
    left, right = (
        selectors.compare_dialogue(
            task_id=task.pk, run_id=run.pk, sample_index=sample, reader=request.user
        )
        for run, sample in (
            (choice.left_run, choice.sample),
            (choice.right_run, choice.right_sample),
        )
    )
    if left is None and right is None and not request.user.is_researcher:
        raise Http404("No such dialogue in your queues.")
    query = choice.query(task)
    return {
        "left": left,
        "right": right,
        "left_side": _compare_side(
            run=choice.left_run, sample=choice.sample, dialogue=left, runs=runs, query=query,
            sample_param="sample",
        ),
        "right_side": _compare_side(
            run=choice.right_run, sample=choice.right_sample, dialogue=right, runs=runs,
            query=query, sample_param="right_sample",
        ),
        "rounds": align_rounds(
            left=list(left.turns.all()) if left else [],
            right=list(right.turns.all()) if right else [],
        ),
    }  # fmt: skip


def _task_choices(request: SignedInRequest, form: CompareForm) -> dict[str, object]:
    """No task yet: the tasks of the transcript list's filter (the list's "Compare runs" brings
    it along), each a link with the filter's run as the left side."""
    list_form = DialogueFilterForm.from_query(request.GET, reader=request.user)
    left_run = form.cleaned_data.get("left_run")
    return {
        "task_choices": selectors.tasks_to_compare(
            filters=list_form.filters(), reader=request.user
        ),
        "task_choice_run": left_run,
        "list_query": without_blanks(request.GET).urlencode(),
        "list_filtered": any(
            value for name, value in list_form.cleaned_data.items() if name != "sort"
        ),
    }


def dialogue_compare(request: SignedInRequest) -> HttpResponse:
    form = CompareForm.from_query(request.GET, reader=request.user)
    refused = form.errors.keys() & {"task", "left_run", "right_run"}
    if refused and not request.user.is_researcher:
        # The form offers an annotator only the tasks and runs of their queues; any other
        # answers 404, as the dialogues outside their queues do (a note would echo the id).
        raise Http404("No such task or run in your queues.")
    task = form.cleaned_data.get("task")
    context: dict[str, object] = {"form": form, "task": task}
    if task is None:
        context.update(_task_choices(request, form))
        return render(request, "transcripts/dialogue_compare.html", context)
    runs = selectors.runs_of_task(task_id=task.pk, reader=request.user)
    choice = complete(form.cleaned_data, runs)
    context.update(
        runs=runs,
        left_run=choice.left_run,
        right_run=choice.right_run,
        sample=choice.sample,
        right_sample=choice.right_sample,
        prefilled=choice.prefilled_note,
    )
    if choice.left_run is not None and choice.right_run is not None:
        context.update(_comparison(request, task=task, choice=choice, runs=runs))
    return render(request, "transcripts/dialogue_compare.html", context)
