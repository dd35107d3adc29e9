"""Labels are what people gave (issue 27): an item with required questions unanswered is
refused, naming them; a suggestion (the leak detector's) is stored only once confirmed; a skip
needs a reason; suggestions stored unconfirmed before are marked and counted by no reader."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.http import QueryDict
from django.urls import reverse

from tests.factories import TaskFactory, TaskSetFactory, UserFactory
from tests.transcript_builders import attempt, feedback, make_run, store
from webapp.accounts.models import User
from webapp.annotations import agreement_selectors, services
from webapp.annotations.legacy_prefills import mark_unconfirmed_prefills, unconfirmed_prefills
from webapp.annotations.models import (
    Annotation,
    AnnotationRevision,
    LabelQuestion,
    LabelSchema,
    QueueAssignment,
)
from webapp.annotations.selectors import assignment_for, given_labels, labelling_stops
from webapp.dialogues.models import Dialogue, Turn
from webapp.transcripts import exporting
from webapp.transcripts import selectors as dialogue_selectors
from webapp.transcripts.forms import DialogueFilterForm

pytestmark = pytest.mark.django_db

ANSWERS = {"helpfulness": 4, "correct": True, "reveals_answer": False, "feedback_kind": "hint"}


def feedback_schema() -> LabelSchema:
    return LabelSchema.objects.get(name="Feedback quality")


def question(key: str) -> LabelQuestion:
    return feedback_schema().questions.get(key=key)


@pytest.fixture
def three_feedbacks() -> Dialogue:
    """An unsolved dialogue of three teacher turns, the second flagged as leaking."""
    task_set = TaskSetFactory()
    run = make_run("run", task_set)
    store(run, TaskFactory(task_set=task_set).pk, 0, "a_late", [
        attempt("It is 4.", "4", False), feedback("Check the carry."),
        attempt("It is 5.", "5", False), feedback("It is 3.", leak=True),
        attempt("6?", "6", False), feedback("Look again."),
    ])  # fmt: skip
    return Dialogue.objects.get()


@pytest.fixture
def item(three_feedbacks: Dialogue, researcher: User, annotator: User) -> QueueAssignment:
    services.queue_create(
        name="q", schema=feedback_schema(), filter_query="", dialogue_ids=[three_feedbacks.pk],
        annotators=[annotator], annotators_per_item=1, created_by=researcher,
    )  # fmt: skip
    return QueueAssignment.objects.get()


def teacher_turns(dialogue: Dialogue) -> list[Turn]:
    return list(dialogue.turns.filter(role="teacher").order_by("index"))


def answer(item: QueueAssignment, key: str, turn: Turn, value: Any, **options: Any) -> int:
    return services.annotation_save(
        question=question(key), dialogue=item.dialogue, turn=turn, author=item.annotator,
        value=value, **options,
    )  # fmt: skip


def answer_all(item: QueueAssignment, *, leave: set[tuple[str, int]] = frozenset()) -> None:  # type: ignore[assignment]
    """Answer every slot of the item but those in ``leave`` ((key, turn index) pairs)."""
    for turn in teacher_turns(item.dialogue):
        for key, value in ANSWERS.items():
            if (key, turn.index) not in leave:
                answer(item, key, turn, value)


# --- Submitting -----------------------------------------------------------------------------


def test_submitting_with_nothing_answered_is_refused_and_stores_nothing(item) -> None:  # type: ignore[no-untyped-def]
    """Enter on a fresh item used to mark it done and store the detector's suggestions as
    the annotator's labels."""
    with pytest.raises(services.ItemIncomplete) as refused:
        services.item_submit(assignment=item)
    missing = refused.value.unanswered
    assert len(missing) == 12  # four questions on each of three teacher turns
    assert [m.where for m in missing[:4]] == ["Teacher · turn 1 · message #2"] * 4
    assert missing[4].where == "Teacher · turn 2 · message #4"
    assert "12 required questions are unanswered" in refused.value.message
    assert "“How helpful is this feedback?” on Teacher · turn 1 · message #2" in (
        refused.value.message
    )
    assert not Annotation.objects.exists() and not AnnotationRevision.objects.exists()
    item.refresh_from_db()
    assert item.status == "pending" and item.submitted_at is None


