"""What the API returns, as typed records (the server's schemas: ``/api/v1/openapi.json``)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, TypeVar

T = TypeVar("T")


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
    """A task set; ``get`` adds its versions: ``locked`` when runs used it (a change then makes
    the next version), ``newest`` the id of a newer version, ``versions`` (id, version) pairs."""

    id: int
    name: str
    version: int
    task_count: int
    description: str = ""
    locked: bool | None = None
    newest: int | None = None
    versions: list[tuple[int, int]] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, data: dict[str, Any]) -> TaskSet:
        task_set: TaskSet = _from(cls, {**data, "versions": []})
        versions = [(v["id"], v["version"]) for v in data.get("versions", [])]
        return cls(**{**task_set.__dict__, "versions": versions})


@dataclass(frozen=True)
class Task:
    """A task as Dialab's own JSONL holds it; ``reference`` is private (what the verifier and
    the teacher see)."""

    id: int
    position: int
    prompt: str
    reference: dict[str, Any]
    verifier_kind: str
    verifier_config: dict[str, Any] = field(default_factory=dict)
    domain: str = ""
    difficulty: float | None = None
    tags: list[str] = field(default_factory=list)
    shards: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    external_id: str = ""


@dataclass(frozen=True)
class TasksAdded:
    """Where added tasks went: ``task_set`` is the set's next version when runs had used it."""

    task_set: TaskSet
    added: int
    new_version: bool


@dataclass(frozen=True)
class TaskImport:
    """An import or generation job; ``task_set`` is set once it succeeded, ``error`` names the
    line where a failed one stopped."""

    id: int
    status: str
    is_finished: bool
    task_set_name: str
    task_set: int | None
    progress_done: int
    progress_total: int | None
    error: str
    mapping: dict[str, str] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Model:
    """A registered model; ``warnings`` (on registering) what the models page would warn of."""

    id: int
    name: str
    backend: str
    location: str = ""
    description: str = ""
    retired: bool = False
    base_model: int | None = None
    trained_by_run: int | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Protocol:
    id: int
    name: str
    mode: str
    max_turns: int
    teacher_sees_reference: bool = True
    teacher_sees_verifier_details: bool = True
    self_correction: str = ""
    regenerate_leaks: int = 0
    judge_turn_kinds: bool = False
    judge_leaks: bool = False
    retired: bool = False
    templates: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Question:
    """A labelling question: ``key`` names it in answers; ``target`` is teacher_turn,
    student_turn or dialogue; ``options`` a choice's options or a rating's [lowest, highest]."""

    id: int
    key: str
    text: str
    kind: str
    target: str
    options: list[Any]
    optional: bool
    guidelines: str = ""


@dataclass(frozen=True)
class Queue:
    id: int
    name: str
    schema_name: str
    guidelines: str
    questions: list[Question]
    total: int
    done: int
    my_total: int
    my_done: int

    @classmethod
    def parse(cls, data: dict[str, Any]) -> Queue:
        queue: Queue = _from(cls, {**data, "questions": []})
        questions = [_from(Question, q) for q in data["questions"]]
        return cls(**{**queue.__dict__, "questions": questions})


@dataclass(frozen=True)
class Item:
    """One of my items in a queue: a dialogue to label (``dialogues.get(item.dialogue)``)."""

    id: int
    queue: int
    dialogue: int
    position: int
    status: str
    skip_reason: str = ""
    submitted_at: datetime | None = None

    @classmethod
    def parse(cls, data: dict[str, Any]) -> Item:
        item: Item = _from(cls, data)
        return cls(**{**item.__dict__, "submitted_at": _when(data.get("submitted_at"))})


@dataclass(frozen=True)
class Answer:
    """An answer to the question ``question`` (its key) about the turn ``turn`` (its index in
    the dialogue; None: the whole dialogue). ``value``: a rating, an option, a list of options,
    True or False, or text."""

    question: str
    value: Any
    turn: int | None = None


