"""``lab.labels``: labelling queues, my items in them, answers from another labelling tool (by
the labelling page's rules), and the labels given."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from dialab_client.models import Answer, Item, Label, Queue, parse_one

if TYPE_CHECKING:
    from dialab_client.client import Dialab


class Labels:
    def __init__(self, lab: Dialab) -> None:
        self.lab = lab

    def queues(self) -> builtins.list[Queue]:
        """My queues (a researcher: every queue), each with its questions."""
        return [Queue.parse(q) for q in self.lab.request("GET", "/labels/queues")]

    def items(self, queue_id: int, *, status: str | None = None) -> builtins.list[Item]:
        """My items in a queue, in order; ``status``: pending, done or skipped."""
        params = {"status": status} if status else {}
        found = self.lab.request("GET", f"/labels/queues/{queue_id}/items", params=params)
        return [Item.parse(item) for item in found]

    def submit(
        self,
        item_id: int,
        answers: Iterable[Answer | Mapping[str, Any]],
        *,
        submit: bool = True,
        nonce: str = "",
    ) -> Item:
        """Save answers to one of my items and (``submit``) submit it, as the labelling page
        would: all or nothing. A value the question does not allow, an answer about the wrong
        kind of turn, or a submission with a required question unanswered raises
        ``DialabError`` whose ``problems`` name each (``answers.2``, ``submit``). ``nonce``
        makes a retried request change nothing twice."""
        body = {
            "answers": [asdict(a) if isinstance(a, Answer) else dict(a) for a in answers],
            "submit": submit,
            "nonce": nonce,
        }
        return Item.parse(self.lab.request("POST", f"/labels/items/{item_id}/answers", json=body))

    def skip(self, item_id: int, reason: str) -> Item:
        body = self.lab.request("POST", f"/labels/items/{item_id}/skip", json={"reason": reason})
        return Item.parse(body)

    def list(self, *, queue: int | None = None, dialogue: int | None = None) -> Iterator[Label]:
        """The labels given (a researcher: submitted answers, as agreement counts them; an
        annotator: her own answers, drafts included)."""
        params = {
            name: value for name, value in (("queue", queue), ("dialogue", dialogue)) if value
        }
        for label in self.lab.pages("/labels", params):
            yield parse_one(Label, label)
