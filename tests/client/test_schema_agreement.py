"""The client's typed records read only what the server's OpenAPI schema says it sends: a field
renamed or dropped on the server fails here, not in a researcher's notebook."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any

import dialab_client.models as client
import pytest

from webapp.api.api import api

# Client record -> the schema of the answer it is read from.
READ_FROM = {
    client.Me: None,  # GET /me answers a plain object (username, role)
    client.Run: "RunOut",
    client.TaskSet: "TaskSetDetail",
    client.Task: "TaskOut",
    client.TaskImport: "ImportOut",
    client.Model: "ModelRegistered",
    client.Protocol: "ProtocolOut",
    client.Question: "QuestionOut",
    client.Queue: "QueueOut",
    client.Item: "ItemOut",
    client.Label: "LabelOut",
    client.Point: "PointOut",
    client.Gap: "GapOut",
    client.Line: "LineOut",
    client.DialogueRow: "DialogueRow",
    client.Dialogue: "DialogueOut",
    client.Turn: "TurnOut",
    client.FigureRow: "FigureRow",
}
CLIENT_ONLY = {("FigureRow", "run")}  # the client adds which run a row is of


@pytest.fixture(scope="module")
def schemas() -> dict[str, Any]:
    components: dict[str, Any] = api.get_openapi_schema()["components"]["schemas"]
    return components


@pytest.mark.parametrize("record", [r for r, name in READ_FROM.items() if name], ids=str)
def test_every_field_the_client_reads_is_in_the_servers_schema(
    record: type, schemas: dict[str, Any]
) -> None:
    name = READ_FROM[record]
    assert name is not None
    sent = set(schemas[name]["properties"])
    read = {f.name for f in fields(record)} - {f for n, f in CLIENT_ONLY if n == name}
    assert read <= sent, f"{record.__name__} reads {sorted(read - sent)}, not in {name}"
    # What the client cannot do without, the server always sends.
    needed = {f.name for f in fields(record) if f.default is MISSING}
    needed -= {f.name for f in fields(record) if f.default_factory is not MISSING}
    missing = needed & read - set(schemas[name].get("required", []))
    assert not missing, f"{record.__name__} needs {sorted(missing)}, which {name} may leave out"
