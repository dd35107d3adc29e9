"""Forms that read the transcript pages' query strings. They validate, they never fail a page:
a bad value is dropped and reported as a note (see ``DialogueFilterForm.notes``)."""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, cast

from django import forms
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Exists, F, OuterRef, QuerySet, Value, Window
from django.db.models.functions import RowNumber
from django.forms.models import ModelChoiceIterator
from django.http import QueryDict

from webapp.accounts.models import User
from webapp.annotations.models import LabelQuestion, QueueAssignment
from webapp.core.compiled_sql import READER_MARKER, bind
from webapp.dialogues.models import Dialogue, Turn
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.tasks.models import Task, TaskSet
from webapp.transcripts.filters import (
    COMPARISONS,
    DEFAULT_SORT,
    LABEL_OPERATORS,
    SORTS,
    DialogueFilters,
    IntRange,
    LabelMatch,
)
from webapp.transcripts.scope import bounding_annotator, queued_for

RANGE_PATTERN = re.compile(r"^\s*(?P<lower>\d+)?\s*(?P<sep>-|–|\.\.|\+)?\s*(?P<upper>\d+)?\s*$")
YES_NO_ANY = [("", "any"), ("yes", "yes"), ("no", "no")]


def without_blanks(query: QueryDict) -> QueryDict:
    """The query without empty parameters (what a GET form sends for untouched fields), so
    shared links stay short."""
    clean = QueryDict(mutable=True)
    for name, values in query.lists():
        kept = [value for value in values if value.strip()]
        if kept:
            clean.setlist(name, kept)
    return clean


class IntRangeField(forms.CharField):
    """``3`` (exactly), ``2-4`` (inclusive), ``2+`` or ``2-`` (at least), ``-4`` (at most)."""

    default_error_messages = {
        "invalid": "Use a number (3), a range (2-4) or an open range (2+ or -4).",
    }

    def to_python(self, value: Any) -> IntRange | None:  # type: ignore[override]
        text = super().to_python(value)
        if not text:
            return None
        match = RANGE_PATTERN.match(text)
        if not match or not (match["lower"] or match["upper"]):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        lower = int(match["lower"]) if match["lower"] else None
        upper = int(match["upper"]) if match["upper"] else None
        if match["sep"] is None:
            return IntRange(lower, lower)
        if match["sep"] == "+" and upper is not None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        if lower is not None and upper is not None and lower > upper:
            raise forms.ValidationError("The range starts after it ends.", code="invalid")
        return IntRange(lower, upper)


class SharesItsChoices:
    """A field whose copies share its choices and widget attributes, which no form changes.
    Django copies every field deeply for every form it makes, choices included: for the
    transcript filter's twenty fields that took half a millisecond a page."""

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        field = copy.copy(self)
        memo[id(self)] = field
        field.widget = copy.copy(self.widget)  # type: ignore[attr-defined]
        field.error_messages = self.error_messages.copy()  # type: ignore[attr-defined]
        field.validators = self.validators[:]  # type: ignore[attr-defined]
        return field


class FixedChoiceField(SharesItsChoices, forms.ChoiceField):
    pass


class FixedMultipleChoiceField(SharesItsChoices, forms.MultipleChoiceField):
    pass


class ListedChoiceIterator(ModelChoiceIterator):
    """The options in one plain query (or from ``load_options``). Django's iterator reads them
    through a server-side cursor on PostgreSQL (DECLARE, FETCH, CLOSE: three round trips per
    select, four selects on every transcript list)."""

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        field = self.field
        assert isinstance(field, ListedModelChoiceField)
        if field.empty_label is not None:
            yield ("", field.empty_label)
        for obj in field.options():
            yield self.choice(obj)


class ListedModelChoiceField(SharesItsChoices, forms.ModelChoiceField):  # type: ignore[type-arg]
    """A choice among a short list that the form shows anyway: the value is looked up in the
    options (one query for checking the value and drawing the select) instead of with a query
    of its own."""

    iterator = ListedChoiceIterator
    # Set by a form that reads the options of several selects together (on first use).
    load_options: Callable[[], list[Any]] | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        field = super().__deepcopy__(memo)
        # A queryset of its own: a shared one would keep the rows it read for every later form
        # (the setter clones it, and points the widget's choices at this copy's options).
        field.queryset = self.queryset
        return field

    def options(self) -> Any:
        return self.queryset if self.load_options is None else self.load_options()

    def to_python(self, value: Any) -> Any:
        if value in self.empty_values:
            return None
        self.validate_no_null_characters(value)
        assert self.queryset is not None
        try:
            pk = self.queryset.model._meta.pk.to_python(value)
        except ValidationError:
            pk = None
        for option in self.options():  # read once; the select iterates the same rows
            if option.pk == pk:
                return option
        raise ValidationError(
            self.error_messages["invalid_choice"], code="invalid_choice", params={"value": value}
        )


