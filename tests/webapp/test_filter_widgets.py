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