def test_submitting_eight_of_twelve_names_the_four_left(item) -> None:  # type: ignore[no-untyped-def]
    t1, t2, t3 = teacher_turns(item.dialogue)
    leave = {("reveals_answer", t1.index), ("reveals_answer", t2.index),
             ("reveals_answer", t3.index), ("feedback_kind", t3.index)}  # fmt: skip
    answer_all(item, leave=leave)
    with pytest.raises(services.ItemIncomplete) as refused:
        services.item_submit(assignment=item)
    assert [(m.question.key, m.turn.pk) for m in refused.value.unanswered] == [
        ("reveals_answer", t1.pk), ("reveals_answer", t2.pk),
        ("reveals_answer", t3.pk), ("feedback_kind", t3.pk),
    ]  # fmt: skip
    # Nothing was stored for the suggestion, and the answers given are still drafts.
    assert not Annotation.objects.filter(question__key="reveals_answer").exists()
    assert Annotation.objects.filter(is_draft=True).count() == 8
    # Answered (the suggestion confirmed once, chosen otherwise): the item goes through.
    answer(item, "reveals_answer", t1, False)
    answer(item, "reveals_answer", t2, True, confirms_suggestion=True)
    answer(item, "reveals_answer", t3, False)
    answer(item, "feedback_kind", t3, "hint")
    services.item_submit(assignment=item)
    item.refresh_from_db()
    assert item.status == "done" and not Annotation.objects.filter(is_draft=True).exists()
    sources = dict(
        Annotation.objects.filter(question__key="reveals_answer").values_list("turn", "source")
    )
    assert sources == {t1.pk: "person", t2.pk: "confirmed_suggestion", t3.pk: "person"}


def test_optional_questions_and_blank_text(item) -> None:  # type: ignore[no-untyped-def]
    """Every question is required unless the schema marks it optional; a cleared text box is
    no answer."""
    schema = feedback_schema()
    note = services.question_save(
        schema=schema, key="note", text="Anything else?", kind="free_text", target="dialogue",
        options=[],
    )  # fmt: skip
    answer_all(item)
    services.annotation_save(question=note, dialogue=item.dialogue, turn=None,
                             author=item.annotator, value="   ")  # fmt: skip
    with pytest.raises(services.ItemIncomplete) as refused:
        services.item_submit(assignment=item)
    [missing] = refused.value.unanswered
    assert missing.question == note and missing.where == "the whole dialogue"
    services.question_save(
        schema=schema, key="note", text="Anything else?", kind="free_text", target="dialogue",
        options=[], optional=True, question=note,
    )  # fmt: skip
    services.item_submit(assignment=item)
    item.refresh_from_db()
    assert item.status == "done"


def test_the_schema_editor_marks_a_question_optional(researcher_client) -> None:  # type: ignore[no-untyped-def]
    schema = feedback_schema()
    url = reverse("schema_detail", args=[schema.pk])
    page = researcher_client.get(url).content.decode()
    assert 'name="question-optional"' in page and "· required</div>" in page
    response = researcher_client.post(url, {
        "question-text": "Note?", "question-key": "note", "question-kind": "free_text",
        "question-target": "dialogue", "question-options_text": "", "question-guidelines": "",
        "question-prefill": "", "question-optional": "on",
    })  # fmt: skip
    assert response.status_code == 302
    assert schema.questions.get(key="note").optional
    assert not schema.questions.get(key="helpfulness").optional  # required by default


# --- Suggestions ------------------------------------------------------------------------------


