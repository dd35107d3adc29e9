"""Reads submitted labels into plain reliability data for the agreement statistics.

An item is a (dialogue, turn) pair for turn questions and (dialogue, None) for whole-dialogue
questions; each annotator gives at most one value per item (the model's unique constraints).
Only labels count (``selectors.given_labels``): never drafts, nor suggestions stored without
anyone confirming them (they are counted apart, to say how many were left out). A whole report
is three queries (the schema, its questions and its labels) whatever the number of labels.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet
from django.urls import reverse

from webapp.annotations.models import Annotation, LabelQuestion, QueueAssignment
from webapp.annotations.selectors import given_labels
from webapp.dialogues.models import Turn
from webapp.dialogues.numbering import MessageRef
from webapp.metrics import agreement

ItemKey = tuple[int, int | None]  # (dialogue id, turn id or None)

# The yes/no question compared with the leak detector (Turn.leak_flag); a setting may rename it.
DEFAULT_DETECTOR_QUESTION = "reveals_answer"
UNCONFIRMED = Annotation.Source.UNCONFIRMED_PREFILL
CONFIRMED_SUGGESTION = Annotation.Source.CONFIRMED_SUGGESTION

YES = {"yes", "y", "true", "1"}
NO = {"no", "n", "false", "0"}

# Per kind: Cohen's kappa weights and Krippendorff's alpha metrics (the first is the headline).
# Keyed by the kind's stored value (a plain str, as QuestionLabels.kind holds it).
KAPPA_WEIGHTS: dict[str, agreement.Weights] = {
    LabelQuestion.Kind.RATING: agreement.Weights.QUADRATIC,
    LabelQuestion.Kind.SINGLE_CHOICE: agreement.Weights.NONE,
    LabelQuestion.Kind.YES_NO: agreement.Weights.NONE,
    LabelQuestion.Kind.MULTIPLE_CHOICE: agreement.Weights.MASI,
}
ALPHA_METRICS: dict[str, list[agreement.Metric]] = {
    LabelQuestion.Kind.RATING: [agreement.Metric.ORDINAL, agreement.Metric.INTERVAL],
    LabelQuestion.Kind.SINGLE_CHOICE: [agreement.Metric.NOMINAL],
    LabelQuestion.Kind.YES_NO: [agreement.Metric.NOMINAL],
    LabelQuestion.Kind.MULTIPLE_CHOICE: [agreement.Metric.MASI],
}


def detector_question_key() -> str:
    return getattr(settings, "DIALAB_AGREEMENT_DETECTOR_QUESTION", DEFAULT_DETECTOR_QUESTION)


@dataclass(frozen=True)
class ItemRef:
    """A labelled item: a message of a dialogue (named and linked as on every page), or the
    whole dialogue (``message`` None)."""

    dialogue_id: int
    turn_id: int | None
    message: MessageRef | None = None

    @property
    def key(self) -> ItemKey:
        return (self.dialogue_id, self.turn_id)

    @property
    def url(self) -> str:
        if self.message is not None:
            return self.message.url
        return reverse("dialogue_detail", args=[self.dialogue_id])

    @property
    def label(self) -> str:
        if self.message is not None:
            return self.message.full_label
        return f"dialogue #{self.dialogue_id}"


@dataclass
class QuestionLabels:
    """One question's submitted labels: ``data[item][annotator id] = value`` (normalized: a bool
    for yes/no, a number for ratings, a string for single choice, a frozenset for multiple
    choice), with the items, the annotators' names and, for turn items, the leak flags."""

    question_id: int
    key: str
    text: str
    kind: str
    kind_display: str
    target: str
    data: dict[ItemKey, dict[int, Any]] = field(default_factory=dict)
    items: dict[ItemKey, ItemRef] = field(default_factory=dict)
    annotators: dict[int, str] = field(default_factory=dict)
    leak_flags: dict[ItemKey, bool] = field(default_factory=dict)
    confirmed_suggestions: int = 0  # labels that confirm the suggestion (c, or its button)
    unconfirmed_left_out: int = 0  # suggestions stored unconfirmed (before 0005): not labels
    skipped: int = 0  # labels whose value could not be read for this kind

    @property
    def measured(self) -> bool:
        return self.kind in ALPHA_METRICS


