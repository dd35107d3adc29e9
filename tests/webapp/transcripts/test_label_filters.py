"""Filtering transcripts by their labels: labelled or not, a label's value, the assigned
annotator; and an annotator's label filters see only their own labels (blind labelling)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import UserFactory
from webapp.annotations.models import LabelQuestion
from webapp.annotations.services import annotation_save, queue_create
from webapp.dialogues.models import Dialogue

pytestmark = pytest.mark.django_db


def listed(client: Any, **params: Any) -> set[int]:
    response = client.get(reverse("dialogue_list"), params)
    assert response.status_code == 200
    return {dialogue.pk for dialogue in response.context["page"]}


@pytest.fixture
def labelled(corpus: Any, researcher: Any, annotator: Any) -> dict[str, Any]:
    """Two dialogues queued for ``annotator`` and a second annotator; each gives a different
    helpfulness to the first teacher turn of the first dialogue."""
    other = UserFactory(role="annotator")
    first, second = Dialogue.objects.filter(turns__role="teacher").distinct().order_by("pk")[:2]
    question = LabelQuestion.objects.get(key="helpfulness")
    queue_create(
        name="q", schema=question.schema, filter_query="", dialogue_ids=[first.pk, second.pk],
        annotators=[annotator, other], annotators_per_item=2, created_by=researcher,
    )  # fmt: skip
    turn = first.turns.filter(role="teacher").first()
    annotation_save(question=question, dialogue=first, turn=turn, author=annotator, value=5,
                    draft=False)  # fmt: skip
    annotation_save(question=question, dialogue=first, turn=turn, author=other, value=2,
                    draft=False)  # fmt: skip
    annotation_save(question=question, dialogue=second, turn=second.turns.filter(role="teacher")
                    .first(), author=other, value=4)  # a draft: never counts  # fmt: skip
    return {"first": first, "second": second, "other": other}


def test_researchers_filter_by_labels_and_annotator(researcher_client: Any, labelled: Any) -> None:
    first, second = labelled["first"].pk, labelled["second"].pk
    assert listed(researcher_client, labelled="yes") == {first}
    assert second in listed(researcher_client, labelled="no")
    assert listed(researcher_client, label="helpfulness=5") == {first}
    assert listed(researcher_client, label="helpfulness=2") == {first}
    assert listed(researcher_client, label="helpfulness=4") == set(), "drafts do not count"
    assert listed(researcher_client, annotator=labelled["other"].pk) == {first, second}


def test_labels_select_by_range_and_by_absence(researcher_client: Any, labelled: Any) -> None:
    """helpfulness is a rating scale: first has labels 5 and 2; second only a draft."""
    first, second = labelled["first"].pk, labelled["second"].pk
    everyone = set(Dialogue.objects.values_list("pk", flat=True))
    assert listed(researcher_client, label="helpfulness>=4") == {first}
    assert listed(researcher_client, label="helpfulness>5") == set()
    assert listed(researcher_client, label="helpfulness<3") == {first}
    assert listed(researcher_client, label="helpfulness <= 1") == set()
    # "Not marked": no submitted label has the value (unlabelled dialogues included).
    assert listed(researcher_client, label="helpfulness!=5") == everyone - {first}
    assert second in listed(researcher_client, label="helpfulness!=4"), "drafts do not count"
    refused = researcher_client.get(reverse("dialogue_list"), {"label": "helpfulness>=yes"})
    assert "&gt;= compares ratings: write a whole number" in refused.content.decode()


def test_researchers_select_by_annotator_agreement(
    researcher_client: Any, annotator: Any, labelled: Any
) -> None:
    first = labelled["first"]
    assert listed(researcher_client, agree="!helpfulness") == {first.pk}  # 5 against 2
    assert listed(researcher_client, agree="helpfulness") == set()
    turn = first.turns.filter(role="teacher").first()
    question = LabelQuestion.objects.get(key="helpfulness")
    annotation_save(question=question, dialogue=first, turn=turn, author=labelled["other"],
                    value=5, draft=False)  # fmt: skip
    assert listed(researcher_client, agree="helpfulness") == {first.pk}
    assert listed(researcher_client, agree="!helpfulness") == set()
    # An annotator sees only their own labels: agreement is never theirs to filter by.
    annotator_client = Client()
    annotator_client.force_login(annotator)
    assert listed(annotator_client, agree="helpfulness") == set()
    assert 'name="agree"' not in annotator_client.get(reverse("dialogue_list")).content.decode()


def test_an_annotators_label_filters_see_only_their_own_labels(
    annotator_client: Any, labelled: Any
) -> None:
    first = labelled["first"].pk
    assert listed(annotator_client, label="helpfulness=5") == {first}
    assert listed(annotator_client, label="helpfulness=2") == set(), "another's label stays hidden"
    page = annotator_client.get(reverse("dialogue_list")).content.decode()
    assert 'name="annotator"' not in page


@pytest.mark.usefixtures("corpus")
def test_a_malformed_label_filter_is_ignored_with_a_note(researcher_client: Any) -> None:
    response = researcher_client.get(reverse("dialogue_list"), {"label": "helpfulness"})
    assert "Write a label as question=value" in response.content.decode()
    assert len(response.context["page"]) == Dialogue.objects.count()


@pytest.mark.usefixtures("corpus")
def test_an_unknown_question_key_is_ignored_with_a_note(researcher_client: Any) -> None:
    """``agree=helpfulnes`` (a typo) listed no transcript and said nothing (issue 33)."""
    every = Dialogue.objects.count()
    for params, name in (({"agree": "helpfulnes"}, "agree"), ({"label": "helpfulnes>=4"}, "label")):
        response = researcher_client.get(reverse("dialogue_list"), params)
        page = response.content.decode()
        assert f"Ignored {name}=" in page and "no label question has the key" in page
        assert "helpfulness" in page.split("no label question has the key")[1], "the keys known"
        assert len(response.context["page"]) == every
    # A known key still filters (none of the corpus is labelled: nothing agrees).
    assert listed(researcher_client, agree="helpfulness") == set()


def test_one_transcript_matches(researcher_client: Any, corpus: Any) -> None:
    one = researcher_client.get(
        reverse("dialogue_list"), {"run": corpus["run_b"].pk, "outcome": "solved"}
    )
    assert "1 transcript matches these filters." in one.content.decode()
    two = researcher_client.get(reverse("dialogue_list"), {"run": corpus["run_b"].pk})
    assert "2 transcripts match these filters." in two.content.decode()
