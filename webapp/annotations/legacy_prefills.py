"""Which stored answers are suggestions nobody confirmed (for migration 0005).

Before suggestions needed confirming, submitting an item stored the suggestion of every
pre-filled question the annotator had not answered (the leak detector's "reveals the answer:
no"), as a submitted answer with one revision whose nonce was
``prefill-<assignment>-<question>-<turn>``. Answers the annotator gave carry the client's nonce (a
UUID), so the rule is: **an answer whose revisions are all ``prefill-`` ones** was written from
the suggestion and never touched again. An answer the annotator changed after submitting has a
later revision with another nonce and stays the annotator's. One left as it was, or chosen again
with the same value (which writes no revision), cannot be told apart: it stays unconfirmed, and
the annotator can confirm it by answering on the item's page.

The function takes the model classes, so the data migration can pass its historical models.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef

from webapp.annotations.models import PREFILL_NONCE_PREFIX

UNCONFIRMED_PREFILL = "unconfirmed_prefill"  # Annotation.Source.UNCONFIRMED_PREFILL


def unconfirmed_prefills(*, annotation_model: Any, revision_model: Any) -> Any:
    """The answers the rule above finds (a queryset of ``annotation_model``)."""
    revisions = revision_model.objects.filter(annotation_id=OuterRef("pk"))
    prefilled = revisions.filter(nonce__startswith=PREFILL_NONCE_PREFIX)
    given = revisions.exclude(nonce__startswith=PREFILL_NONCE_PREFIX)
    return annotation_model.objects.filter(Exists(prefilled), ~Exists(given))


def mark_unconfirmed_prefills(*, annotation_model: Any, revision_model: Any) -> int:
    """Mark those answers ``unconfirmed_prefill``; return how many were marked."""
    found = unconfirmed_prefills(annotation_model=annotation_model, revision_model=revision_model)
    marked: int = found.exclude(source=UNCONFIRMED_PREFILL).update(source=UNCONFIRMED_PREFILL)
    return marked