@dataclass(frozen=True)
class Label:
    id: int
    schema_name: str
    question: str
    dialogue: int
    turn: int | None
    author: str
    value: Any
    is_draft: bool
    source: str
    updated_at: str = ""


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
        """A long DataFrame, one row per number, with a ``run`` column (needs pandas); ``k``,
        ``successes`` and ``n`` are whole numbers, empty where a row has none."""
        import pandas as pd

        table = pd.DataFrame([row.__dict__ for row in self.rows])
        for column in ("k", "successes", "n"):
            table[column] = table[column].astype("Int64")
        return table


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


def parse_list(cls: type[T], items: list[dict[str, Any]]) -> list[T]:
    return [_from(cls, item) for item in items]


def parse_one(cls: type[T], item: dict[str, Any]) -> T:
    parsed: T = _from(cls, item)
    return parsed


def parse_me(data: dict[str, Any]) -> Me:
    me: Me = _from(Me, data)
    return me


def parse_figures(run: int, rows: list[dict[str, Any]]) -> list[FigureRow]:
    return [_from(FigureRow, {**row, "run": run}) for row in rows]


@dataclass(frozen=True)
class Point:
    """Accuracy after turn ``turn`` with its 95% interval; ``n``: dialogues, or seeds for a line
    of several."""

    turn: int
    value: float | None
    low: float | None
    high: float | None
    n: int


@dataclass(frozen=True)
class Gap:
    """A line's difference from the baseline after turn ``turn``: its 95% interval, p-value,
    ``method`` (paired over ``tasks`` shared tasks, or unpaired) and ``note`` (why no
    interval)."""

    turn: int
    value: float
    low: float | None
    high: float | None
    p_value: float | None
    method: str
    tasks: int
    note: str = ""


@dataclass(frozen=True)
class Line:
    """A line of a comparison: one configuration, its seeds pooled (or one run)."""

    key: str
    label: str
    runs: list[int]
    seeds: list[int]
    max_turns: int
    interval: str
    partial: bool
    held_out: bool
    training_horizon: int | None
    points: list[Point]
    gaps: list[Gap]
    feedback_use: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def parse(cls, data: dict[str, Any]) -> Line:
        line: Line = _from(cls, {**data, "points": [], "gaps": []})
        return cls(**{
            **line.__dict__,
            "points": [_from(Point, p) for p in data["points"]],
            "gaps": [_from(Gap, g) for g in data["gaps"]],
        })  # fmt: skip


@dataclass(frozen=True)
class Comparison:
    """Runs compared as the compare page compares them: ``baseline`` is the key of the line the
    others' ``gaps`` are measured from; ``differences`` (setting, values per line)."""

    baseline: str
    lines: list[Line]
    differences: list[tuple[str, list[str]]]
    notes: list[str]

    @classmethod
    def parse(cls, data: dict[str, Any]) -> Comparison:
        return cls(
            baseline=data["baseline"],
            lines=[Line.parse(line) for line in data["lines"]],
            differences=[(d["setting"], d["values"]) for d in data["differences"]],
            notes=data["notes"],
        )

    def to_pandas(self) -> Any:
        """A long DataFrame: one row per line and turn, with the accuracy after that turn, its
        interval, and the gap from the baseline (empty on the baseline's rows). Needs pandas."""
        import pandas as pd

        rows = []
        for line in self.lines:
            gaps = {gap.turn: gap for gap in line.gaps}
            for point in line.points:
                gap = gaps.get(point.turn)
                rows.append({
                    "line": line.label, "key": line.key, "turn": point.turn,
                    "value": point.value, "low": point.low, "high": point.high, "n": point.n,
                    "gap": gap.value if gap else None, "gap_low": gap.low if gap else None,
                    "gap_high": gap.high if gap else None, "p_value": gap.p_value if gap else None,
                })  # fmt: skip
        return pd.DataFrame(rows)