def normalize(kind: str, value: Any) -> Any:
    """A stored JSON value as a comparable, hashable value for its question kind, or None when
    it is not a usable answer (free text is never compared)."""
    if isinstance(value, dict) and "value" in value:
        value = value["value"]
    if value is None:
        return None
    if kind == LabelQuestion.Kind.YES_NO:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        return True if text in YES else False if text in NO else None
    if kind == LabelQuestion.Kind.RATING:
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            return value
        try:
            number = float(str(value))
        except ValueError:
            return None
        return int(number) if number.is_integer() else number
    if kind == LabelQuestion.Kind.SINGLE_CHOICE:
        return value if isinstance(value, str) else str(value)
    if kind == LabelQuestion.Kind.MULTIPLE_CHOICE:
        if isinstance(value, str):
            return frozenset([value])
        if isinstance(value, list | tuple | set | frozenset):
            return frozenset(str(option) for option in value)
        return None
    return None


def display(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, frozenset):
        return ", ".join(sorted(value)) if value else "(none)"
    return str(value)


def submitted_labels(
    *,
    schema_id: int,
    question_id: int | None = None,
    run_id: int | None = None,
    dialogue_id: int | None = None,
    queue_id: int | None = None,
) -> QuerySet[Annotation]:
    """The labels of a schema (``given_labels``: submitted, given by the annotator),
    optionally of one question, run, dialogue or queue (a queue keeps the labels its assigned
    annotators gave on its dialogues)."""
    return _of_schema(
        given_labels(), schema_id=schema_id, question_id=question_id, run_id=run_id,
        dialogue_id=dialogue_id, queue_id=queue_id,
    )  # fmt: skip


def _of_schema(
    labels: QuerySet[Annotation],
    *,
    schema_id: int,
    question_id: int | None,
    run_id: int | None,
    dialogue_id: int | None,
    queue_id: int | None,
) -> QuerySet[Annotation]:
    labels = labels.filter(question__schema_id=schema_id).exclude(
        question__kind=LabelQuestion.Kind.FREE_TEXT
    )
    if question_id is not None:
        labels = labels.filter(question_id=question_id)
    if run_id is not None:
        labels = labels.filter(dialogue__run_id=run_id)
    if dialogue_id is not None:
        labels = labels.filter(dialogue_id=dialogue_id)
    if queue_id is not None:
        assigned = QueueAssignment.objects.filter(
            queue_id=queue_id,
            dialogue_id=OuterRef("dialogue_id"),
            annotator_id=OuterRef("author_id"),
        )
        labels = labels.filter(Exists(assigned))
    return labels


def question_labels(
    *,
    schema_id: int,
    question_id: int | None = None,
    run_id: int | None = None,
    dialogue_id: int | None = None,
    queue_id: int | None = None,
) -> list[QuestionLabels]:
    """Every question of the schema (free text included, with no data) with its labels, in the
    schema's order. Two queries."""
    questions = LabelQuestion.objects.filter(schema_id=schema_id).order_by("position", "pk")
    if question_id is not None:
        questions = questions.filter(pk=question_id)
    kinds = dict(LabelQuestion.Kind.choices)
    result = {
        q.pk: QuestionLabels(
            question_id=q.pk, key=q.key, text=q.text, kind=q.kind,
            kind_display=kinds.get(q.kind, q.kind), target=q.target,
        )
        for q in questions.only("pk", "key", "text", "kind", "target")
    }  # fmt: skip
    if not result:
        return []
    # Submitted answers, the unconfirmed suggestions among them only counted (one query).
    submitted = _of_schema(
        Annotation.objects.filter(is_draft=False), schema_id=schema_id,
        question_id=question_id, run_id=run_id, dialogue_id=dialogue_id, queue_id=queue_id,
    ).order_by()  # fmt: skip
    rows = submitted.values_list(
        "pk", "question_id", "dialogue_id", "turn_id", "turn__index", "turn__round",
        "turn__role", "turn__leak_flag", "author_id", "author__username", "value", "source",
    )  # fmt: skip
    roles = dict(Turn.Role.choices)
    for _pk, qid, did, tid, tindex, tround, role, leak, author, username, raw, source in sorted(
        rows, key=_row_order
    ):
        labelled = result[qid]
        if source == UNCONFIRMED:
            labelled.unconfirmed_left_out += 1
            continue
        value = normalize(labelled.kind, raw)
        if value is None:
            labelled.skipped += 1
            continue
        message = None
        if tid is not None:
            message = MessageRef(
                dialogue_id=did, index=tindex, round=tround, role_display=roles.get(role, role)
            )
        item = ItemRef(dialogue_id=did, turn_id=tid, message=message)
        labelled.items.setdefault(item.key, item)
        labelled.data.setdefault(item.key, {})[author] = value
        labelled.annotators.setdefault(author, username)
        if tid is not None:
            labelled.leak_flags[item.key] = bool(leak)
        labelled.confirmed_suggestions += source == CONFIRMED_SUGGESTION
    for labelled in result.values():
        labelled.annotators = dict(sorted(labelled.annotators.items(), key=lambda a: a[1]))
    return list(result.values())


