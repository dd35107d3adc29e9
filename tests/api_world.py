"""A small world for the API's tests (tests/webapp/api, tests/client): two finished runs of
three dialogues each, a researcher and an annotator with tokens, and a revoked token."""

from __future__ import annotations

import itertools
import json
from typing import Any

from django.test import Client

from tests.factories import TaskFactory, TaskSetFactory, UserFactory
from tests.transcript_builders import attempt, feedback, make_run, store
from webapp.annotations.models import LabelQueue, LabelSchema, QueueAssignment
from webapp.api import tokens
from webapp.runs.models import Run


def build_world() -> dict[str, Any]:
    """Two runs of three dialogues; an annotator whose queue holds one dialogue of the first."""
    task_set = TaskSetFactory()
    first, second = make_run("first", task_set), make_run("second", task_set)
    for task in TaskFactory.create_batch(3, task_set=task_set):
        store(first, task.pk, 0, "a_first", [attempt("The answer is 3.", "3", True)])
        store(second, task.pk, 0, "a_late", [
            attempt("The answer is 4.", "4", False), feedback("Carry the one."),
            attempt("The answer is 3.", "3", True),
        ])  # fmt: skip
    for run in (first, second):
        Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED)
    researcher = UserFactory(role="researcher")
    annotator = UserFactory(role="annotator")
    queue = LabelQueue.objects.create(
        name="q", schema=LabelSchema.objects.create(name="s"), created_by=researcher
    )
    queued = first.dialogues.order_by("pk").first()
    item = QueueAssignment.objects.create(
        queue=queue, dialogue=queued, annotator=annotator, position=0
    )
    revoked, revoked_text = tokens.issue_token(user=researcher, name="old")
    tokens.revoke_token(user=researcher, token_id=revoked.pk)
    return {
        "first": first,
        "second": second,
        "queued": queued,
        "queue": queue,
        "item": item,
        "hidden": second.dialogues.order_by("pk").first(),
        "researcher": tokens.issue_token(user=researcher, name="n")[1],
        "annotator": tokens.issue_token(user=annotator, name="n")[1],
        "revoked": revoked_text,
        "anonymous": "",
    }


_TOKEN_NAMES = (f"token {n}" for n in itertools.count())


def token_client(user: Any) -> Client:
    """A test client that sends a new API token of ``user``'s."""
    text = tokens.issue_token(user=user, name=next(_TOKEN_NAMES))[1]
    return Client(headers={"Authorization": f"Bearer {text}"})


def post_json(client: Client, path: str, body: Any) -> Any:
    """POST ``body`` as JSON to ``/api/v1`` + ``path``."""
    return client.post(f"/api/v1{path}", json.dumps(body), content_type="application/json")
