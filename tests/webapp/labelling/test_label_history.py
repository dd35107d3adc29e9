"""The label history says yes/no as the labelling page does, and the labelling page's keys
mean one thing each (n is "no", never also "next item")."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.factories import TaskFactory, TaskSetFactory, UserFactory
from tests.transcript_builders import attempt, feedback, make_run, store
from webapp.annotations import services
from webapp.annotations.models import LabelSchema, QueueAssignment
from webapp.annotations.templatetags.labels import answer
from webapp.dialogues.models import Dialogue

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue(researcher):  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    run = make_run("run", task_set)
    for _ in range(2):
        store(run, TaskFactory(task_set=task_set).pk, 0, "a_late", [
            attempt("It is 4.", "4", False), feedback("Check the carry."),
            attempt("It is 3.", "3", True),
        ])  # fmt: skip
    annotator = UserFactory(role="annotator", username="ada")
    return services.queue_create(
        name="q", schema=LabelSchema.objects.get(name="Feedback quality"), filter_query="",
        dialogue_ids=list(Dialogue.objects.order_by("pk").values_list("pk", flat=True)),
        annotators=[annotator], annotators_per_item=1, created_by=researcher,
    )  # fmt: skip


def test_the_history_says_yes_and_no(researcher_client, queue) -> None:  # type: ignore[no-untyped-def]
    dialogue = Dialogue.objects.order_by("pk").first()
    assert dialogue is not None
    correct = queue.schema.questions.get(key="correct")  # a yes/no question
    ada = UserFactory._meta.model.objects.get(username="ada")
    turn = dialogue.turns.get(role="teacher")
    for value in (True, False):
        services.annotation_save(question=correct, dialogue=dialogue, turn=turn, author=ada,
                                 value=value)  # fmt: skip
    page = researcher_client.get(reverse("item_history", args=[queue.pk, dialogue.pk]))
    table = page.content.decode().split('id="item-labels"')[1].split("</table>")[0]
    assert '<td class="label-answer"><code>no</code>' in table
    assert "<code>∅</code> → <code>yes</code>" in table
    assert "<code>yes</code> → <code>no</code>" in table
    assert "True" not in table and "False" not in table


def test_answers_read_as_the_labelling_page_words_them() -> None:
    assert [answer(value) for value in (True, False, None, 4, "clear")] == [
        "yes", "no", "∅", "4", "clear",
    ]  # fmt: skip
    assert answer(["hint", "answer"]) == "answer, hint" and answer([]) == "(none)"


def keys_of_help(page: str) -> dict[str, list[str]]:
    """Each key of the labelling page's key help, with what each row says it does."""
    table = page.split('id="help-overlay"')[1].split("</table>")[0]
    meanings: dict[str, list[str]] = {}
    for keys, meaning in re.findall(r"<tr[^>]*><td>(.*?)</td><td>(.*?)</td></tr>", table):
        for key in re.findall(r"<kbd>(.*?)</kbd>", keys):
            meanings.setdefault(key, []).append(meaning)
    return meanings


def test_each_key_of_the_labelling_page_means_one_thing(client, queue) -> None:  # type: ignore[no-untyped-def]
    first, second = QueueAssignment.objects.filter(queue=queue).order_by("position")
    client.force_login(first.annotator)
    page = client.get(reverse("item_label", args=[second.pk])).content.decode()
    meanings = keys_of_help(page)
    assert meanings["n"] == ["yes / no, on a yes/no question"]
    assert meanings["]"] == meanings["["] == ["next / previous item"]
    assert "p" not in meanings
    assert re.search(r'id="next-item"[^>]*>Next <kbd>\]</kbd>', page) is None  # on the last item
    assert re.search(r'id="previous-item"[^>]*>← Previous <kbd>\[</kbd>', page)
    page = client.get(reverse("item_label", args=[first.pk])).content.decode()
    assert re.search(r'id="next-item"[^>]*>Next <kbd>\]</kbd>', page)