def test_a_suggestion_is_shown_never_stored_until_confirmed(client, item) -> None:  # type: ignore[no-untyped-def]
    _, leaky, _ = teacher_turns(item.dialogue)
    reveals = question("reveals_answer")
    client.force_login(item.annotator)
    page = client.get(reverse("item_label", args=[item.pk])).content.decode()
    form = page.split(f'id="q-{reveals.pk}-{leaky.pk}"')[1].split("</form>")[0]
    # Shown as a suggestion with its confirm button: no radio is checked.
    assert 'data-suggestion="yes"' in page.split(f'id="q-{reveals.pk}-{leaky.pk}"')[0][-400:]
    assert "checked" not in form and 'name="confirm" value="yes"' in form
    assert not Annotation.objects.exists()
    # The confirm button (or c) stores it as a confirmed suggestion.
    url = reverse("item_answer", args=[item.pk])
    response = client.post(url, {"question": reveals.pk, "turn": leaky.pk, "confirm": "yes",
                                 "nonce": "c1"}, HTTP_ACCEPT="application/json")  # fmt: skip
    assert response.json() == {"saved": True, "value": True}
    stored = Annotation.objects.get()
    assert stored.value is True and stored.source == "confirmed_suggestion" and stored.is_draft
    # Choosing the other answer is the annotator's own.
    client.post(url, {"question": reveals.pk, "turn": leaky.pk, "value": "no", "nonce": "c2"},
                HTTP_ACCEPT="application/json")  # fmt: skip
    stored.refresh_from_db()
    assert stored.value is False and stored.source == "person"
    # "Confirming" something that is not the suggestion is a plain answer.
    confirm = {"question": reveals, "dialogue": item.dialogue, "author": item.annotator}
    services.annotation_save(**confirm, turn=leaky, value=True, confirms_suggestion=True)
    stored.refresh_from_db()
    assert stored.value is True and stored.source == "confirmed_suggestion"
    first = teacher_turns(item.dialogue)[0]  # suggested "no": True confirms nothing
    services.annotation_save(**confirm, turn=first, value=True, confirms_suggestion=True)
    assert Annotation.objects.get(turn=first).source == "person"
    page = client.get(reverse("item_label", args=[item.pk])).content.decode()
    form = page.split(f'id="q-{reveals.pk}-{leaky.pk}"')[1].split("</form>")[0]
    assert 'value="yes" checked' in form  # now the annotator's answer


# --- The page and its keyboard --------------------------------------------------------------


def test_the_submit_view_refuses_with_the_unanswered_questions(client, item) -> None:  # type: ignore[no-untyped-def]
    t1, *_ = teacher_turns(item.dialogue)
    answer_all(item, leave={("correct", t1.index)})
    client.force_login(item.annotator)
    url = reverse("item_submit", args=[item.pk])
    # The page's script (Enter, or the button) asks for JSON.
    response = client.post(url, HTTP_ACCEPT="application/json")
    assert response.status_code == 400
    body = response.json()
    correct = question("correct")
    assert body["submitted"] is False and body["unanswered"] == [f"q-{correct.pk}-{t1.pk}"]
    assert "1 required question is unanswered" in body["error"]
    assert "“Is the feedback correct?” on Teacher · turn 1 · message #2" in body["error"]
    # Without JavaScript: the page again, the refusal by the toolbar, the question marked.
    response = client.post(url)
    assert response.status_code == 400
    page = response.content.decode()
    refusal = page.split('id="submit-refusal"')[1].split("</p>")[0]
    assert "hidden" not in refusal.split(">")[0] and "Is the feedback correct?" in refusal
    marked = page.split(f'id="q-{correct.pk}-{t1.pk}"')[0].rsplit("<form", 1)[1]
    assert "unanswered" in marked
    item.refresh_from_db()
    assert item.status == "pending"
    assert not Annotation.objects.filter(is_draft=False).exists()
    # Answered: the script is told where to go next.
    answer(item, "correct", t1, False)
    body = client.post(url, HTTP_ACCEPT="application/json").json()
    assert body == {
        "submitted": True,
        "next": reverse("queue_next", args=[item.queue_id]) + f"?after={item.position}",
    }


