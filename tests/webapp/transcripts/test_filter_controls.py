"""The transcript filters' controls, written by a Jinja2 fragment from the bound form
(``templates/jinja2/transcripts/transcript_filters.html``): the markup Django's widgets write."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.http import QueryDict
from django.test.html import parse_html

from tests.factories import StudentFactory, TaskSetFactory
from tests.transcript_builders import make_run
from webapp.core.fragments import render_fragment
from webapp.transcripts.forms import DialogueFilterForm

pytestmark = pytest.mark.django_db


def rendered(form: DialogueFilterForm, fields: list[Any]) -> str:
    return render_fragment(
        "transcripts/transcript_filters.html",
        {"search": form["q"], "kinds": form["has"], "fields": fields},
    )


def control(html: str, name: str) -> str:
    """The select or input named ``name`` in ``html``."""
    pattern = rf'<select[^>]* name="{name}".*?</select>|<input[^>]* name="{name}"[^>]*>'
    match = re.search(pattern, html, re.DOTALL)
    assert match, f"no control named {name}"
    return match.group(0)


@pytest.mark.parametrize(
    "query",
    [
        "",
        "q=say+%22%3Chi%3E%22&outcome=solved&task=3&turns=2-4&leak=no&sort=-created",
        "outcome=nonsense&task=x&label=%22%3E%3Cb%3Ex&labelled=yes",
    ],
)
def test_controls_are_the_markup_of_djangos_widgets(query: str) -> None:
    run = make_run("<second>", TaskSetFactory(name="set & co"), StudentFactory(name='"amy"'))
    form = DialogueFilterForm.from_query(QueryDict(f"{query}&run={run.pk}"))
    html = rendered(form, [field for field in form if field.name not in ("q", "has")])
    for field in form:
        if field.name != "has":
            # Django points aria-describedby at an error under the field; the page lists
            # ignored values in its notes instead.
            django = re.sub(r' aria-describedby="[^"]*"', "", str(field))
            assert parse_html(control(html, field.name)) == parse_html(django), field.name
    assert "&lt;second&gt;" in control(html, "run")


def test_turn_kinds_are_checkboxes_that_keep_their_state() -> None:
    form = DialogueFilterForm.from_query(QueryDict("has=question&has=shard"))
    html = rendered(form, [])
    checked = re.findall(
        r'<input type="checkbox" name="has" value="(\w+)" id="id_has_\d+" checked>', html
    )
    assert checked == ["question", "shard"]
    assert html.count('type="checkbox"') == len(form.fields["has"].choices)


def test_model_selects_read_their_options_in_one_query() -> None:
    """Runs and task sets newest first, students and annotators by name; only students with
    a run and annotators with a queue item are offered."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.factories import StudentFactory, TaskFactory, UserFactory
    from tests.transcript_builders import attempt, store
    from webapp.annotations.models import LabelQueue, LabelSchema, QueueAssignment
    from webapp.transcripts.forms import DialogueFilterForm

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


def test_a_forms_copy_of_a_field_leaves_the_class_field_as_it_was() -> None:
    """The filter forms' fields share their choices between copies (forms.SharesItsChoices): a
    form that narrows a copy's queryset (an annotator's compare form) narrows only its own."""
    from tests.factories import UserFactory
    from webapp.transcripts.forms import CompareForm

    annotator = UserFactory(role="annotator")
    base_runs = CompareForm.base_fields["left_run"].queryset  # type: ignore[attr-defined]
    narrowed = CompareForm({}, reader=annotator)
    assert narrowed.fields["left_run"].queryset is not base_runs  # type: ignore[attr-defined]
    assert CompareForm.base_fields["left_run"].queryset is base_runs  # type: ignore[attr-defined]
    assert CompareForm({}).fields["left_run"].queryset.query.where == base_runs.query.where  # type: ignore[attr-defined]
    assert DialogueFilterForm().fields["outcome"].choices == (
        DialogueFilterForm.base_fields["outcome"].choices  # type: ignore[attr-defined]
    )


def test_each_forms_model_select_reads_the_rows_of_its_own_time() -> None:
    """A form's copy of a model select has a queryset of its own: one shared with the class
    would keep the rows the first form read (a run made since would be refused)."""
    from webapp.transcripts.forms import CompareForm

    task_set = TaskSetFactory()
    first = make_run("first", task_set)
    assert CompareForm({"left_run": first.pk}).is_valid()
    second = make_run("second", task_set)
    form = CompareForm({"left_run": second.pk})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["left_run"] == second
