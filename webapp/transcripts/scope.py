"""The one scoping rule of the transcript pages and the API: who may read which dialogues.

Researchers (and internal callers, ``reader=None``) read every dialogue. An annotator reads
only the dialogues a labelling queue assigns to them; the runs, tasks, task sets and models of
those dialogues are all that the transcript pages and the API may name to them, and their
label filters look at their own labels alone (blind labelling). Every list, page, choice and
count of ``webapp.transcripts`` goes through these functions, and the API calls the same
selectors, so the two cannot drift apart.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet

from webapp.accounts.models import User
from webapp.annotations.models import QueueAssignment
from webapp.dialogues.models import Dialogue


def bounding_annotator(reader: User | None) -> int | None:
    """The annotator whose queues bound what ``reader`` may read: ``None`` when nothing does
    (a researcher, or an internal caller)."""
    if reader is None or reader.is_researcher:
        return None
    return reader.pk


def queued_for(*, annotator_id: int) -> QuerySet[QueueAssignment]:
    """An annotator's queue items: their dialogues are all that the annotator may read."""
    return QueueAssignment.objects.filter(annotator_id=annotator_id)


def visible_to(dialogues: QuerySet[Dialogue], *, reader: User | None) -> QuerySet[Dialogue]:
    """``dialogues``, less those that ``reader`` may not read."""
    annotator_id = bounding_annotator(reader)
    if annotator_id is None:
        return dialogues
    queued = queued_for(annotator_id=annotator_id)
    return dialogues.filter(Exists(queued.filter(dialogue=OuterRef("pk"))))