def _numbered(queryset: QuerySet[Any], select: str, text: str, number: Any) -> Any:
    """One select's rows for ``read_filter_options``: (select, place in the queryset's own
    order, pk, text, number)."""
    # The selects' querysets are ordered by field names, not expressions.
    names = cast("Sequence[str]", queryset.query.order_by or queryset.model._meta.ordering)
    order = [
        F(name.removeprefix("-")).desc() if name.startswith("-") else F(name).asc()
        for name in names
    ]
    return (
        queryset.order_by()
        .annotate(
            select=Value(select),
            place=Window(RowNumber(), order_by=order),
            text=F(text),
            number=number,
        )
        .values_list("select", "place", "pk", "text", "number")
    )


def _choice_queryset(name: str) -> QuerySet[Any]:
    """What the filter form's model select ``name`` offers, before any reader's scope."""
    field = DialogueFilterForm.base_fields[name]
    assert isinstance(field, forms.ModelChoiceField) and field.queryset is not None
    return field.queryset


def _option_querysets(annotator_id: int | None) -> dict[str, QuerySet[Any]]:
    """What each model select offers: everything, or for an annotator (``annotator_id``) only
    the runs, task sets and students of the dialogues in their queues, and themselves."""
    querysets = {name: _choice_queryset(name) for name in DialogueFilterForm.MODEL_SELECTS}
    if annotator_id is None:
        return querysets
    queued = queued_for(annotator_id=annotator_id)

    def held(field: str) -> QuerySet[Any]:
        held_ids: QuerySet[Any] = queued.values(f"dialogue__{field}")
        return held_ids

    return {
        "run": querysets["run"].filter(pk__in=held("run_id")),
        "task_set": querysets["task_set"].filter(pk__in=held("task__task_set_id")),
        "student": querysets["student"].filter(pk__in=held("run__student_id")),
        "annotator": querysets["annotator"].filter(pk=annotator_id),
    }


@functools.cache
def _filter_options_sql(vendor: str, *, for_annotator: bool) -> tuple[str, tuple[Any, ...]]:
    """The UNION ALL that ``read_filter_options`` runs, compiled once per process (and kind of
    database, and for researchers or any annotator): the ORM took longer to compile it (1.3 ms)
    than the database to run it."""
    querysets = _option_querysets(READER_MARKER if for_annotator else None)
    union = _numbered(querysets["run"], "run", "name", Value(0)).union(
        _numbered(querysets["task_set"], "task_set", "name", F("version")),
        _numbered(querysets["student"], "student", "name", Value(0)),
        _numbered(querysets["annotator"], "annotator", "username", Value(0)),
        all=True,
    )
    sql, params = union.query.sql_with_params()
    return sql, tuple(params)


def read_filter_options(*, reader: User | None = None) -> dict[str, list[Any]]:
    """The options of the transcript filters' four model selects (run, task_set, student,
    annotator) in one query, a UNION ALL: four queries of their own cost a sixth of a list
    page. Each keeps its field's order; the options are instances with their pk and the fields
    their labels show. An annotator (``reader``) is offered only what their queues hold, so the
    selects never name a run, task set or model they may not read."""
    annotator_id = bounding_annotator(reader)
    sql, params = _filter_options_sql(connection.vendor, for_annotator=annotator_id is not None)
    params = bind(params, {READER_MARKER: annotator_id})
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    instances: dict[str, Callable[[int, str, int], Any]] = {
        "run": lambda pk, text, number: Run.from_db(None, ["id", "name"], [pk, text]),
        "task_set": lambda pk, text, number: TaskSet.from_db(
            None, ["id", "name", "version"], [pk, text, number]
        ),
        "student": lambda pk, text, number: ModelSpec.from_db(None, ["id", "name"], [pk, text]),
        "annotator": lambda pk, text, number: User.from_db(None, ["id", "username"], [pk, text]),
    }
    options: dict[str, list[Any]] = {select: [] for select in instances}
    for select, _place, pk, text, number in sorted(rows, key=lambda row: (row[0], row[1])):
        options[select].append(instances[select](pk, text, number))
    return options


