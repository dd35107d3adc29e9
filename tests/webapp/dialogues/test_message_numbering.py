"""One numbering of messages (issue 27): the same message carries the same name, "Teacher ·
turn 2 · message #4", on every page and the same numbers in exports, and every link to it
carries its anchor, ``#message-4`` (the old ``#turn-<index>`` still lands on it)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory, UserFactory, frozen_run
from tests.transcript_builders import attempt, feedback
from tests.webapp.forks.builders import stored
from webapp.annotations import services
from webapp.annotations.models import Annotation, LabelSchema, QueueAssignment
from webapp.dialogues.models import Dialogue, Turn
from webapp.dialogues.numbering import MessageRef
from webapp.transcripts import exporting

pytestmark = pytest.mark.django_db

LABEL = "Teacher · turn 2 · message #4"


def conversation() -> list[dict[str, Any]]:
    """Messages #1–#5; #4 is the teacher's feedback of turn 2 (index 3)."""
    return [
        attempt("It is 4.", "4", False), feedback("Check the carry."),
        attempt("It is 5.", "5", False), feedback("Closer: check the units."),
        attempt("It is 3.", "3", True),
    ]  # fmt: skip


@pytest.fixture
def world(researcher) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    task = TaskFactory(task_set=task_set)
    protocol = ProtocolFactory(max_turns=4)
    run = frozen_run(name="parents", task_set=task_set, protocol=protocol)
    other_run = frozen_run(name="others", task_set=task_set, protocol=protocol)
    dialogue = stored(run, task.pk, 0, conversation())
    other = stored(other_run, task.pk, 0, conversation())
    fork = stored(other_run, task.pk, 1, [*conversation()[:4], attempt("3", "3", True)],
                  parent=dialogue, fork_turns=4)  # fmt: skip
    message = dialogue.turns.get(index=3)
    ann, bob = (UserFactory(username=name, role="annotator") for name in ("ann", "bob"))
    queue = services.queue_create(
        name="q", schema=LabelSchema.objects.get(name="Feedback quality"), filter_query="",
        dialogue_ids=[dialogue.pk], annotators=[ann, bob], annotators_per_item=2,
        created_by=researcher,
    )  # fmt: skip
    helpfulness = queue.schema.questions.get(key="helpfulness")
    for author, value in ((ann, 2), (bob, 5)):
        Annotation.objects.create(question=helpfulness, dialogue=dialogue, turn=message,
                                  author=author, value=value)  # fmt: skip
    return {"dialogue": dialogue, "other": other, "fork": fork, "message": message,
            "queue": queue, "ann": ann, "run": run, "other_run": other_run, "task": task,
            "url": f"/dialogues/{dialogue.pk}/#message-4"}  # fmt: skip


def text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def message_refs(html: str) -> list[tuple[str, str]]:
    """Every (href, label) of the shared message partial on a page."""
    return re.findall(r'<a class="message-ref" href="([^"]*)">([^<]*)</a>', html)


def test_the_numbering_is_defined_once(world) -> None:  # type: ignore[no-untyped-def]
    message: Turn = world["message"]
    assert (message.index, message.round, message.message_number) == (3, 2, 4)
    assert message.message_anchor == "message-4" and message.legacy_anchor == "turn-3"
    assert message.message_label == LABEL
    assert message.message_ref.url == world["url"]
    assert MessageRef(dialogue_id=7, index=0).label == "message #1"


def test_the_dialogue_page(researcher_client, world) -> None:  # type: ignore[no-untyped-def]
    page = researcher_client.get(reverse("dialogue_detail", args=[world["dialogue"].pk]))
    html = page.content.decode()
    item = html.split('id="message-4"')[1].split("</li>")[0]
    # The old anchor is inside the same message, so old links land on it too.
    assert item.startswith('><span class="legacy-anchor" id="turn-3"></span>')
    assert ("#message-4", LABEL) in message_refs(item)
    labels = [label for _, label in message_refs(html)]
    assert labels == [
        "Student · turn 1 · message #1", "Teacher · turn 1 · message #2",
        "Student · turn 2 · message #3", LABEL, "Student · turn 3 · message #5",
    ]  # fmt: skip


