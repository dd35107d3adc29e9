"""Labelling: schemas, queues with balanced assignment, idempotent saves with history, blind
labelling, permissions on every view, and fixed query counts."""

from __future__ import annotations

import itertools
import re
import threading
from collections import Counter
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import TaskFactory, TaskSetFactory, UserFactory
from tests.transcript_builders import attempt, feedback, make_run, store
from webapp.accounts.models import User
from webapp.annotations import services
from webapp.annotations.defaults import ensure_default_schemas
from webapp.annotations.models import (
    Annotation,
    AnnotationRevision,
    LabelQuestion,
    LabelSchema,
    QueueAssignment,
)
from webapp.annotations.selectors import assignment_for, labelling_stops
from webapp.dialogues.models import Dialogue

pytestmark = pytest.mark.django_db


def feedback_schema() -> LabelSchema:
    return LabelSchema.objects.get(name="Feedback quality")


@pytest.fixture
def dialogues() -> list[Dialogue]:
    task_set = TaskSetFactory()
    run = make_run("run", task_set)
    for sample in range(4):
        task = TaskFactory(task_set=task_set)
        store(run, task.pk, 0, "a_late", [
            attempt("It is 4.", "4", False),
            feedback("Check the carry.", leak=sample == 0),
            attempt("It is 3." if sample else "Still 4.", "3", sample > 0),
        ])  # fmt: skip
    return list(Dialogue.objects.order_by("pk"))


def make_queue(researcher: User, annotators: list[User], dialogue_list: list[Dialogue], k: int):  # type: ignore[no-untyped-def]
    return services.queue_create(
        name="q", schema=feedback_schema(), filter_query="outcome=unsolved",
        dialogue_ids=[d.pk for d in dialogue_list], annotators=annotators,
        annotators_per_item=k, created_by=researcher,
    )  # fmt: skip


def test_default_schemas_exist_with_leak_prefill() -> None:
    questions = {q.key: q for q in feedback_schema().questions.all()}
    assert list(questions) == ["helpfulness", "correct", "reveals_answer", "feedback_kind"]
    assert questions["helpfulness"].scale == [1, 2, 3, 4, 5]
    assert questions["reveals_answer"].prefill == "leak_flag"
    assert len(questions["feedback_kind"].options) == 5
    student = LabelSchema.objects.get(name="Student behaviour").questions.all()
    assert {q.key for q in student} == {"premature_attempt", "useful_question", "used_feedback"}
    assert {q.target for q in student} == {"student_turn"}


@pytest.mark.parametrize(("annotators", "k"), [(2, 2), (3, 2), (5, 3), (4, 1)])
def test_assignment_gives_k_distinct_annotators_balanced(annotators: int, k: int) -> None:
    pairs = services.assign_balanced(
        dialogue_ids=list(range(10)), annotator_ids=list(range(100, 100 + annotators)), per_item=k
    )
    per_dialogue = Counter(d for d, _ in pairs)
    assert set(per_dialogue.values()) == {k} and len(set(pairs)) == len(pairs)
    load = Counter(a for _, a in pairs)
    assert max(load.values()) - min(load.values()) <= 1 and len(load) == annotators


def test_assignment_needs_enough_annotators() -> None:
    with pytest.raises(ValidationError):
        services.assign_balanced(dialogue_ids=[1], annotator_ids=[1], per_item=2)


def test_save_is_idempotent_and_keeps_history(dialogues, annotator) -> None:  # type: ignore[no-untyped-def]
    dialogue = dialogues[0]
    turn = dialogue.turns.get(role="teacher")
    helpfulness = feedback_schema().questions.get(key="helpfulness")
    save: dict[str, Any] = {
        "question": helpfulness,
        "dialogue": dialogue,
        "turn": turn,
        "author": annotator,
    }
    services.annotation_save(**save, value=3, nonce="a")
    services.annotation_save(**save, value=3, nonce="a")  # a retried request
    services.annotation_save(**save, value=5, nonce="a")  # a duplicate with the same nonce
    assert Annotation.objects.get().value == 3
    services.annotation_save(**save, value=4, nonce="b")
    services.annotation_save(**save, value=4, nonce="c")  # same value: no new revision
    assert Annotation.objects.count() == 1 and Annotation.objects.get().value == 4
    history = list(AnnotationRevision.objects.values_list("old_value", "new_value", "author"))
    assert history == [(None, 3, annotator.pk), (3, 4, annotator.pk)]
    with pytest.raises(ValidationError):  # a teacher question about a student turn
        services.annotation_save(
            **{**save, "turn": dialogue.turns.filter(role="student")[0]}, value=1
        )


