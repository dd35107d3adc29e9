"""``/api/v1/dialogues``: the transcript list, with the list page's filter syntax, and one
dialogue with its turns. A person sees what their pages show them: an annotator only the
dialogues their labelling queues hold."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from ninja import Query, Router, Schema
from pydantic import Field

from webapp.accounts.models import User
from webapp.api.auth import RESEARCHERS
from webapp.api.common import MAX_ROW_ID, Id, Refused
from webapp.dialogues.models import Dialogue
from webapp.transcripts import exporting, selectors
from webapp.transcripts.forms import DialogueFilterForm
from webapp.transcripts.pagination import (
    BoundedPaginator,
    transcript_page,
    transcript_walk_page,
)

router = Router(tags=["dialogues"])
MAX_PER_PAGE = 500


class DialogueFilter(Schema):
    """The transcript list's filters, written as on its page (``/dialogues/?outcome=solved``):
    a value the list would ignore is ignored here too, and named in ``ignored``."""

    q: str | None = None
    run: Id | None = None
    task_set: Id | None = None
    task: Id | None = None
    student: Id | None = None
    outcome: str | None = None
    end_reason: str | None = None
    first_correct: str | None = None
    turns: str | None = None
    step: str | None = None
    leak: str | None = None
    teacher: str | None = None
    changed: str | None = None
    has: list[str] | None = None
    labelled: str | None = None
    label: str | None = None
    agree: str | None = None
    annotator: Id | None = None
    sort: str | None = None


class DialogueRow(Schema):
    id: int
    run_id: Id
    run_name: str
    task_id: Id
    prompt_head: str
    student_name: str
    sample_index: int
    outcome: str
    end_reason: str
    first_correct_turn: int | None
    num_turns: int
    leaked: bool
    created_at: datetime


class DialoguePage(Schema):
    count: int
    count_is_exact: bool
    page: int  # 1 for every page of a walk (``after``)
    per_page: int
    has_next: bool
    next_after: int | None  # a walk's next page: ``after=`` this (None: the last, or no walk)
    ignored: list[str]
    items: list[DialogueRow]


# Where a walk starts: before every id.
WALK_START = 0


class TurnOut(Schema):
    index: int
    round: int
    role: str
    kind: str
    text: str
    private_context: dict[str, Any]
    extracted_answer: str
    is_correct: bool | None
    score: float | None
    leak_flag: bool
    move_valid: bool | None
    move_consistent: bool | None


class DialogueOut(Schema):
    id: int
    run_id: Id
    run_name: str
    task_id: Id
    task_prompt: str
    task_reference: Any
    sample_index: int
    seed: int
    outcome: str
    end_reason: str
    first_correct_turn: int | None
    num_turns: int
    training_step: int | None
    turns: list[TurnOut]


def _row(row: dict[str, Any]) -> DialogueRow:
    return DialogueRow(id=row["pk"], run_name=row["run__name"], **{k: row[k] for k in _ROW_NAMES})


_ROW_NAMES = (
    "run_id", "task_id", "prompt_head", "student_name", "sample_index", "outcome", "end_reason",
    "first_correct_turn", "num_turns", "leaked", "created_at",
)  # fmt: skip


@router.get("", response=DialoguePage, summary="Transcripts matching a filter, a page at a time")
def list_dialogues(
    request: HttpRequest,
    filters: Query[DialogueFilter],
    page: int = 1,
    per_page: int = 100,
    after: Annotated[int | None, Field(ge=WALK_START, le=MAX_ROW_ID)] = None,
) -> DialoguePage:
    """The transcript list's query, through the same form, selector and count as its page
    (``count_is_exact`` is false where the count stopped: the page says "more than").
    ``after``: walk the list instead, in id order, from the first id above it (0 starts; each
    page gives the next ``next_after``): a program reading every transcript sees each once,
    even while a run adds more, and a deep page costs what the first did. A walk ignores
    ``page`` and ``sort`` (named in ``ignored``)."""
    reader = request.user
    form = DialogueFilterForm.from_query(request.GET, reader=reader)  # type: ignore[arg-type]
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    if after is not None:
        return _walk_page(form, reader, per_page, after)  # type: ignore[arg-type]
    shown = transcript_page(
        filters=form.filters(),
        reader=reader,  # type: ignore[arg-type]
        per_page=per_page,
        page=str(page),
        load=selectors.dialogue_rows,
    )
    paginator = shown.paginator
    assert isinstance(paginator, BoundedPaginator)
    return DialoguePage(
        count=paginator.count,
        count_is_exact=paginator.count_is_exact,
        page=shown.number,
        per_page=per_page,
        has_next=shown.has_next(),
        next_after=None,
        ignored=form.notes,
        items=[_row(row) for row in shown.object_list],
    )


def _walk_page(form: DialogueFilterForm, reader: User, per_page: int, after: int) -> DialoguePage:
    walked = transcript_walk_page(
        filters=form.filters(),
        reader=reader,
        per_page=per_page,
        after=after,
        load=selectors.dialogue_rows,
    )
    ignored = [
        f"Ignored {name}={form.data[name]!r}: a walk (after=) goes in id order, page after page."
        for name in ("page", "sort")
        if form.data.get(name)
    ]
    return DialoguePage(
        count=walked.count,
        count_is_exact=walked.count_is_exact,
        page=1,
        per_page=per_page,
        has_next=walked.next_after is not None,
        next_after=walked.next_after,
        ignored=form.notes + ignored,
        items=[_row(row) for row in walked.rows],
    )


class FilterRefused(Refused):
    """A refused export: ``ignored`` names each filter value the list would ignore."""

    ignored: list[str] = []


@router.get(
    "/export.jsonl",
    response={200: None, 422: FilterRefused},
    auth=RESEARCHERS,
    summary="Transcripts with their turns, verdicts and labels, streamed as JSON lines",
)
def export_dialogues(
    request: HttpRequest, filters: Query[DialogueFilter], include_private: bool = False
) -> HttpResponse | StreamingHttpResponse:
    """The export page's JSONL (its records are described in ``webapp/transcripts/exporting.py``
    and the docs), streamed: memory stays flat whatever the number of dialogues. Unlike the
    list, a filter with a value the list would ignore is refused rather than widened to every
    transcript."""
    form = exporting.filter_form(request.GET)
    unknown = [f"Unknown filter {name!r}." for name in exporting.unknown_params(request.GET)]
    if ignored := form.notes + unknown:
        return JsonResponse({"detail": "Nothing exported.", "ignored": ignored}, status=422)
    lines = exporting.jsonl_lines(filters=form.filters(), include_private=include_private)
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


@router.get("/{dialogue_id}", response=DialogueOut, summary="One dialogue with its turns")
def get_dialogue(request: HttpRequest, dialogue_id: Id) -> DialogueOut:
    try:
        page, turns = selectors.dialogue_page(pk=dialogue_id, reader=request.user)  # type: ignore[arg-type]
    except Dialogue.DoesNotExist as missing:
        raise Http404("No such dialogue, or not one you may read.") from missing
    return DialogueOut(
        id=page.pk,
        run_id=page.run_id,
        run_name=page.run_name,
        task_id=page.task_id,
        task_prompt=page.task_prompt,
        task_reference=page.task_reference,
        sample_index=page.sample_index,
        seed=page.seed,
        outcome=page.outcome,
        end_reason=page.end_reason,
        first_correct_turn=page.first_correct_turn,
        num_turns=page.num_turns,
        training_step=page.training_step,
        turns=[TurnOut.from_orm(turn) for turn in turns],
    )