def _choice_labels(field: forms.ChoiceField) -> dict[Any, Any]:
    """A choice field's labels by value (the filter's choices are flat: no groups)."""
    return dict(cast("Iterable[tuple[Any, Any]]", field.choices))


class RunChoiceField(ListedModelChoiceField):
    def label_from_instance(self, obj: Run) -> str:
        return f"#{obj.pk} {obj.name}"


def _yes_no(value: str) -> bool | None:
    return {"yes": True, "no": False}.get(value)


class LabelMatchField(forms.CharField):
    """``key=value``, ``key!=value`` or a comparison (``key>=4``); yes/no become booleans and
    whole numbers numbers, as labels store them (see ``filters.LabelMatch``)."""

    PATTERN = re.compile(
        r"^\s*(?P<key>[^=!<>\s]+)\s*(?P<op>"
        + "|".join(re.escape(op) for op in LABEL_OPERATORS)
        + r")\s*(?P<value>.+?)\s*$"
    )

    def to_python(self, value: Any) -> LabelMatch | None:  # type: ignore[override]
        text = (super().to_python(value) or "").strip()
        if not text:
            return None
        match = self.PATTERN.match(text)
        if not match:
            raise forms.ValidationError(
                "Write a label as question=value (or !=, >=, >, <=, <), e.g. helpfulness>=4 "
                "or reveals_answer!=yes."
            )
        raw, op = match["value"], match["op"]
        parsed: bool | int | str = raw
        if raw.lower() in ("yes", "no"):
            parsed = raw.lower() == "yes"
        elif re.fullmatch(r"-?\d+", raw):
            parsed = int(raw)
        if op in COMPARISONS and (isinstance(parsed, bool) or not isinstance(parsed, int)):
            raise forms.ValidationError(f"{op} compares ratings: write a whole number after it.")
        return LabelMatch(key=match["key"], value=parsed, op=op)


class AgreementField(forms.CharField):
    """``helpfulness``: annotators agree on it; ``!helpfulness``: they disagree."""

    def to_python(self, value: Any) -> tuple[str, bool] | None:  # type: ignore[override]
        text = (super().to_python(value) or "").strip()
        if not text:
            return None
        key = text.removeprefix("!").strip()
        if not re.fullmatch(r"[-\w]+", key):
            raise forms.ValidationError(
                "Write a label question's key (annotators agree) or !key (they disagree)."
            )
        return key, not text.startswith("!")


# The transcript list's typed filters update the list as one types (dialogue_list.html's
# hx-trigger listens to this class), not only on leaving the box.
AS_YOU_TYPE = {"class": "as-you-type"}


def _known_question_key(key: str) -> None:
    """A key no label question has matches nothing: say so, as for any other bad value, rather
    than list no transcript (a typo, ``helpfulnes``, looked like a filter that matched none)."""
    if LabelQuestion.objects.filter(key=key).exists():
        return
    keys = sorted(set(LabelQuestion.objects.values_list("key", flat=True)))
    known = f"the keys are {', '.join(keys)}" if keys else "there are no label questions yet"
    raise forms.ValidationError(f"no label question has the key {key!r} ({known}).")