def test_a_seen_nonce_changes_nothing_even_after_other_changes(dialogues, annotator) -> None:  # type: ignore[no-untyped-def]
    """A save writes first and lets the revision's unique (author, nonce) roll a seen request
    back; these are the cases where that differs from looking the nonce up first."""
    turn = dialogues[0].turns.get(role="teacher")
    helpfulness = feedback_schema().questions.get(key="helpfulness")
    save: dict[str, Any] = {
        "question": helpfulness, "dialogue": dialogues[0], "turn": turn, "author": annotator,
    }  # fmt: skip
    services.annotation_save(**save, value=3, nonce="a")
    services.annotation_save(**save, value=4, nonce="b")
    services.annotation_save(**save, value=3, nonce="a")  # a late retry of the first request
    answer = Annotation.objects.get()
    assert answer.value == 4 and answer.is_draft
    # Submitting with the value unchanged writes no revision, so a seen nonce is looked up.
    services.annotation_save(**save, value=4, nonce="b", draft=False)
    assert Annotation.objects.get().is_draft
    services.annotation_save(**save, value=4, nonce="c", draft=False)
    assert not Annotation.objects.get().is_draft
    history = list(AnnotationRevision.objects.values_list("old_value", "new_value", "nonce"))
    assert history == [(None, 3, "a"), (3, 4, "b")]


def test_answer_endpoint_refuses_what_is_not_in_the_item(client, labelled) -> None:  # type: ignore[no-untyped-def]
    item = item_of(labelled, "first")
    url = reverse("item_answer", args=[item.pk])
    turn = labelled["dialogue"].turns.get(role="teacher")
    other_turn = labelled["other"].turns.get(role="teacher")
    helpfulness = feedback_schema().questions.get(key="helpfulness")
    elsewhere = LabelSchema.objects.get(name="Student behaviour").questions.first()
    assert elsewhere is not None
    client.force_login(labelled["first"])
    for data in (
        {"question": elsewhere.pk, "turn": turn.pk, "value": "yes"},  # another schema's
        {"question": helpfulness.pk, "turn": other_turn.pk, "value": "3"},  # another dialogue's
        {"question": "abc", "turn": turn.pk, "value": "3"},
        {"question": helpfulness.pk, "turn": "9" * 30, "value": "3"},
        {"question": helpfulness.pk, "turn": "x", "value": "3"},
        {"question": helpfulness.pk, "value": "3"},  # a turn question without its turn
        {"question": helpfulness.pk, "turn": turn.pk, "value": "9"},
    ):
        response = client.post(url, {**data, "nonce": "n"}, HTTP_ACCEPT="application/json")
        assert response.status_code == 400 and response.json()["saved"] is False, data
    assert not Annotation.objects.exists()
    response = client.post(
        url, {"question": helpfulness.pk, "turn": turn.pk, "value": "3", "nonce": "n"},
        HTTP_ACCEPT="application/json",
    )  # fmt: skip
    assert response.json() == {"saved": True, "value": 3}
    answer_the_rest(item)
    services.item_submit(assignment=item)
    client.post(url, {"question": helpfulness.pk, "turn": turn.pk, "value": "4", "nonce": "m"})
    answer = Annotation.objects.get(question=helpfulness)
    assert answer.value == 4 and not answer.is_draft  # a done item's answers stay submitted


def test_values_are_validated() -> None:
    questions = {q.key: q for q in feedback_schema().questions.all()}
    assert services.clean_value(question=questions["helpfulness"], raw=["5"]) == 5
    assert services.clean_value(question=questions["correct"], raw=["no"]) is False
    assert services.clean_value(question=questions["feedback_kind"], raw=["hint"]) == "hint"
    for key, raw in [("helpfulness", ["6"]), ("correct", ["maybe"]), ("feedback_kind", ["x"])]:
        with pytest.raises(ValidationError):
            services.clean_value(question=questions[key], raw=raw)


