"""What the API returns, as typed records (the server's schemas: ``/api/v1/openapi.json``)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any


def _from(cls: type[Any], data: dict[str, Any]) -> Any:
    """``cls`` from the fields of ``data`` it declares (a newer server may send more)."""
    names = {f.name for f in fields(cls)}
    return cls(**{name: value for name, value in data.items() if name in names})


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


@dataclass(frozen=True)
class Me:
    username: str
    role: str


@dataclass(frozen=True)
class TaskSet:
    id: int
    name: str
    version: int
    task_count: int


@dataclass(frozen=True)
class Model:
    id: int
    name: str
    backend: str


@dataclass(frozen=True)
class Protocol:
    id: int
    name: str
    mode: str
    max_turns: int


@dataclass(frozen=True)
class Run:
    id: int
    name: str
    kind: str
    status: str
    is_finished: bool
    progress_done: int
    progress_total: int
    error: str
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def parse(cls, data: dict[str, Any]) -> Run:
        run: Run = _from(cls, data)
        return cls(**{
            **run.__dict__,
            **{name: _when(data.get(name)) for name in ("created_at", "started_at", "finished_at")},
        })  # fmt: skip


@dataclass(frozen=True)
class FigureRow:
    """One number of a run's figures (the run page's metrics CSV): ``metric`` (for instance
    ``accuracy_after_turn``), ``k``, its 95% interval ``low``–``high`` where it has one, and
    ``successes`` of ``n`` for a rate."""

    run: int
    metric: str
    k: int | None = None
    group: str = ""
    value: float | str | None = None
    low: float | None = None
    high: float | None = None
    successes: int | None = None
    n: int | None = None


@dataclass(frozen=True)
class Figures:
    rows: list[FigureRow]

    def accuracy_after_turn(self, run: int) -> dict[int, float | None]:
        """Accuracy after turn k for one run, k -> rate (None: not known yet)."""
        return {
            row.k: row.value if isinstance(row.value, float | int) else None
            for row in self.rows
            if row.run == run and row.metric == "accuracy_after_turn" and row.k is not None
        }

    def to_pandas(self) -> Any:
        """A long DataFrame, one row per number, with a ``run`` column (needs pandas)."""
        import pandas as pd

        return pd.DataFrame([row.__dict__ for row in self.rows])


@dataclass(frozen=True)
class DialogueRow:
    id: int
    run_id: int
    run_name: str
    task_id: int
    prompt_head: str
    student_name: str
    sample_index: int
    outcome: str
    end_reason: str
    first_correct_turn: int | None
    num_turns: int
    leaked: bool
    created_at: str


@dataclass(frozen=True)
class Turn:
    index: int
    round: int
    role: str
    kind: str
    text: str
    private_context: dict[str, Any]
    extracted_answer: str
    is_correct: bool | None
    score: float | None
    leak_flag: bool
    move_valid: bool | None = None
    move_consistent: bool | None = None


@dataclass(frozen=True)
class Dialogue:
    id: int
    run_id: int
    run_name: str
    task_id: int
    task_prompt: str
    task_reference: Any
    sample_index: int
    seed: int
    outcome: str
    end_reason: str
    first_correct_turn: int | None
    num_turns: int
    training_step: int | None
    turns: list[Turn] = field(default_factory=list)

    @classmethod
    def parse(cls, data: dict[str, Any]) -> Dialogue:
        dialogue: Dialogue = _from(cls, {**data, "turns": []})
        return cls(**{**dialogue.__dict__, "turns": [_from(Turn, t) for t in data["turns"]]})


def parse_row(data: dict[str, Any]) -> DialogueRow:
    row: DialogueRow = _from(DialogueRow, data)
    return row


def parse_list(cls: type[Any], items: list[dict[str, Any]]) -> list[Any]:
    return [_from(cls, item) for item in items]


def parse_me(data: dict[str, Any]) -> Me:
    me: Me = _from(Me, data)
    return me


def parse_figures(run: int, rows: list[dict[str, Any]]) -> list[FigureRow]:
    return [_from(FigureRow, {**row, "run": run}) for row in rows]