def _row_order(row: tuple[Any, ...]) -> tuple[int, int, int, int]:
    _pk, _qid, did, _tid, tindex, _round, _role, _leak, author, *_ = row
    return (did, -1 if tindex is None else tindex, author, row[0])


# --- Reports -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Disagreement:
    item: ItemRef
    values: list[tuple[str, str]]  # (annotator, value shown)


@dataclass(frozen=True)
class QuestionReport:
    labels: QuestionLabels
    pairable_items: int
    annotators: list[str]  # who labelled at least one item that someone else labelled too
    observed: agreement.Estimate
    kappa: agreement.Kappa
    alphas: list[tuple[str, agreement.Estimate]]  # (metric, alpha)
    disagreement_count: int


@dataclass(frozen=True)
class DetectorReport:
    question: QuestionLabels
    result: agreement.DetectorAgreement
    disagreements: list[ItemRef]

    def count(self, human: bool, detector: bool) -> int:
        return self.result.confusion.get((human, detector), 0)

    @property
    def table(self) -> list[tuple[str, int, int]]:
        """Rows (human majority, detector yes, detector no)."""
        return [
            ("yes", self.count(True, True), self.count(True, False)),
            ("no", self.count(False, True), self.count(False, False)),
        ]


def question_report(labels: QuestionLabels) -> QuestionReport:
    data = labels.data
    kind = labels.kind
    raters = agreement.raters(data)
    return QuestionReport(
        labels=labels,
        pairable_items=len(agreement.pairable(data)),
        annotators=[labels.annotators[r] for r in labels.annotators if r in set(raters)],
        observed=agreement.observed_agreement(data),
        kappa=agreement.kappa(data, KAPPA_WEIGHTS.get(kind, agreement.Weights.NONE)),
        alphas=[
            (metric.value, agreement.krippendorff_alpha(data, metric))
            for metric in ALPHA_METRICS.get(kind, [])
        ],
        disagreement_count=len(agreement.disagreements(data)),
    )


def disagreements(labels: QuestionLabels) -> list[Disagreement]:
    """Items labelled by two or more annotators who did not all give the same value."""
    return [
        Disagreement(
            item=labels.items[key],
            values=[
                (labels.annotators[author], display(value))
                for author, value in sorted(
                    labels.data[key].items(), key=lambda a: labels.annotators[a[0]]
                )
            ],
        )
        for key in agreement.disagreements(labels.data)
    ]


def detector_report(
    questions: Iterable[QuestionLabels], detector_key: str
) -> DetectorReport | None:
    """Humans vs the leak detector on the question with ``detector_key`` (turn items only), or
    None when the schema has no such yes/no question."""
    for labels in questions:
        if labels.key == detector_key and labels.kind == LabelQuestion.Kind.YES_NO:
            humans = {key: values for key, values in labels.data.items() if key[1] is not None}
            result = agreement.detector_agreement(humans, labels.leak_flags)
            return DetectorReport(
                question=labels,
                result=result,
                disagreements=[labels.items[key] for key in result.disagreements],
            )
    return None