def test_dialogue_answers_are_one_per_dialogue_and_author(dialogues, annotator) -> None:  # type: ignore[no-untyped-def]
    overall = LabelQuestion.objects.create(
        schema=feedback_schema(), key="overall", text="Overall?", kind="free_text",
        target="dialogue", position=9,
    )  # fmt: skip
    save: dict[str, Any] = {"question": overall, "turn": None, "author": annotator}
    first = services.annotation_save(**save, dialogue=dialogues[0], value="clear", nonce="a")
    services.annotation_save(**save, dialogue=dialogues[1], value="vague", nonce="b")
    again = services.annotation_save(**save, dialogue=dialogues[0], value="good", nonce="c")
    assert again == first
    answers = dict(Annotation.objects.values_list("dialogue_id", "value"))
    assert answers == {dialogues[0].pk: "good", dialogues[1].pk: "vague"}
    history = list(AnnotationRevision.objects.values_list("old_value", "new_value"))
    assert history == [(None, "clear"), (None, "vague"), ("clear", "good")]


@pytest.mark.django_db(transaction=True)
def test_concurrent_saves_of_one_answer_keep_an_exact_history(dialogues, annotator) -> None:  # type: ignore[no-untyped-def]
    """Annotators' retries and double clicks race: every save of the same answer, the first
    ones included, starts at once from its own connection."""
    # A transactional test before this one emptied the tables the migrations had filled.
    ensure_default_schemas(schema_model=LabelSchema, question_model=LabelQuestion)
    turn = dialogues[0].turns.get(role="teacher")
    helpfulness = feedback_schema().questions.get(key="helpfulness")
    start = threading.Barrier(6)
    failures: list[BaseException] = []

    def save(client: int) -> None:
        try:
            start.wait()
            for n in range(5):
                services.annotation_save(
                    question=helpfulness, dialogue=dialogues[0], turn=turn, author=annotator,
                    value=(client + n) % 5 + 1, nonce=f"{client}-{n}",
                )  # fmt: skip
        except BaseException as error:  # reported by the assertion below
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=save, args=(client,)) for client in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    answer = Annotation.objects.get()
    history = list(AnnotationRevision.objects.order_by("pk").values_list("old_value", "new_value"))
    # Each revision replaced the value the one before it wrote, and none is a no-op.
    assert history[0][0] is None and history[-1][1] == answer.value
    assert all(old == previous[1] for previous, (old, _) in itertools.pairwise(history))
    assert all(old != new for old, new in history)


ANSWERS = {"helpfulness": 3, "correct": True, "reveals_answer": False, "feedback_kind": "hint"}


def answer_the_rest(item: QueueAssignment, **values: Any) -> None:
    """Answer every question of the item its annotator has not answered yet (``values`` by
    key, else ``ANSWERS``)."""
    for question in item.queue.schema.questions.all():
        for turn in item.dialogue.turns.filter(role=question.role):
            mine = Annotation.objects.filter(question=question, turn=turn, author=item.annotator)
            if not mine.exists():
                services.annotation_save(
                    question=question, dialogue=item.dialogue, turn=turn, author=item.annotator,
                    value=values.get(question.key, ANSWERS[question.key]),
                )  # fmt: skip


def test_double_submit_and_prefill_confirmation(dialogues, researcher, annotator) -> None:  # type: ignore[no-untyped-def]
    queue = make_queue(researcher, [annotator], dialogues[:1], 1)
    item = QueueAssignment.objects.get(queue=queue)
    turn = dialogues[0].turns.get(role="teacher")
    helpfulness = feedback_schema().questions.get(key="helpfulness")
    services.annotation_save(
        question=helpfulness, dialogue=dialogues[0], turn=turn, author=annotator, value=2
    )
    assert Annotation.objects.get().is_draft
    answer_the_rest(item)
    services.item_submit(assignment=item)
    services.item_submit(assignment=item)
    item.refresh_from_db()
    assert item.status == "done"
    # Drafts became final; the leak suggestion (yes) was never stored: the annotator said no.
    answers = {a.question.key: a for a in Annotation.objects.select_related("question")}
    assert answers["reveals_answer"].value is False and not answers["helpfulness"].is_draft
    assert all(a.source == "person" and not a.is_draft for a in answers.values())
    assert AnnotationRevision.objects.count() == 4


