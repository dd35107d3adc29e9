"""What every part of the API shares: row ids and page bounds, and how a form's refusal comes
back (422, each field's problems, as the form would show them under it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from django import forms
from django.db.models import QuerySet
from ninja import Schema, Status
from pydantic import Field

from models_gpu.spec.settings import Setting

MAX_LIMIT = 500
# A row id as the databases store it (a signed 64-bit integer): a larger number is refused as
# a bad request rather than reaching the database, which cannot compare with it.
MAX_ROW_ID = 2**63 - 1
Id = Annotated[int, Field(ge=1, le=MAX_ROW_ID)]
Offset = Annotated[int, Field(ge=0, le=MAX_ROW_ID - MAX_LIMIT)]
# Where a walk through a list goes on: the id of the last row read (0 starts it), or for a task
# set's tasks, the last position read (-1 starts it).
After = Annotated[int | None, Field(ge=0, le=MAX_ROW_ID)]
AfterPosition = Annotated[int | None, Field(ge=-1, le=MAX_ROW_ID)]


def bounded(limit: int) -> int:
    """A page size between 1 and MAX_LIMIT."""
    return max(1, min(limit, MAX_LIMIT))


def list_page(
    rows: QuerySet[Any], *, limit: int, offset: int, after: int | None, key: str = "pk"
) -> QuerySet[Any] | Status[Refused]:
    """One page of ``rows``: by ``offset``, in their own order; or, given ``after``, the next
    page of a walk in ``key`` order (a unique column) from the first row above ``after``. A
    program reading a whole list walks it: each row there throughout is read exactly once,
    whatever is added or deleted meanwhile, where an offset moves when a row before it goes."""
    if after is None:
        return rows[offset : offset + bounded(limit)]
    if offset:
        problem = "A walk (after=) goes on from after, not from an offset: leave offset out."
        return refused("offset and after do not go together.", {"offset": [problem]})
    return rows.filter(**{f"{key}__gt": after}).order_by(key)[: bounded(limit)]


class Refused(Schema):
    """What the page's form would have said: each field's problems (``__all__`` for the form
    as a whole; a request of the wrong shape names the field's path, ``tasks.2.prompt``)."""

    detail: str
    problems: dict[str, list[str]] = {}


def refused(detail: str, problems: dict[str, list[str]]) -> Status[Refused]:
    return Status(422, Refused(detail=detail, problems=problems))


def form_refused(form: forms.BaseForm, detail: str) -> Status[Refused]:
    problems = {
        field: [str(message) for message in errors] for field, errors in form.errors.items()
    }
    return refused(detail, problems)


def filled_in(blank: forms.BaseForm, values: Mapping[str, Any]) -> dict[str, Any]:
    """A form's data as a page would post it untouched (each field's initial value), with
    ``values`` (None: left as the page has it) over it: what a script leaves out takes the
    form's defaults."""
    data = {name: blank[name].initial for name in blank.fields}
    return data | {name: value for name, value in values.items() if value is not None}


def unknown_names(given: Iterable[str], known: Iterable[str], what: str) -> list[str]:
    """A problem naming what was given that is not known (empty: nothing)."""
    unknown, known = sorted(set(given) - set(known)), sorted(known)
    if not unknown:
        return []
    return [f"No {what} {', '.join(unknown)}; the {what}s: {', '.join(known) or 'none'}."]


class SettingOut(Schema):
    """A setting a form takes (a generator's knob, a training hyperparameter): its kind
    (int, float, bool, str, choice), its default and bounds, and what it does."""

    name: str
    kind: str
    default: Any
    help: str
    choices: list[str]
    low: float | None
    high: float | None


def setting_out(setting: Setting) -> SettingOut:
    return SettingOut(
        name=setting.name,
        kind=setting.kind,
        default=setting.default,
        help=setting.help,
        choices=list(setting.choices),
        low=setting.low,
        high=setting.high,
    )
