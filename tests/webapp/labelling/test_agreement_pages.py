"""Agreement: selectors on real label rows, the pages, their permissions and query counts."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import (
    TaskFactory,
    UserFactory,
    frozen_run,
)
from webapp.annotations import agreement_selectors as selectors
from webapp.annotations.models import (
    Annotation,
    AnnotationRevision,
    LabelQuestion,
    LabelQueue,
    LabelSchema,
    QueueAssignment,
)
from webapp.dialogues.models import Dialogue, Turn
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db

Kind = LabelQuestion.Kind


def make_run(name: str) -> Run:
    return frozen_run(name=name)


def make_dialogue(run: Run, leaks: list[bool]) -> Dialogue:
    """A dialogue of student attempts (even indexes) and teacher feedback (odd indexes) whose
    teacher turns carry the given leak flags."""
    dialogue = Dialogue.objects.create(
        run=run, task=TaskFactory(task_set=run.task_set), seed=0, outcome="unsolved",
        num_turns=len(leaks), end_reason="max_turns",
    )  # fmt: skip
    for number, leak in enumerate(leaks):
        Turn.objects.create(
            dialogue=dialogue, index=2 * number, round=number + 1, role="student",
            kind="attempt", text="4",
        )  # fmt: skip
        Turn.objects.create(
            dialogue=dialogue, index=2 * number + 1, round=number + 1, role="teacher",
            kind="feedback", text="Look again.", leak_flag=leak,
        )  # fmt: skip
    return dialogue


def teacher_turns(dialogue: Dialogue) -> list[Turn]:
    return list(dialogue.turns.filter(role="teacher").order_by("index"))


def label(question: LabelQuestion, turn: Turn | None, author: Any, value: Any, **fields: Any):  # type: ignore[no-untyped-def]
    dialogue_id = turn.dialogue_id if turn is not None else fields.pop("dialogue").pk
    return Annotation.objects.create(
        question=question, dialogue_id=dialogue_id, turn=turn, author=author, value=value, **fields
    )


@pytest.fixture
def world() -> dict[str, Any]:
    schema = LabelSchema.objects.create(name="Agreement test schema")

    def question(
        key: str, kind: str, position: int, options: Any = (), target: str = "teacher_turn"
    ):  # type: ignore[no-untyped-def]
        return LabelQuestion.objects.create(
            schema=schema, key=key, text=f"{key}?", kind=kind, target=target,
            options=list(options), position=position,
        )  # fmt: skip

    run = make_run("run one")
    other_run = make_run("run two")
    dialogue = make_dialogue(run, [True, False, True])
    other = make_dialogue(other_run, [False])
    ann, bob, cy = (UserFactory(username=n, role="annotator") for n in ("ann", "bob", "cy"))
    return {
        "schema": schema,
        "rating": question("helpfulness", Kind.RATING, 0, [1, 5]),
        "leak": question("reveals_answer", Kind.YES_NO, 1),
        "kind": question("feedback_kind", Kind.SINGLE_CHOICE, 2, ["hint", "answer"]),
        "tags": question("tags", Kind.MULTIPLE_CHOICE, 3, ["a", "b", "c"]),
        "note": question("note", Kind.FREE_TEXT, 4),
        "overall": question("overall", Kind.YES_NO, 5, target="dialogue"),
        "run": run, "other_run": other_run, "dialogue": dialogue, "other": other,
        "ann": ann, "bob": bob, "cy": cy,
    }  # fmt: skip


def by_key(questions: list[selectors.QuestionLabels]) -> dict[str, selectors.QuestionLabels]:
    return {q.key: q for q in questions}


def fill(world: dict[str, Any]) -> None:
    """Two annotators on three teacher turns, a third on one of them, plus a draft."""
    t1, t3, t5 = teacher_turns(world["dialogue"])
    (o1,) = teacher_turns(world["other"])
    ann, bob, cy = world["ann"], world["bob"], world["cy"]
    rating, leak, kind, tags = world["rating"], world["leak"], world["kind"], world["tags"]
    for turn, a, b in ((t1, 5, 4), (t3, 2, 2), (t5, 1, 1), (o1, 3, 3)):
        label(rating, turn, ann, a)
        label(rating, turn, bob, b)
    label(rating, t1, cy, 5)
    # Leak: detector flags t1 and t5 (True, False, True) and not o1.
    for turn, a, b in ((t1, True, True), (t3, True, False), (t5, False, False), (o1, True, True)):
        label(leak, turn, ann, a)
        label(leak, turn, bob, b)
    label(kind, t1, ann, "hint")
    label(kind, t1, bob, "answer")
    label(tags, t1, ann, ["a", "b"])
    label(tags, t1, bob, ["a"])
    label(world["note"], t1, ann, "fine")
    label(world["note"], t1, bob, "not fine")
    label(world["overall"], None, ann, True, dialogue=world["dialogue"])
    label(world["overall"], None, bob, True, dialogue=world["dialogue"])
    label(kind, t3, ann, "hint")
    label(kind, t3, bob, "answer", is_draft=True)  # a draft never counts


# --- Selectors ---------------------------------------------------------------------------------


def test_selectors_read_submitted_labels_into_reliability_data(world: dict[str, Any]) -> None:
    fill(world)
    t1, t3, t5 = teacher_turns(world["dialogue"])
    (o1,) = teacher_turns(world["other"])
    ann, bob, cy = world["ann"].pk, world["bob"].pk, world["cy"].pk
    questions = selectors.question_labels(schema_id=world["schema"].pk)
    assert [q.key for q in questions] == [
        "helpfulness", "reveals_answer", "feedback_kind", "tags", "note", "overall"
    ]  # fmt: skip
    q = by_key(questions)
    d, o = world["dialogue"].pk, world["other"].pk
    assert q["helpfulness"].data == {
        (d, t1.pk): {ann: 5, bob: 4, cy: 5},
        (d, t3.pk): {ann: 2, bob: 2},
        (d, t5.pk): {ann: 1, bob: 1},
        (o, o1.pk): {ann: 3, bob: 3},
    }
    assert list(q["helpfulness"].annotators.values()) == ["ann", "bob", "cy"]
    assert q["reveals_answer"].leak_flags == {
        (d, t1.pk): True, (d, t3.pk): False, (d, t5.pk): True, (o, o1.pk): False
    }  # fmt: skip
    assert q["tags"].data == {(d, t1.pk): {ann: frozenset({"a", "b"}), bob: frozenset({"a"})}}
    assert q["feedback_kind"].data[(d, t3.pk)] == {ann: "hint"}  # bob's draft is left out
    assert q["note"].data == {} and not q["note"].measured  # free text is never compared
    assert q["overall"].data == {(d, None): {ann: True, bob: True}}
    assert q["overall"].items[(d, None)].url == f"/dialogues/{d}/"

    report = selectors.question_report(q["helpfulness"])
    assert report.pairable_items == 4 and report.annotators == ["ann", "bob", "cy"]
    assert report.kappa.method == "mean_pairwise" and report.kappa.weights == "quadratic"
    assert [metric for metric, _ in report.alphas] == ["ordinal", "interval"]
    # Observed agreement: t1 {5,4,5} m=3 adds o55 = 2/2 = 1 and 4 mismatched pairs/2;
    # t3, t5, o1 add 2 each on the diagonal. Σ o_cc = 7, n = 3 + 2 + 2 + 2 = 9 → 7/9.
    assert report.observed.exact == Fraction(7, 9)
    assert report.disagreement_count == 1
    [row] = selectors.disagreements(q["helpfulness"])
    # The message as every page names and links it (webapp/dialogues/numbering.py).
    assert row.item.url == f"/dialogues/{d}/#message-{t1.index + 1}"
    assert row.item.label == f"dialogue #{d} · Teacher · turn {t1.round} · message #{t1.index + 1}"
    assert row.values == [("ann", "5"), ("bob", "4"), ("cy", "5")]

    two = selectors.question_report(q["feedback_kind"])
    assert two.kappa.method == "cohen" and two.pairable_items == 1
    # One item, ("hint", "answer"): p_o = 0, p_e = 1·0 + 0·1 = 0, κ = 0.
    assert two.kappa.estimate.exact == 0


def test_selectors_filter_by_run_dialogue_and_queue(world: dict[str, Any]) -> None:
    fill(world)
    schema = world["schema"].pk

    def items(**filters: Any) -> set[int]:
        q = by_key(selectors.question_labels(schema_id=schema, **filters))
        return {dialogue for dialogue, _ in q["helpfulness"].data}

    d, o = world["dialogue"].pk, world["other"].pk
    assert items() == {d, o}
    assert items(run_id=world["other_run"].pk) == {o}
    assert items(dialogue_id=d) == {d}
    queue = LabelQueue.objects.create(name="q", schema=world["schema"], annotators_per_item=2)
    for position, annotator in enumerate((world["ann"], world["bob"])):
        QueueAssignment.objects.create(
            queue=queue, dialogue=world["other"], annotator=annotator, position=position
        )
    q = by_key(selectors.question_labels(schema_id=schema, queue_id=queue.pk))
    assert {dialogue for dialogue, _ in q["helpfulness"].data} == {o}
    # cy labelled in dialogue d, which is not in the queue; ann and bob only count on o.
    assert set(q["helpfulness"].annotators.values()) == {"ann", "bob"}


def test_values_are_normalized_per_kind() -> None:
    assert selectors.normalize(Kind.YES_NO, "Yes") is True
    assert selectors.normalize(Kind.YES_NO, False) is False
    assert selectors.normalize(Kind.YES_NO, "maybe") is None
    assert selectors.normalize(Kind.RATING, "4") == 4
    assert selectors.normalize(Kind.RATING, True) is None
    assert selectors.normalize(Kind.MULTIPLE_CHOICE, ["b", "a"]) == frozenset({"a", "b"})
    assert selectors.normalize(Kind.SINGLE_CHOICE, {"value": "hint"}) == "hint"
    assert selectors.normalize(Kind.FREE_TEXT, "text") is None


def test_detector_report_treats_the_leak_flag_as_a_rater(world: dict[str, Any]) -> None:
    fill(world)
    questions = selectors.question_labels(schema_id=world["schema"].pk)
    report = selectors.detector_report(questions, "reveals_answer")
    assert report is not None
    result = report.result
    # Items: t1 humans (T,T) detector T; t3 (T,F) tie, detector F; t5 (F,F) detector T;
    # o1 (T,T) detector F.
    assert result.items == 4 and result.ties == 1
    assert report.table == [("yes", 1, 1), ("no", 1, 0)]
    _t1, _t3, t5 = teacher_turns(world["dialogue"])
    (o1,) = teacher_turns(world["other"])
    assert [item.turn_id for item in report.disagreements] == [t5.pk, o1.pk]
    # Majority vs detector: (T,T), (F,T), (T,F): p_o = 1/3, both say yes 2/3 of the time,
    # p_e = 2/3·2/3 + 1/3·1/3 = 5/9, κ = (3/9 − 5/9)/(4/9) = −1/2.
    assert result.kappa.exact == Fraction(-1, 2)
    # With the detector: t1 {T,T,T}, t3 {T,F,F}, t5 {F,F,T}, o1 {T,T,F}, each m = 3.
    # oTT = 3 + 0 + 0 + 1 = 4, oFF = 0 + 1 + 1 + 0 = 2, oTF = oFT = 1 + 1 + 1 = 3;
    # n_T = 7, n_F = 5, n = 12. α = 1 − 11·(2·3)/(2·7·5) = 1 − 66/70 = 2/35.
    assert result.alpha_with_detector.exact == Fraction(2, 35)
    assert selectors.detector_report(questions, "no_such_question") is None


# --- Pages -------------------------------------------------------------------------------------


def page_urls(world: dict[str, Any]) -> list[str]:
    schema = world["schema"].pk
    return [
        reverse("agreement_index"),
        reverse("agreement_schema", args=[schema]),
        reverse("agreement_disagreements", args=[schema, world["rating"].pk]),
    ]


def test_pages_are_mounted_where_the_links_point(world: dict[str, Any]) -> None:
    schema = world["schema"].pk
    assert page_urls(world) == [
        "/annotations/agreement/",
        f"/annotations/agreement/{schema}/",
        f"/annotations/agreement/{schema}/questions/{world['rating'].pk}/disagreements/",
    ]


def test_anonymous_users_are_sent_to_login(client: Any, world: dict[str, Any]) -> None:
    for url in page_urls(world):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_annotators_are_refused(annotator_client: Any, world: dict[str, Any]) -> None:
    fill(world)
    for url in page_urls(world):
        assert annotator_client.get(url).status_code == 403


def test_index_lists_schemas_with_links(researcher_client: Any, world: dict[str, Any]) -> None:
    fill(world)
    html = researcher_client.get(reverse("agreement_index")).content.decode()
    assert f'href="/annotations/agreement/{world["schema"].pk}/"' in html
    assert "Agreement test schema" in html


def test_schema_page_shows_statistics_per_question(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    fill(world)
    response = researcher_client.get(reverse("agreement_schema", args=[world["schema"].pk]))
    assert response.status_code == 200
    html = response.content.decode()
    reports = {r.labels.key: r for r in response.context["reports"]}
    assert set(reports) == {"helpfulness", "reveals_answer", "feedback_kind", "tags", "overall"}
    assert "Rating scale" in html and "mean pairwise Cohen&#x27;s kappa" in html
    assert "Cohen&#x27;s kappa" in html and "ordinal" in html and "interval" in html
    assert "masi" in html and "Not measured (free text)" in html
    assert '<span class="chip">cy</span>' in html
    assert f"{reports['helpfulness'].observed.value:.3f}" in html
    disagreements = reverse(
        "agreement_disagreements", args=[world["schema"].pk, world["rating"].pk]
    )
    assert f'hx-get="{disagreements}"' in html
    assert 'id="detector-confusion"' in html
    assert "where the humans and the detector differ" in html


def test_disagreements_load_as_a_fragment_or_a_page(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    fill(world)
    url = reverse("agreement_disagreements", args=[world["schema"].pk, world["rating"].pk])
    fragment = researcher_client.get(url, headers={"HX-Request": "true"}).content.decode()
    (t1, *_) = teacher_turns(world["dialogue"])
    assert f'href="/dialogues/{world["dialogue"].pk}/#message-{t1.message_number}"' in fragment
    assert "ann: 5" in fragment and "bob: 4" in fragment
    assert "<html" not in fragment
    page = researcher_client.get(url).content.decode()
    assert "<html" in page and "ann: 5" in page
    other_schema = LabelSchema.objects.create(name="other")
    wrong = reverse("agreement_disagreements", args=[other_schema.pk, world["rating"].pk])
    assert researcher_client.get(wrong).status_code == 404


def test_schema_page_filters_by_run(researcher_client: Any, world: dict[str, Any]) -> None:
    fill(world)
    response = researcher_client.get(
        reverse("agreement_schema", args=[world["schema"].pk]), {"run": world["other_run"].pk}
    )
    reports = {r.labels.key: r for r in response.context["reports"]}
    assert reports["helpfulness"].pairable_items == 1
    assert f'<option value="{world["other_run"].pk}" selected>' in response.content.decode()


def test_empty_state(researcher_client: Any, world: dict[str, Any]) -> None:
    label(world["kind"], teacher_turns(world["dialogue"])[0], world["ann"], "hint", is_draft=True)
    html = researcher_client.get(
        reverse("agreement_schema", args=[world["schema"].pk])
    ).content.decode()
    assert 'id="agreement-empty"' in html and "No submitted labels" in html
    assert "No submitted labels on <code>reveals_answer</code>" in html
    LabelSchema.objects.all().delete()
    html = researcher_client.get(reverse("agreement_index")).content.decode()
    assert "No label schemas yet." in html


def test_unconfirmed_suggestions_are_not_labels_and_confirmed_ones_are_counted(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    """Suggestions stored at submit without anyone confirming them (before migration 0005)
    are left out of agreement and of the detector comparison, and said to be; suggestions
    an annotator confirmed are labels, and counted."""
    t1, t3, _ = teacher_turns(world["dialogue"])
    for author in (world["ann"], world["bob"]):
        annotation = label(world["leak"], t1, author, True, source="unconfirmed_prefill")
        AnnotationRevision.objects.create(
            annotation=annotation, author=author, new_value=True, nonce=f"prefill-{author.pk}"
        )
    label(world["leak"], t3, world["ann"], False, source="confirmed_suggestion")
    label(world["leak"], t3, world["bob"], True)
    [leak] = selectors.question_labels(schema_id=world["schema"].pk, question_id=world["leak"].pk)
    assert leak.data == {(world["dialogue"].pk, t3.pk): {world["ann"].pk: False,
                                                          world["bob"].pk: True}}  # fmt: skip
    assert leak.unconfirmed_left_out == 2 and leak.confirmed_suggestions == 1
    html = researcher_client.get(
        reverse("agreement_schema", args=[world["schema"].pk])
    ).content.decode()
    assert "2 answers are the detector's suggestion stored when an item was submitted" in html
    assert "1 human label confirms the detector's suggestion" in html
    index = researcher_client.get(reverse("agreement_index"))
    counts = {schema.pk: schema.label_count for schema in index.context["schemas"]}
    assert counts[world["schema"].pk] == 2  # the two labels of t3, not the unconfirmed ones


def test_schema_page_uses_a_fixed_number_of_queries(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    url = reverse("agreement_schema", args=[world["schema"].pk])
    annotators = [world["ann"], world["bob"], world["cy"]]

    def queries_for(dialogue_count: int) -> int:
        for number in range(dialogue_count):
            dialogue = make_dialogue(world["run"], [number % 2 == 0, True])
            for turn in teacher_turns(dialogue):
                for position, author in enumerate(annotators):
                    label(world["rating"], turn, author, 1 + (number + position) % 5)
                    label(world["leak"], turn, author, position == 0)
                    label(world["tags"], turn, author, ["a", "b"][: 1 + position % 2])
        with CaptureQueriesContext(connection) as context:
            response = researcher_client.get(url)
        assert response.status_code == 200
        return len(context.captured_queries)

    assert queries_for(1) == queries_for(20)

    def fragment_queries() -> int:
        with CaptureQueriesContext(connection) as context:
            researcher_client.get(
                reverse("agreement_disagreements", args=[world["schema"].pk, world["rating"].pk]),
                headers={"HX-Request": "true"},
            )
        return len(context.captured_queries)

    before = fragment_queries()
    queries_for(5)
    assert fragment_queries() == before