def test_people_page_and_create_user_command(researcher_client) -> None:  # type: ignore[no-untyped-def]
    response = researcher_client.post(reverse("people"), {
        "username": "ann", "role": "annotator", "password1": "a long pass phrase 9",
        "password2": "a long pass phrase 9",
    })  # fmt: skip
    assert response.status_code == 302 and User.objects.get(username="ann").role == "annotator"
    call_command("create_user", "bob", "--password", "another pass phrase 7")
    call_command("create_researcher", "carol", "--password", "another pass phrase 7")
    roles = dict(User.objects.values_list("username", "role"))
    assert roles["bob"] == "annotator" and roles["carol"] == "researcher"


def test_researcher_builds_queue_from_transcript_filter(
    researcher_client, researcher, dialogues
) -> None:  # type: ignore[no-untyped-def]
    first, second = UserFactory(role="annotator"), UserFactory(role="annotator")
    url = reverse("queue_create") + "?outcome=unsolved&page=1"
    page = researcher_client.get(url).content.decode()
    assert "<strong>1</strong> transcript" in page
    response = researcher_client.post(reverse("queue_create"), {
        "name": "unsolved", "schema": feedback_schema().pk, "annotators_per_item": 2,
        "annotators": [first.pk, second.pk], "filter_query": "outcome=unsolved",
    })  # fmt: skip
    assert response.status_code == 302
    items = QueueAssignment.objects.all()
    assert {i.dialogue_id for i in items} == {dialogues[0].pk}
    assert {i.annotator_id for i in items} == {first.pk, second.pk}
    # k larger than the annotators chosen is refused
    response = researcher_client.post(reverse("queue_create"), {
        "name": "x", "schema": feedback_schema().pk, "annotators_per_item": 3,
        "annotators": [first.pk, second.pk], "filter_query": "",
    })  # fmt: skip
    assert response.status_code == 200 and QueueAssignment.objects.count() == 2
    assert "Choose at least 3 annotators (k)." in response.content.decode()
    # So is a k past the limit, saying what bounds it.
    response = researcher_client.post(reverse("queue_create"), {
        "name": "x", "schema": feedback_schema().pk, "annotators_per_item": 1000,
        "annotators": [first.pk], "filter_query": "",
    })  # fmt: skip
    assert "At most 20 annotators label an item (k), and no more than you choose below." in (
        response.content.decode()
    )


def test_k_defaults_to_two_where_two_people_can_label(researcher_client) -> None:  # type: ignore[no-untyped-def]
    """Alone (a demo, a lab of one), a default of two would be refused by the form itself."""

    def default_k() -> str:
        page = researcher_client.get(reverse("queue_create")).content.decode()
        return re.search(r'name="annotators_per_item" value="(\d+)"', page)[1]  # type: ignore[index]

    assert default_k() == "1"  # the researcher alone
    UserFactory(role="annotator")
    assert default_k() == "2"


def test_schema_builder(researcher_client) -> None:  # type: ignore[no-untyped-def]
    researcher_client.post(reverse("schema_list"), {"name": "Mine", "guidelines": "Be *kind*."})
    schema = LabelSchema.objects.get(name="Mine")
    url = reverse("schema_detail", args=[schema.pk])
    for key, kind, options in [
        ("a", "rating", "1-7"),
        ("b", "multiple_choice", "x\ny\nz"),
        ("c", "free_text", ""),
    ]:
        response = researcher_client.post(url, {
            "question-text": key.upper(), "question-key": key, "question-kind": kind,
            "question-target": "dialogue", "question-options_text": options,
            "question-guidelines": "", "question-prefill": "",
        })  # fmt: skip
        assert response.status_code == 302, response.content.decode()[:2000]
    questions = list(schema.questions.order_by("position"))
    assert [q.options for q in questions] == [[1, 7], ["x", "y", "z"], []]
    researcher_client.post(reverse("question_move", args=[questions[2].pk]), {"to": "up"})
    assert list(schema.questions.order_by("position").values_list("key", flat=True)) == [
        "a",
        "c",
        "b",
    ]
    response = researcher_client.post(url, {  # duplicate key: an error, not a crash
        "question-text": "A", "question-key": "a", "question-kind": "free_text",
        "question-target": "dialogue", "question-options_text": "", "question-prefill": "",
    })  # fmt: skip
    assert response.status_code == 200 and schema.questions.count() == 3