def test_skipping_needs_a_reason_shown_in_the_queue_and_the_history(  # type: ignore[no-untyped-def]
    client, researcher, item
) -> None:
    with pytest.raises(ValidationError):
        services.item_skip(assignment=item, reason="  ")
    client.force_login(item.annotator)
    url = reverse("item_skip", args=[item.pk])
    response = client.post(url, {"reason": ""})
    assert (
        response.status_code == 400 and "Say why you skip this item." in response.content.decode()
    )
    item.refresh_from_db()
    assert item.status == "pending"
    response = client.post(url, {"reason": "The  transcript is cut\noff."})
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.status == "skipped" and item.skip_reason == "The transcript is cut off."
    mine = client.get(reverse("queue_detail", args=[item.queue_id])).content.decode()
    assert "“The transcript is cut off.”" in mine
    page = client.get(reverse("item_label", args=[item.pk])).content.decode()
    assert 'id="skip-note"' in page and 'value="The transcript is cut off."' in page
    client.force_login(researcher)
    queue = client.get(reverse("queue_detail", args=[item.queue_id])).content.decode()
    assert "skipped (“The transcript is cut off.”)" in queue
    history = client.get(
        reverse("item_history", args=[item.queue_id, item.dialogue_id])
    ).content.decode()
    assert "skipped (“The transcript is cut off.”)" in history


# --- Labels stored before: the migration's rule, and every reader --------------------------


def legacy_submit(item: QueueAssignment) -> None:
    """What item submission did before 0005: store each suggestion left unanswered, with the
    nonce ``prefill-<assignment>-<question>-<turn>``, and mark the item done."""
    reveals = question("reveals_answer")
    for turn in teacher_turns(item.dialogue):
        if not Annotation.objects.filter(question=reveals, turn=turn, author=item.annotator):
            answer(item, "reveals_answer", turn, bool(turn.leak_flag),
                   nonce=f"prefill-{item.pk}-{reveals.pk}-{turn.pk}", draft=False)  # fmt: skip
    Annotation.objects.filter(author=item.annotator, is_draft=True).update(is_draft=False)
    QueueAssignment.objects.filter(pk=item.pk).update(status="done")


@pytest.fixture
def legacy(three_feedbacks: Dialogue, researcher: User) -> dict[str, Any]:
    """Two annotators of the dialogue before 0005: ann pressed Enter with nothing answered
    (three suggestions stored); bob answered "reveals the answer" on the first turn, pressed
    Enter (two stored), then changed the last one on the done item."""
    ann, bob = UserFactory(username="ann", role="annotator"), UserFactory(username="bob")
    services.queue_create(
        name="q", schema=feedback_schema(), filter_query="", dialogue_ids=[three_feedbacks.pk],
        annotators=[ann, bob], annotators_per_item=2, created_by=researcher,
    )  # fmt: skip
    items = {i.annotator.username: i for i in QueueAssignment.objects.select_related("annotator")}
    t1, _, t3 = teacher_turns(three_feedbacks)
    legacy_submit(items["ann"])
    answer(items["bob"], "reveals_answer", t1, True)
    legacy_submit(items["bob"])
    answer(items["bob"], "reveals_answer", t3, True, draft=False)  # a later change: bob's own
    return {"items": items, "ann": ann, "bob": bob, "dialogue": three_feedbacks}