class DialogueFilterForm(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=200,
        label="Search turns",
        widget=forms.TextInput(
            attrs={**AS_YOU_TYPE, "type": "search", "placeholder": "words in any turn"}
        ),
    )
    run = RunChoiceField(queryset=Run.objects.only("pk", "name"), required=False, label="Run")
    task_set = ListedModelChoiceField(
        queryset=TaskSet.objects.only("pk", "name", "version"),
        required=False,
        label="Task set",
    )
    task = forms.IntegerField(
        required=False,
        min_value=1,
        label="Task id",
        widget=forms.NumberInput(attrs={**AS_YOU_TYPE, "size": 6}),
    )
    student = ListedModelChoiceField(
        queryset=ModelSpec.objects.filter(Exists(Run.objects.filter(student=OuterRef("pk"))))
        .only("pk", "name")
        .order_by("name"),
        required=False,
        label="Student model",
    )
    outcome = FixedChoiceField(
        choices=[("", "any"), *Dialogue.Outcome.choices],
        required=False,
        label="Outcome",
    )
    end_reason = FixedChoiceField(
        choices=[("", "any"), *Dialogue.EndReason.choices],
        required=False,
        label="How it ended",
    )
    first_correct = IntRangeField(
        required=False,
        label="First correct turn",
        widget=forms.TextInput(attrs={**AS_YOU_TYPE, "placeholder": "2, 2-4, 3+", "size": 6}),
    )
    turns = IntRangeField(
        required=False,
        label="Turns",
        widget=forms.TextInput(attrs={**AS_YOU_TYPE, "placeholder": "5, 1-3", "size": 6}),
    )
    step = IntRangeField(
        required=False,
        label="Training step",
        help_text="Online training's stored rollouts: the optimizer step they were played at.",
        widget=forms.TextInput(attrs={**AS_YOU_TYPE, "placeholder": "200, 1-50", "size": 6}),
    )
    leak = FixedChoiceField(choices=YES_NO_ANY, required=False, label="Teacher leak flagged")
    teacher = FixedChoiceField(
        choices=[("", "any"), ("person", "a person"), ("model", "a model")],
        required=False,
        label="Teacher",
        help_text="Who played the teacher: a person (in the browser) or a model.",
    )
    changed = FixedChoiceField(
        choices=YES_NO_ANY,
        required=False,
        label="Changed its answer after feedback",
    )
    has = FixedMultipleChoiceField(
        choices=Turn.Kind.choices,
        required=False,
        label="Has a turn of kind",
        widget=forms.CheckboxSelectMultiple,
    )
    labelled = FixedChoiceField(choices=YES_NO_ANY, required=False, label="Labelled")
    label = LabelMatchField(
        required=False,
        label="Label",
        widget=forms.TextInput(
            attrs={**AS_YOU_TYPE, "placeholder": "helpfulness>=4, reveals_answer!=yes"}
        ),
    )
    agree = AgreementField(
        required=False,
        label="Annotators agree on",
        widget=forms.TextInput(
            attrs={**AS_YOU_TYPE, "placeholder": "reveals_answer, or !key: they disagree"}
        ),
    )
    annotator = ListedModelChoiceField(
        queryset=User.objects.filter(
            Exists(QueueAssignment.objects.filter(annotator=OuterRef("pk")))
        )
        .only("pk", "username")
        .order_by("username"),
        required=False,
        label="Assigned annotator",
    )
    sort = FixedChoiceField(
        # The default comes first, so an untouched form submits the order the page shows.
        choices=sorted(
            (
                (f"{sign}{key}", f"{sort.label} {'↓' if sign else '↑'}")
                for key, sort in SORTS.items()
                for sign in ("", "-")
            ),
            key=lambda choice: choice[0] != DEFAULT_SORT,
        ),
        required=False,
        label="Sort by",
    )

    MODEL_SELECTS = ("run", "task_set", "student", "annotator")

    def __init__(self, *args: Any, reader: User | None = None, **kwargs: Any) -> None:
        """``reader``: the person the form is shown to; an annotator's selects offer only what
        their queues hold (``None``: everything, for researchers' tools and internal use)."""
        super().__init__(*args, **kwargs)
        self.reader = reader
        for name in self.MODEL_SELECTS:
            field = self.fields[name]
            field.load_options = functools.partial(self._model_options, name)  # type: ignore[attr-defined]

    @functools.cached_property
    def _all_model_options(self) -> dict[str, list[Any]]:
        """Read once, when a select is validated or drawn: an export or a queue reads none."""
        return read_filter_options(reader=self.reader)

    def _model_options(self, name: str) -> list[Any]:
        return self._all_model_options[name]

    @classmethod
    def from_query(cls, query: Any, *, reader: User | None = None) -> DialogueFilterForm:
        form = cls(query, reader=reader)
        form.is_valid()  # fills cleaned_data with the fields that are valid
        return form

    @property
    def notes(self) -> list[str]:
        """One readable line per ignored parameter."""
        return [
            f"Ignored {name}={self.data.get(name, '')!r}: {' '.join(map(str, errors))}"
            for name, errors in self.errors.items()
        ]

    @property
    def chips(self) -> list[tuple[str, str]]:
        """The filter in words, one (label, value) per field it sets (``Run``: ``#2 baseline``,
        ``Turns``: ``4+``), for pages that show a stored filter rather than its query string."""
        shown: list[tuple[str, str]] = []
        for name, field in self.fields.items():
            value = self.cleaned_data.get(name)
            if name == "sort" or value in (None, "", [], ()):
                continue
            if isinstance(field, forms.ModelChoiceField):
                text = field.label_from_instance(value)
            elif isinstance(field, forms.MultipleChoiceField):
                choices = _choice_labels(field)
                text = ", ".join(str(choices.get(item, item)).lower() for item in value)
            elif isinstance(field, forms.ChoiceField):
                text = str(_choice_labels(field).get(value, value))
            else:  # as typed: "4+", "helpfulness>=4", "!correct", the search's words
                text = str(self.data.get(name, value)).strip()
            shown.append((str(field.label), text))
        return shown

    def clean_label(self) -> LabelMatch | None:
        match: LabelMatch | None = self.cleaned_data.get("label")
        if match is not None:
            _known_question_key(match.key)
        return match

    def clean_agree(self) -> tuple[str, bool] | None:
        agreement: tuple[str, bool] | None = self.cleaned_data.get("agree")
        if agreement is not None:
            _known_question_key(agreement[0])
        return agreement

    def filters(self) -> DialogueFilters:
        data = self.cleaned_data
        run, task_set, student = data.get("run"), data.get("task_set"), data.get("student")
        return DialogueFilters(
            run_id=run.pk if run else None,
            task_set_id=task_set.pk if task_set else None,
            task_id=data.get("task"),
            student_id=student.pk if student else None,
            outcome=data.get("outcome") or "",
            end_reason=data.get("end_reason") or "",
            first_correct_turn=data.get("first_correct"),
            num_turns=data.get("turns"),
            training_step=data.get("step"),
            leaked=_yes_no(data.get("leak") or ""),
            taught_by_person={"person": True, "model": False}.get(data.get("teacher") or ""),
            turn_kinds=tuple(data.get("has") or ()),
            changed_answer=_yes_no(data.get("changed") or ""),
            search=(data.get("q") or "").strip(),
            labelled=_yes_no(data.get("labelled") or ""),
            label=data.get("label"),
            agreement=data.get("agree"),
            annotator_id=data["annotator"].pk if data.get("annotator") else None,
            sort=data.get("sort") or DEFAULT_SORT,
        )


