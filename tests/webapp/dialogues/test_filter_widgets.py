"""The transcript filters' Python-written widgets write what Django's templates write."""

from __future__ import annotations

from typing import Any

import pytest
from django import forms
from django.test.html import parse_html

from tests.factories import TaskSetFactory
from tests.transcript_builders import make_run
from webapp.dialogues.widgets import QuickNumberInput, QuickSelect, QuickTextInput
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db

CHOICES = [("", "any"), ("yes", "yes <b>"), ("no", 'no "quoted"')]


def both(
    field: type[forms.Field], quick: type[forms.Widget], data: dict[str, Any], **options: Any
) -> tuple[str, str]:
    """The field rendered in a bound form with Django's widget and with ours."""

    def rendered(widget: type[forms.Widget] | None) -> str:
        form = type("F", (forms.Form,), {"f": field(required=False, widget=widget, **options)})
        return str(form(data)["f"])

    return rendered(None), rendered(quick)


@pytest.mark.parametrize("value", ["", "yes", "no", "nonsense", None])
def test_select_matches_django(value: str | None) -> None:
    django_html, quick_html = both(forms.ChoiceField, QuickSelect, {"f": value}, choices=CHOICES)
    assert parse_html(quick_html) == parse_html(django_html)
    assert quick_html.count("<option") == len(CHOICES)


def test_model_select_matches_django() -> None:
    first, second = make_run("first", TaskSetFactory()), make_run("<second>", TaskSetFactory())
    for value in ["", str(first.pk), str(second.pk)]:
        django_html, quick_html = both(
            forms.ModelChoiceField, QuickSelect, {"f": value}, queryset=Run.objects.all()
        )
        assert parse_html(quick_html) == parse_html(django_html)
        assert "&lt;second&gt;" in quick_html


@pytest.mark.parametrize(
    ("field", "quick", "value"),
    [
        (forms.CharField, QuickTextInput, 'say "<hi>"'),
        (forms.CharField, QuickTextInput, ""),
        (forms.IntegerField, QuickNumberInput, "3"),
    ],
)
def test_inputs_match_django(
    field: type[forms.Field], quick: type[forms.Widget], value: str
) -> None:
    django_html, quick_html = both(field, quick, {"f": value})
    assert parse_html(quick_html) == parse_html(django_html)


def test_model_selects_read_their_options_in_one_query() -> None:
    """Runs and task sets newest first, students and annotators by name; only students with
    a run and annotators with a queue item are offered."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.factories import StudentFactory, TaskFactory, UserFactory
    from tests.transcript_builders import attempt, store
    from webapp.annotations.models import LabelQueue, LabelSchema, QueueAssignment
    from webapp.dialogues.forms import DialogueFilterForm

    older_set, newer_set = TaskSetFactory(name="older"), TaskSetFactory(name="newer", version=2)
    zed, amy = StudentFactory(name="zed"), StudentFactory(name="amy")
    StudentFactory(name="idle")  # no run
    first, second = make_run("first", older_set, zed), make_run("second", newer_set, amy)
    bo, al = UserFactory(username="bo", role="annotator"), UserFactory(username="al")
    UserFactory(username="nobody")  # no queue item
    queue = LabelQueue.objects.create(
        name="q", schema=LabelSchema.objects.create(name="s"), created_by=al
    )
    task = TaskFactory(task_set=older_set)
    store(first, task.pk, 0, "a_first", [attempt("3", "3", True)])
    for annotator in (bo, al):
        QueueAssignment.objects.create(
            queue=queue, dialogue=first.dialogues.get(), annotator=annotator, position=0
        )

    with CaptureQueriesContext(connection) as queries:
        form = DialogueFilterForm({"run": str(first.pk), "task_set": str(newer_set.pk)})
        assert form.is_valid(), form.errors
        html = "".join(str(form[name]) for name in DialogueFilterForm.MODEL_SELECTS)
    assert len(queries) == 1
    assert form.cleaned_data["run"] == first and form.cleaned_data["task_set"] == newer_set

    def labels(name: str) -> list[str]:
        return [label for _value, label in form.fields[name].choices][1:]

    assert labels("run") == [f"#{second.pk} second", f"#{first.pk} first"]
    assert labels("task_set") == ["newer (v2)", "older"]
    assert labels("student") == ["amy", "zed"]
    assert labels("annotator") == ["al", "bo"]
    assert f'<option value="{first.pk}" selected>' in html
    assert f'<option value="{newer_set.pk}" selected>' in html