def test_the_migration_marks_suggestions_stored_without_confirmation(legacy) -> None:  # type: ignore[no-untyped-def]
    """The rule: an answer whose revisions are all ``prefill-`` ones. On this history: ann's
    three and bob's second turn; not bob's first (his own) nor his third (changed since)."""
    t1, t2, t3 = teacher_turns(legacy["dialogue"])
    found = unconfirmed_prefills(annotation_model=Annotation, revision_model=AnnotationRevision)
    assert sorted(found.values_list("author__username", "turn")) == [
        ("ann", t1.pk), ("ann", t2.pk), ("ann", t3.pk), ("bob", t2.pk),
    ]  # fmt: skip
    assert (
        mark_unconfirmed_prefills(annotation_model=Annotation, revision_model=AnnotationRevision)
        == 4
    )
    assert (
        mark_unconfirmed_prefills(annotation_model=Annotation, revision_model=AnnotationRevision)
        == 0
    )  # idempotent
    assert Annotation.objects.filter(source="unconfirmed_prefill").count() == 4
    assert given_labels().count() == 2  # bob's first and third turns


def test_the_demo_project_has_no_stored_suggestions_to_mark() -> None:
    """The demo (``manage.py demo_project``) creates no labelling queue and no label (its runs,
    played later by a worker, add dialogues only): the migration marks 0 rows on it."""
    call_command("demo_project", "--no-run")
    assert not Annotation.objects.exists()
    assert (
        mark_unconfirmed_prefills(annotation_model=Annotation, revision_model=AnnotationRevision)
        == 0
    )


def test_no_reader_counts_an_unconfirmed_suggestion(client, researcher, legacy) -> None:  # type: ignore[no-untyped-def]
    mark_unconfirmed_prefills(annotation_model=Annotation, revision_model=AnnotationRevision)
    dialogue = legacy["dialogue"]
    t1, _, t3 = teacher_turns(dialogue)
    schema = feedback_schema()
    # Agreement: only bob's labels, so no item has two; the four left out are counted.
    [reveals] = agreement_selectors.question_labels(
        schema_id=schema.pk, question_id=question("reveals_answer").pk
    )
    assert reveals.data == {(dialogue.pk, t1.pk): {legacy["bob"].pk: True},
                            (dialogue.pk, t3.pk): {legacy["bob"].pk: True}}  # fmt: skip
    assert reveals.unconfirmed_left_out == 4
    # Exports: the turns carry bob's two labels only.
    [record] = exporting.dialogue_records(filters=exporting.filters_from_query(""))
    exported = [(t["index"], lb["author"]) for t in record["turns"] for lb in t["labels"]]
    assert exported == [(t1.index, "bob"), (t3.index, "bob")]

    # The transcript filters by label (and the training sets they select): ann's "no" on t2
    # and t3 never was a label.
    def selected(query: str) -> bool:
        form = DialogueFilterForm.from_query(QueryDict(query), reader=researcher)
        return dialogue_selectors.dialogue_list(filters=form.filters()).exists()

    assert not selected("label=reveals_answer%3Dno")
    assert selected("label=reveals_answer%3Dyes")
    # The annotator's item shows them as suggestions again, unanswered.
    item = assignment_for(pk=legacy["items"]["ann"].pk, user=legacy["ann"])
    states = [s for stop in labelling_stops(assignment=item) for s in stop.questions
              if s.question.key == "reveals_answer"]  # fmt: skip
    assert [(s.answered, s.prefilled) for s in states] == [(False, True)] * 3
    assert len(services.item_unanswered(assignment=item)) == 12
    # The history shows them, marked as no label.
    client.force_login(researcher)
    history = client.get(reverse("item_history", args=[item.queue_id, dialogue.pk]))
    assert history.content.decode().count("unconfirmed suggestion, not a label") == 4
    # Answering on the done item (even with the same value) makes it the annotator's.
    answer(legacy["items"]["ann"], "reveals_answer", t1, False, draft=False)
    stored = Annotation.objects.get(author=legacy["ann"], turn=t1)
    assert stored.source == "person" and stored.revisions.count() == 2
    assert given_labels().filter(author=legacy["ann"]).count() == 1