def test_the_labelling_item(client, world) -> None:  # type: ignore[no-untyped-def]
    item = QueueAssignment.objects.get(annotator=world["ann"])
    client.force_login(world["ann"])
    html = client.get(reverse("item_label", args=[item.pk])).content.decode()
    stop = html.split('<section class="stop labelable" id="message-4"')[1].split("</section>")[0]
    assert ("#message-4", LABEL) in message_refs(stop)
    # Without JavaScript, saving an answer comes back to the message.
    helpfulness = item.queue.schema.questions.get(key="helpfulness")
    response = client.post(reverse("item_answer", args=[item.pk]), {
        "question": helpfulness.pk, "turn": world["message"].pk, "value": "3", "nonce": "n",
    })  # fmt: skip
    assert response["Location"].endswith("#message-4")


def test_the_labels_history(researcher_client, world) -> None:  # type: ignore[no-untyped-def]
    url = reverse("item_history", args=[world["queue"].pk, world["dialogue"].pk])
    html = researcher_client.get(url).content.decode()
    table = html.split('id="item-labels"')[1].split("</table>")[0]
    assert message_refs(table) == [(world["url"], LABEL)] * 2


def test_the_agreement_disagreements(researcher_client, world) -> None:  # type: ignore[no-untyped-def]
    schema = world["queue"].schema
    helpfulness = schema.questions.get(key="helpfulness")
    url = reverse("agreement_disagreements", args=[schema.pk, helpfulness.pk])
    html = researcher_client.get(url, headers={"HX-Request": "true"}).content.decode()
    dialogue = world["dialogue"].pk
    assert message_refs(html) == [(world["url"], f"dialogue #{dialogue} · {LABEL}")]


def test_the_dialogue_compare_page(researcher_client, world) -> None:  # type: ignore[no-untyped-def]
    url = reverse("dialogue_compare") + (
        f"?task={world['task'].pk}&left_run={world['run'].pk}&right_run={world['other_run'].pk}"
    )
    html = researcher_client.get(url).content.decode()
    row = html.split('id="round-2"')[1].split("</tr>")[0]
    other = world["other"].pk
    assert message_refs(row) == [
        (f"/dialogues/{world['dialogue'].pk}/#message-3", "Student · turn 2 · message #3"),
        (world["url"], LABEL),
        (f"/dialogues/{other}/#message-3", "Student · turn 2 · message #3"),
        (f"/dialogues/{other}/#message-4", LABEL),
    ]


def test_the_fork_pages(researcher_client, world) -> None:  # type: ignore[no-untyped-def]
    """A fork that kept messages #1–#4: "forked after turn 2 · message #4", linked there."""
    fork = world["fork"]
    panel = researcher_client.get(reverse("fork_panel", args=[fork.pk]))
    node = panel.content.decode().split(f'id="branch-{fork.pk}"')[1].split("</li>")[0]
    assert "forked after" in text(node)
    assert message_refs(node) == [(world["url"], "turn 2 · message #4")]
    compare = reverse("fork_compare") + f"?a={world['dialogue'].pk}&b={fork.pk}"
    html = researcher_client.get(compare).content.decode()
    assert f'kept messages #1–<a href="{world["url"]}">#4</a> of dialogue #' in html
    # The shared messages are named as on the dialogue page.
    shared = html.split('id="shared-turns"')[1].split("</tr>")[0]
    assert (world["url"], LABEL) in message_refs(shared)


def test_exports_carry_the_same_numbers(world) -> None:  # type: ignore[no-untyped-def]
    filters = exporting.filters_from_query(f"run={world['run'].pk}")
    [record] = exporting.dialogue_records(filters=filters)
    turn = record["turns"][3]
    assert (turn["index"], turn["message_number"], turn["round"], turn["role"]) == (
        3, 4, 2, "teacher",
    )  # fmt: skip
    assert [t["message_number"] for t in record["turns"]] == [1, 2, 3, 4, 5]
    assert {label["value"] for label in turn["labels"]} == {2, 5}
    assert Dialogue.objects.get(pk=record["id"]).turns.get(index=3).message_label == LABEL