@pytest.fixture
def labelled(dialogues, researcher) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    first, second, outsider = (UserFactory(role="annotator") for _ in range(3))
    queue = make_queue(researcher, [first, second], dialogues[:2], 2)
    return {"queue": queue, "first": first, "second": second, "outsider": outsider,
            "dialogue": dialogues[0], "other": dialogues[3]}  # fmt: skip


def item_of(data: dict[str, Any], who: str) -> QueueAssignment:
    return QueueAssignment.objects.get(
        queue=data["queue"], annotator=data[who], dialogue=data["dialogue"]
    )


def test_labelling_page_saves_and_is_blind(client, labelled) -> None:  # type: ignore[no-untyped-def]
    first_item, second_item = item_of(labelled, "first"), item_of(labelled, "second")
    turn = labelled["dialogue"].turns.get(role="teacher")
    helpfulness = feedback_schema().questions.get(key="helpfulness")
    client.force_login(labelled["first"])
    response = client.post(
        reverse("item_answer", args=[first_item.pk]),
        {"question": helpfulness.pk, "turn": turn.pk, "value": "5", "nonce": "n1"},
        HTTP_HX_REQUEST="true",
    )
    assert response.json() == {"saved": True, "value": 5}
    page = client.get(reverse("item_label", args=[first_item.pk])).content.decode()
    assert 'value="5" checked' in page  # the draft survives a reload
    # The second annotator neither sees the first's answer nor can open or write their item.
    client.force_login(labelled["second"])
    page = client.get(reverse("item_label", args=[second_item.pk])).content.decode()
    assert 'value="5" checked' not in page
    assert client.get(reverse("item_label", args=[first_item.pk])).status_code == 404
    url = reverse("item_answer", args=[first_item.pk])
    assert (
        client.post(url, {"question": helpfulness.pk, "turn": turn.pk, "value": "1"}).status_code
        == 404
    )
    assert Annotation.objects.get().value == 5


def test_annotators_see_only_their_dialogues(client, labelled) -> None:  # type: ignore[no-untyped-def]
    mine, other = labelled["dialogue"], labelled["other"]
    client.force_login(labelled["first"])
    listing = client.get(reverse("dialogue_list")).content.decode()
    assert f"#{mine.pk}<" in listing and f"#{other.pk}<" not in listing
    assert client.get(reverse("dialogue_detail", args=[mine.pk])).status_code == 200
    assert client.get(reverse("dialogue_detail", args=[other.pk])).status_code == 404
    compare = (
        reverse("dialogue_compare")
        + f"?task={other.task_id}&left_run={other.run_id}&right_run={other.run_id}"
    )
    assert client.get(compare).status_code == 404
    assert client.get(reverse("run_detail", args=[mine.run_id])).status_code == 403
    client.force_login(labelled["outsider"])
    assert client.get(reverse("dialogue_detail", args=[mine.pk])).status_code == 404
    assert client.get(reverse("queue_detail", args=[labelled["queue"].pk])).status_code == 404
    assert "Nothing to label" in client.get(reverse("queue_list")).content.decode()


def test_every_labelling_view_is_permission_checked(client, labelled, researcher) -> None:  # type: ignore[no-untyped-def]
    queue, item = labelled["queue"], item_of(labelled, "first")
    question = feedback_schema().questions.first()
    assert question is not None
    views = {
        "queue_list": ([], 200, 200),
        "schema_list": ([], 403, 200),
        "schema_detail": ([feedback_schema().pk], 403, 200),
        "question_edit": ([question.pk], 403, 200),
        "queue_create": ([], 403, 200),
        "queue_detail": ([queue.pk], 200, 200),
        "item_history": ([queue.pk, labelled["dialogue"].pk], 403, 200),
        "item_label": ([item.pk], 200, 404),
        "people": ([], 403, 200),
    }  # name: (args, annotator status, researcher status)
    for name, (args, _, _) in views.items():
        response = client.get(reverse(name, args=args))
        assert response.status_code == 302 and response["Location"].startswith("/login/"), name
    for who, column in ((labelled["first"], 1), (researcher, 2)):
        client.force_login(who)
        for name, spec in views.items():
            assert client.get(reverse(name, args=spec[0])).status_code == spec[column], (name, who)
    client.force_login(labelled["first"])
    for name, args in [("question_move", [question.pk]), ("question_delete", [question.pk])]:
        assert client.post(reverse(name, args=args)).status_code == 403
    assert LabelQuestion.objects.filter(pk=question.pk).exists()