class CompareForm(forms.Form):
    """``/dialogues/compare/?task=&left_run=&right_run=&sample=&right_sample=``.

    ``right_sample`` (default: ``sample``) sets another sample of the right run beside the
    left one, for runs that did not play the same samples. The transcript list's filter is
    read too (its "Compare runs" link carries it): its ``run`` is the left run unless
    ``left_run`` says otherwise, and its ``task`` the task."""

    task = forms.ModelChoiceField(queryset=Task.objects.all(), required=False)
    left_run = RunChoiceField(queryset=Run.objects.only("pk", "name"), required=False)
    right_run = RunChoiceField(queryset=Run.objects.only("pk", "name"), required=False)
    sample = forms.IntegerField(required=False, min_value=0)
    right_sample = forms.IntegerField(required=False, min_value=0)

    def __init__(self, *args: Any, reader: User | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if (annotator_id := bounding_annotator(reader)) is not None:
            # An annotator compares within their queues: another task or run is ignored like an
            # unknown one, so that its prompt or name never reaches the page.
            queued = queued_for(annotator_id=annotator_id)
            self._offer("task", Task.objects.filter(pk__in=queued.values("dialogue__task_id")))
            runs = Run.objects.only("pk", "name").filter(pk__in=queued.values("dialogue__run_id"))
            self._offer("left_run", runs)
            self._offer("right_run", runs)

    def _offer(self, name: str, queryset: QuerySet[Any]) -> None:
        field = self.fields[name]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = queryset

    @classmethod
    def from_query(cls, query: Any, *, reader: User | None = None) -> CompareForm:
        if not query.get("left_run") and query.get("run"):
            query = query.copy()
            query["left_run"] = query["run"]  # the transcript list's run filter
        form = cls(query, reader=reader)
        form.is_valid()
        return form

    @property
    def notes(self) -> list[str]:
        return [
            f"Ignored {name}={self.data.get(name, '')!r}: {' '.join(map(str, errors))}"
            for name, errors in self.errors.items()
        ]
