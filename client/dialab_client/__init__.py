"""A Python client for Dialab's HTTP API.

from dialab_client import Dialab

lab = Dialab("http://127.0.0.1:8000", token="dialab_...")  # or DIALAB_URL, DIALAB_TOKEN
runs = lab.runs.wait([12, 13], progress=True)
table = lab.runs.figures([12, 13]).to_pandas()
"""

from dialab_client.client import Dialab
from dialab_client.errors import DialabError
from dialab_client.models import (
    Answer,
    Comparison,
    Dialogue,
    DialogueRow,
    FigureRow,
    Figures,
    Gap,
    Item,
    Label,
    Line,
    Me,
    Model,
    Point,
    Protocol,
    Question,
    Queue,
    Run,
    Task,
    TaskImport,
    TasksAdded,
    TaskSet,
    Turn,
)

__all__ = [
    "Answer", "Comparison", "Dialab", "DialabError", "Dialogue", "DialogueRow", "FigureRow",
    "Figures", "Gap", "Item", "Label", "Line", "Me", "Model", "Point", "Protocol", "Question",
    "Queue", "Run", "Task", "TaskImport", "TaskSet", "TasksAdded", "Turn",
]  # fmt: skip
