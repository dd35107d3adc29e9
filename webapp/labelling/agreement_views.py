"""Agreement pages (researchers only): the schemas, one schema's agreement per question with the
items annotators disagree on (loaded on demand with htmx), and humans vs the leak detector.

Query-string filters, each optional: ``run``, ``dialogue`` and ``queue`` (ids), and ``detector``
(the key of the yes/no question compared with the leak detector; default ``reveals_answer`` or
the ``DIALAB_AGREEMENT_DETECTOR_QUESTION`` setting).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q
from django.http import HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render

from webapp.accounts.requests import SignedInRequest
from webapp.annotations import agreement_selectors as selectors
from webapp.annotations.models import Annotation, LabelQuestion, LabelQueue, LabelSchema
from webapp.annotations.selectors import given_labels
from webapp.core.permissions import researcher_required
from webapp.runs.models import Run


@dataclass(frozen=True)
class Filters:
    run_id: int | None = None
    dialogue_id: int | None = None
    queue_id: int | None = None
    detector_key: str = ""

    @classmethod
    def from_query(cls, query: QueryDict) -> Filters:
        def number(name: str) -> int | None:
            value = query.get(name, "").strip()
            return int(value) if value.isdigit() and int(value) > 0 else None

        return cls(
            run_id=number("run"),
            dialogue_id=number("dialogue"),
            queue_id=number("queue"),
            detector_key=query.get("detector", "").strip() or selectors.detector_question_key(),
        )

    def querystring(self) -> str:
        query = QueryDict(mutable=True)
        for name, value in (
            ("run", self.run_id), ("dialogue", self.dialogue_id), ("queue", self.queue_id),
        ):  # fmt: skip
            if value is not None:
                query[name] = str(value)
        if self.detector_key != selectors.detector_question_key():
            query["detector"] = self.detector_key
        return query.urlencode()

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.run_id, self.dialogue_id, self.queue_id))


@researcher_required
def agreement_index(request: SignedInRequest) -> HttpResponse:
    # The labels (selectors.given_labels): submitted, and not a suggestion nobody
    # confirmed.
    given = Q(questions__annotations__is_draft=False) & ~Q(
        questions__annotations__source=Annotation.Source.UNCONFIRMED_PREFILL
    )
    schemas = LabelSchema.objects.annotate(
        label_count=Count("questions__annotations", filter=given)
    ).order_by("name")
    return render(request, "labelling/agreement_index.html", {"schemas": schemas})


@researcher_required
def agreement_schema(request: SignedInRequest, schema_id: int) -> HttpResponse:
    schema = get_object_or_404(LabelSchema, pk=schema_id)
    filters = Filters.from_query(request.GET)
    questions = selectors.question_labels(
        schema_id=schema.pk, run_id=filters.run_id, dialogue_id=filters.dialogue_id,
        queue_id=filters.queue_id,
    )  # fmt: skip
    labelled = given_labels().filter(question__schema=schema, dialogue__run_id=OuterRef("pk"))
    context = {
        "schema": schema,
        "filters": filters,
        "querystring": filters.querystring(),
        "has_labels": any(q.data for q in questions),
        "reports": [selectors.question_report(q) for q in questions if q.measured],
        "unmeasured": [q for q in questions if not q.measured],
        "detector": selectors.detector_report(questions, filters.detector_key),
        "runs": Run.objects.filter(Exists(labelled)).order_by("name").only("pk", "name"),
        "queues": LabelQueue.objects.filter(schema=schema).only("pk", "name"),
    }
    return render(request, "labelling/agreement_schema.html", context)


@researcher_required
def agreement_disagreements(
    request: SignedInRequest, schema_id: int, question_id: int
) -> HttpResponse:
    question = get_object_or_404(
        LabelQuestion.objects.select_related("schema"), pk=question_id, schema_id=schema_id
    )
    filters = Filters.from_query(request.GET)
    labels = selectors.question_labels(
        schema_id=schema_id, question_id=question.pk, run_id=filters.run_id,
        dialogue_id=filters.dialogue_id, queue_id=filters.queue_id,
    )  # fmt: skip
    context = {
        "schema": question.schema,
        "question": question,
        "querystring": filters.querystring(),
        "disagreements": selectors.disagreements(labels[0]) if labels else [],
    }
    template = "labelling/agreement_disagreements.html"
    if request.htmx:
        template = "labelling/agreement_disagreement_list.html"
    return render(request, template, context)