def test_researcher_sees_every_label_and_the_history(client, labelled, researcher) -> None:  # type: ignore[no-untyped-def]
    turn = labelled["dialogue"].turns.get(role="teacher")
    helpfulness = feedback_schema().questions.get(key="helpfulness")
    for who, values in (("first", [2, 4]), ("second", [3])):
        for value in values:
            services.annotation_save(question=helpfulness, dialogue=labelled["dialogue"],
                                     turn=turn, author=labelled[who], value=value)  # fmt: skip
    client.force_login(researcher)
    page = client.get(reverse("item_history", args=[labelled["queue"].pk, labelled["dialogue"].pk]))
    text = page.content.decode()
    assert labelled["first"].username in text and labelled["second"].username in text
    assert "<code>2</code> → <code>4</code>" in text


def queries(client, url: str) -> int:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_query_counts_do_not_grow(client, researcher) -> None:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    run = make_run("run", task_set)
    annotators = [UserFactory(role="annotator") for _ in range(3)]

    def grow(count: int):  # type: ignore[no-untyped-def]
        for _ in range(count):
            task = TaskFactory(task_set=task_set)
            store(run, task.pk, 0, "a_late", [
                attempt("4", "4", False), feedback("Carry."), attempt("3", "3", True),
                feedback("Good."), attempt("3", "3", True),
            ][: 3 + 2 * (task.pk % 2)])  # fmt: skip
        return make_queue(researcher, annotators, list(Dialogue.objects.all()), 2)

    small, big = grow(2), grow(6)
    counts = []
    for queue in (small, big):
        client.force_login(researcher)
        detail = queries(client, reverse("queue_detail", args=[queue.pk]))
        listing = queries(client, reverse("queue_list"))
        client.force_login(annotators[0])
        item = QueueAssignment.objects.filter(queue=queue, annotator=annotators[0]).last()
        label = queries(client, reverse("item_label", args=[item.pk]))
        mine = queries(client, reverse("queue_detail", args=[queue.pk]))
        counts.append((detail, listing, label, mine))
    assert counts[0] == counts[1]


def test_stops_follow_roles(labelled) -> None:  # type: ignore[no-untyped-def]
    item = assignment_for(pk=item_of(labelled, "first").pk, user=labelled["first"])
    stops = labelling_stops(assignment=item)
    assert [bool(stop.questions) for stop in stops] == [False, True, False]
    reveals = next(s for s in stops[1].questions if s.question.key == "reveals_answer")
    # Dialogue 0's feedback was leak-flagged: "yes" is suggested, not the annotator's answer.
    assert reveals.prefilled and reveals.suggestion is True
    assert reveals.value is None and not reveals.answered


def test_a_queue_shows_its_filter_in_words(researcher_client, researcher, dialogues) -> None:  # type: ignore[no-untyped-def]
    """The queue page showed its raw filter (``run=2&turns=4%2B``): now as chips (issue 33)."""
    run = dialogues[0].run
    query = f"run={run.pk}&turns=4%2B&outcome=unsolved&has=question&label=helpfulness%3E%3D4"
    page = researcher_client.get(reverse("queue_create") + "?" + query).content.decode()
    source = page[page.index('id="queue-source"') :]
    assert f'<span class="chip">Run: #{run.pk} {run.name}</span>' in source
    assert '<span class="chip">Turns: 4+</span>' in source and "<code>run=" not in source
    queue = services.queue_create(
        name="q", schema=feedback_schema(), filter_query=query,
        dialogue_ids=[d.pk for d in dialogues], annotators=[UserFactory(role="annotator")],
        annotators_per_item=1, created_by=researcher,
    )  # fmt: skip
    page = researcher_client.get(reverse("queue_detail", args=[queue.pk])).content.decode()
    shown = page[
        page.index('id="queue-filter"') : page.index("</dd>", page.index('id="queue-filter"'))
    ]
    chips = [
        f"Run: #{run.pk} {run.name}", "Outcome: Unsolved", "Turns: 4+",
        "Has a turn of kind: question", "Label: helpfulness&gt;=4",
    ]  # fmt: skip
    for chip in chips:
        assert f'<span class="chip">{chip}</span>' in shown, (chip, shown)
    assert f'href="/dialogues/?{query.replace("&", "&amp;")}"' in shown, "the list it selects"
    assert ">run=" not in shown
