"""Export transcripts with their turns, verdicts and labels: JSONL, or a Hugging Face ``datasets``
dataset saved to disk (or zipped, for a download).

The dialogues are the ones the transcript list shows for the same query string (the list's
form, filters and selector), exported in primary-key order. Memory stays flat in the size of the
export: the dialogues are read with ``.iterator(chunk_size=...)`` (a server-side cursor on
PostgreSQL), and for each chunk of them the turns and the labels are fetched with one query each
— 1 + 2 × chunks queries in all, whatever a chunk holds.

Private context: unless ``include_private`` is set, nothing the teacher privately saw appears
anywhere in the output — no turn's ``private_context`` or ``verdict_details``, no task
``reference``. Those columns are not even read from the database.

One record (a JSONL line) is::

    {"id", "run": {"id", "name", "config_hash", "student", "teacher", "protocol"},
     "task": {"id", "external_id", "prompt", "domain", "difficulty", ["reference"]},
     "sample_index", "seed", "outcome", "first_correct_turn", "num_turns", "end_reason",
     "ended_by", "end_note",   # who ended it by hand, and why (end reason "ended_by_person")
     "turns": [{"index", "message_number", "round", "role", "kind", "text",
                "extracted_answer", "is_correct", "score", "move_valid", "move_consistent",
                "move_chance", "verdict_sandbox",
                ["verdict_details", "private_context"], "leak_flag", "prompt_tokens",
                "completion_tokens", "latency_ms", "labels": [LABEL, ...]}, ...],
     "labels": [LABEL, ...]}      # labels of the whole dialogue
    LABEL = {"schema", "question", "value", "author", "updated_at"}

A turn's numbers are the pages' (webapp/dialogues/numbering.py): ``index`` is its place from 0,
``message_number`` (``index + 1``) the "message #n" every page shows and the dialogue page's
``#message-<n>`` anchor, and ``round`` the turn k of "Teacher · turn k · message #n" (and of
``first_correct_turn`` and ``num_turns``). Labels are what the annotators gave: submitted, and
never a suggestion nobody confirmed.

``move_valid``, ``move_consistent`` and ``move_chance`` are the feedback-use check of a judged
student move of a task whose feedback can be checked (``webapp.metrics.figures``): valid, agreeing
with every earlier verdict (null on the dialogue's first move), and the share of valid moves that
would have agreed (null where not countable); all null on other turns and on dialogues played
before feedback use was measured.

``verdict_sandbox`` is how a code verdict's candidate ran: "bubblewrap", "none" (unsandboxed,
``DIALAB_SANDBOX=none``), or null for verdicts that ran no code. It is exported with or without
the private context, so an unsandboxed verdict is marked wherever it goes.

In the Hugging Face dataset a label's value keeps its type, as in the JSONL. An Arrow column
holds one type, and a label's value is a rating (a whole number), a yes/no (a boolean), a choice
or free text (a string) or a multiple choice (a list of strings), so a label has one typed column
per kind of value and exactly one of them is set (the others are null): ``value_int`` (4),
``value_bool`` (true), ``value_text`` ("points at the error"), ``value_list`` (["hint"]), and
``value_json`` (JSON text) only for a value of any other shape, which Dialab's forms never store.
The free-form JSON the teacher privately saw (``reference``, ``verdict_details``,
``private_context``) has no fixed shape, so it is stored JSON-encoded as strings and the schema is
the same whatever it holds. ``hf_row_decode`` turns a row back into the JSONL record.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

from django.db.models import QuerySet
from django.db.models.fields.json import KT
from django.http import QueryDict
from django.utils import timezone

from webapp.annotations.models import Annotation
from webapp.annotations.selectors import given_labels
from webapp.dialogues.models import Dialogue, Turn
from webapp.dialogues.numbering import message_number
from webapp.transcripts import selectors
from webapp.transcripts.filters import DialogueFilters
from webapp.transcripts.forms import DialogueFilterForm

EXPORT_CHUNK = 500

# Query-string parameters that choose how to export, not what: never read as filters.
OPTION_PARAMS = ("format", "include_private")
# Parameters of the list page that do not select: pagination, and the sort (an export is always
# in primary-key order).
IGNORED_PARAMS = ("page", "sort")

# record key → ORM path, in record order.
_RUN_FIELDS = {
    "id": "run_id",
    "name": "run__name",
    "config_hash": "run__config_hash",
    "student": "run__student__name",
    "teacher": "run__teacher__name",
    "protocol": "run__protocol__name",
}
_TASK_FIELDS = {
    "id": "task_id",
    "external_id": "task__external_id",
    "prompt": "task__prompt",
    "domain": "task__domain",
    "difficulty": "task__difficulty",
}
_TASK_PRIVATE_FIELDS = {"reference": "task__reference"}
_DIALOGUE_FIELDS = (
    "sample_index",
    "seed",
    "outcome",
    "first_correct_turn",
    "num_turns",
    "end_reason",
    "ended_by",
    "end_note",
)
_TURN_FIELDS_BEFORE_PRIVATE = (
    "index",
    "message_number",  # computed: index + 1, as pages number messages
    "round",
    "role",
    "kind",
    "text",
    "extracted_answer",
    "is_correct",
    "score",
    # Feedback use of a judged move (null where not checked: webapp.dialogues.models.Turn).
    "move_valid",
    "move_consistent",
    "move_chance",
)
TURN_PRIVATE_FIELDS = ("verdict_details", "private_context")
# Read from inside verdict_details without reading the rest of it (that is private).
_VERDICT_SANDBOX = KT("verdict_details__sandbox")
_COMPUTED_TURN_FIELDS = ("message_number", "verdict_sandbox")
_TURN_FIELDS_AFTER_PRIVATE = (
    "leak_flag",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
)
_LABEL_FIELDS = {
    "schema": "question__schema__name",
    "question": "question__key",
    "value": "value",
    "author": "author__username",
    "updated_at": "updated_at",
}
# Free-form JSON: JSON-encoded strings in the Hugging Face dataset.
_HF_JSON_TASK_FIELDS = ("reference",)
_HF_JSON_TURN_FIELDS = TURN_PRIVATE_FIELDS
# A label's value in the Hugging Face dataset: one typed column per kind of value, one set.
HF_LABEL_VALUE_COLUMNS = ("value_int", "value_bool", "value_text", "value_list", "value_json")


# -- Which dialogues ---------------------------------------------------------------------------


def filter_query(query: QueryDict | str) -> QueryDict:
    """The query string without the export options and the list's page number: what selects."""
    params = QueryDict(query, mutable=True) if isinstance(query, str) else query.copy()
    for name in (*OPTION_PARAMS, *IGNORED_PARAMS):
        params.pop(name, None)
    return params


def filter_form(query: QueryDict | str) -> DialogueFilterForm:
    """The transcript list's filter form, bound to ``query`` (export options removed). Its
    ``notes`` name the parameters it ignored, as on the list page."""
    return DialogueFilterForm.from_query(filter_query(query))


def unknown_params(query: QueryDict | str) -> list[str]:
    """Parameter names that are neither a filter nor an export option (typing mistakes that the
    list page silently ignores; the management command refuses them)."""
    known = {*DialogueFilterForm.base_fields, *OPTION_PARAMS, *IGNORED_PARAMS}
    params = QueryDict(query) if isinstance(query, str) else query
    return sorted(name for name in params if name not in known)


def filters_from_query(query: QueryDict | str) -> DialogueFilters:
    return filter_form(query).filters()


def export_queryset(*, filters: DialogueFilters) -> QuerySet[Dialogue]:
    """The dialogues of the transcript list for ``filters``, in primary-key order (stable, and
    what the chunks follow), as plain rows: the export needs no model instances."""
    return selectors.dialogue_list(filters=filters).order_by("pk")


def export_count(*, filters: DialogueFilters) -> int:
    return export_queryset(filters=filters).count()


# -- Records -----------------------------------------------------------------------------------


def _chunks(rows: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _submitted_labels() -> QuerySet[Annotation]:
    """Labels that count as given (``given_labels``). Drafts (work in progress an annotator
    has not submitted) never leave Dialab, nor do suggestions nobody confirmed."""
    return given_labels()


def _label_record(row: Mapping[str, Any]) -> dict[str, Any]:
    record = {key: row[path] for key, path in _LABEL_FIELDS.items()}
    record["updated_at"] = timezone.localtime(
        record["updated_at"], timezone.get_fixed_timezone(0)
    ).isoformat()
    return record


def _chunk_records(
    dialogues: list[dict[str, Any]], *, include_private: bool
) -> Iterator[dict[str, Any]]:
    """Records for one chunk of dialogue rows: one query for all their turns, one for all their
    labels."""
    pks = [row["pk"] for row in dialogues]
    turn_fields = (
        *_TURN_FIELDS_BEFORE_PRIVATE,
        "verdict_sandbox",
        *(TURN_PRIVATE_FIELDS if include_private else ()),
        *_TURN_FIELDS_AFTER_PRIVATE,
    )
    stored_fields = [name for name in turn_fields if name not in _COMPUTED_TURN_FIELDS]
    turns_by_dialogue: dict[int, list[dict[str, Any]]] = defaultdict(list)
    turns_by_pk: dict[int, dict[str, Any]] = {}
    for row in (
        Turn.objects.filter(dialogue_id__in=pks)
        .order_by("dialogue_id", "index")
        .values("pk", "dialogue_id", *stored_fields, verdict_sandbox=_VERDICT_SANDBOX)
        .iterator(chunk_size=EXPORT_CHUNK * 20)
    ):
        row["message_number"] = message_number(row["index"])
        record = {name: row[name] for name in turn_fields}
        record["labels"] = []
        turns_by_dialogue[row["dialogue_id"]].append(record)
        turns_by_pk[row["pk"]] = record

    dialogue_labels: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in (
        _submitted_labels()
        .filter(dialogue_id__in=pks)
        .order_by(
            "dialogue_id",
            "question__schema__name",
            "question__position",
            "question__key",
            "author__username",
            "pk",
        )
        .values("dialogue_id", "turn_id", *_LABEL_FIELDS.values())
        .iterator(chunk_size=EXPORT_CHUNK * 20)
    ):
        label = _label_record(row)
        turn = turns_by_pk.get(row["turn_id"]) if row["turn_id"] is not None else None
        if turn is not None:
            turn["labels"].append(label)
        else:
            dialogue_labels[row["dialogue_id"]].append(label)

    task_fields = {**_TASK_FIELDS, **(_TASK_PRIVATE_FIELDS if include_private else {})}
    for row in dialogues:
        yield {
            "id": row["pk"],
            "run": {key: row[path] for key, path in _RUN_FIELDS.items()},
            "task": {key: row[path] for key, path in task_fields.items()},
            **{name: row[name] for name in _DIALOGUE_FIELDS},
            "turns": turns_by_dialogue.get(row["pk"], []),
            "labels": dialogue_labels.get(row["pk"], []),
        }


def dialogue_records(
    *,
    filters: DialogueFilters,
    include_private: bool = False,
    chunk_size: int = EXPORT_CHUNK,
) -> Iterator[dict[str, Any]]:
    """One plain-JSON record per dialogue selected by ``filters``, in primary-key order."""
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    paths = [
        "pk",
        *_RUN_FIELDS.values(),
        *_TASK_FIELDS.values(),
        *(_TASK_PRIVATE_FIELDS.values() if include_private else ()),
        *_DIALOGUE_FIELDS,
    ]
    rows = export_queryset(filters=filters).values(*paths).iterator(chunk_size=chunk_size)
    for chunk in _chunks(rows, chunk_size):
        yield from _chunk_records(chunk, include_private=include_private)


def jsonl_lines(
    *,
    filters: DialogueFilters,
    include_private: bool = False,
    chunk_size: int = EXPORT_CHUNK,
) -> Iterator[str]:
    """The JSONL export, one line (with its newline) per dialogue."""
    for record in dialogue_records(
        filters=filters, include_private=include_private, chunk_size=chunk_size
    ):
        yield json.dumps(record, ensure_ascii=False) + "\n"


def export_filename(*, include_private: bool, extension: str = "jsonl") -> str:
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return f"dialogues-{stamp}{'-private' if include_private else ''}.{extension}"


# -- Hugging Face datasets ---------------------------------------------------------------------


def hf_features(*, include_private: bool = False) -> Any:
    """The dataset's schema, fixed whatever the data holds (so an export of dialogues without
    labels, or with only null scores, has the same columns and types as any other)."""
    from datasets import Features, List, Value

    label = {
        "schema": Value("string"),
        "question": Value("string"),
        # One of these is set, by the value's type (the module's docstring).
        "value_int": Value("int64"),  # a rating
        "value_bool": Value("bool"),  # yes / no
        "value_text": Value("string"),  # a single choice, free text
        "value_list": List(Value("string")),  # a multiple choice
        "value_json": Value("string"),  # anything else, JSON-encoded
        "author": Value("string"),
        "updated_at": Value("string"),  # ISO 8601, UTC
    }
    turn: dict[str, Any] = {
        "index": Value("int32"),
        "message_number": Value("int32"),
        "round": Value("int32"),
        "role": Value("string"),
        "kind": Value("string"),
        "text": Value("string"),
        "extracted_answer": Value("string"),
        "is_correct": Value("bool"),
        "score": Value("float64"),
        "move_valid": Value("bool"),
        "move_consistent": Value("bool"),
        "move_chance": Value("float64"),
        "verdict_sandbox": Value("string"),
    }
    if include_private:
        turn |= {"verdict_details": Value("string"), "private_context": Value("string")}
    turn |= {
        "leak_flag": Value("bool"),
        "prompt_tokens": Value("int64"),
        "completion_tokens": Value("int64"),
        "latency_ms": Value("float64"),
        "labels": List(label),
    }
    task: dict[str, Any] = {
        "id": Value("int64"),
        "external_id": Value("string"),
        "prompt": Value("string"),
        "domain": Value("string"),
        "difficulty": Value("float64"),
    }
    if include_private:
        task["reference"] = Value("string")
    return Features(
        {
            "id": Value("int64"),
            "run": {
                "id": Value("int64"),
                "name": Value("string"),
                "config_hash": Value("string"),
                "student": Value("string"),
                "teacher": Value("string"),
                "protocol": Value("string"),
            },
            "task": task,
            "sample_index": Value("int32"),
            "seed": Value("int64"),
            "outcome": Value("string"),
            "first_correct_turn": Value("int32"),
            "num_turns": Value("int32"),
            "end_reason": Value("string"),
            "ended_by": Value("string"),
            "end_note": Value("string"),
            "turns": List(turn),
            "labels": List(label),
        }
    )


def _encode_fields(item: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    return {
        key: json.dumps(value, ensure_ascii=False) if key in names else value
        for key, value in item.items()
    }


def _decode_fields(item: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    return {
        key: json.loads(value) if key in names and value is not None else value
        for key, value in item.items()
    }


def _label_value_columns(value: Any) -> dict[str, Any]:
    """A label's value as the dataset's typed value columns: the one its type fits, set."""
    columns: dict[str, Any] = dict.fromkeys(HF_LABEL_VALUE_COLUMNS)
    if isinstance(value, bool):  # before int: a bool is an int to Python
        columns["value_bool"] = value
    elif isinstance(value, int):
        columns["value_int"] = value
    elif isinstance(value, str):
        columns["value_text"] = value
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        columns["value_list"] = value
    elif value is not None:
        # Keys sorted: PostgreSQL's jsonb reorders them, and the text must not depend on it.
        columns["value_json"] = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return columns


def _label_value(row: Mapping[str, Any]) -> Any:
    for column in HF_LABEL_VALUE_COLUMNS:
        if row[column] is not None:
            return json.loads(row[column]) if column == "value_json" else row[column]
    return None


def _hf_label(label: dict[str, Any]) -> dict[str, Any]:
    columns = _label_value_columns(label["value"])
    return {key: value for key, value in label.items() if key != "value"} | columns


def _jsonl_label(row: dict[str, Any]) -> dict[str, Any]:
    label = {key: value for key, value in row.items() if key not in HF_LABEL_VALUE_COLUMNS}
    return label | {"value": _label_value(row)}


def hf_row_encode(record: dict[str, Any]) -> dict[str, Any]:
    """A JSONL record as a dataset row: free-form JSON values become JSON strings, and a label's
    value goes to the typed column that fits it."""
    return {
        **record,
        "task": _encode_fields(record["task"], _HF_JSON_TASK_FIELDS),
        "turns": [
            {
                **_encode_fields(turn, _HF_JSON_TURN_FIELDS),
                "labels": [_hf_label(label) for label in turn["labels"]],
            }
            for turn in record["turns"]
        ],
        "labels": [_hf_label(label) for label in record["labels"]],
    }


def hf_row_decode(row: dict[str, Any]) -> dict[str, Any]:
    """A dataset row (as ``load_from_disk(...)[i]`` gives it) back as the JSONL record."""
    return {
        **row,
        "task": _decode_fields(row["task"], _HF_JSON_TASK_FIELDS),
        "turns": [
            {
                **_decode_fields(turn, _HF_JSON_TURN_FIELDS),
                "labels": [_jsonl_label(label) for label in turn["labels"]],
            }
            for turn in row["turns"]
        ],
        "labels": [_jsonl_label(label) for label in row["labels"]],
    }


def _hf_rows(
    filters: DialogueFilters,
    include_private: bool,
    chunk_size: int,
    on_record: Callable[[], None] | None,
) -> Iterator[dict[str, Any]]:
    for record in dialogue_records(
        filters=filters, include_private=include_private, chunk_size=chunk_size
    ):
        yield hf_row_encode(record)
        if on_record is not None:
            on_record()


def save_hf_dataset(
    *,
    filters: DialogueFilters,
    path: str | Path,
    include_private: bool = False,
    chunk_size: int = EXPORT_CHUNK,
    on_record: Callable[[], None] | None = None,
) -> int:
    """Write the export as a Hugging Face dataset with ``save_to_disk(path)``; return how many
    dialogues it holds. ``on_record`` is called once per dialogue written (progress).

    ``Dataset.from_generator`` writes Arrow batches to a scratch cache next to ``path`` (so a
    large export never fills /tmp and is never read from a stale cache: each export gets a
    fresh one with a random fingerprint), then ``save_to_disk`` copies it into place."""
    import datasets

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    features = hf_features(include_private=include_private)
    bars_were_on = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # the caller shows progress through on_record
    scratch = None
    try:
        if not export_queryset(filters=filters).exists():
            # from_generator cannot make a dataset of no rows, and save_to_disk writes no shard
            # for one unless told to; this empty dataset loads back with the same schema.
            empty = datasets.Dataset.from_dict({name: [] for name in features}, features=features)
            empty.save_to_disk(str(target), num_shards=1)
            return 0
        scratch = tempfile.mkdtemp(prefix=".dialab-export-", dir=target.parent)
        dataset = datasets.Dataset.from_generator(
            _hf_rows,
            features=features,
            cache_dir=scratch,
            fingerprint=uuid.uuid4().hex,
            writer_batch_size=chunk_size,
            gen_kwargs={
                "filters": filters,
                "include_private": include_private,
                "chunk_size": chunk_size,
                "on_record": on_record,
            },
        )
        dataset.save_to_disk(str(target))
        count: int = dataset.num_rows
        del dataset  # release the memory map of the scratch files before removing them
        return count
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        if bars_were_on:
            datasets.enable_progress_bars()


class _ChunkSink:
    """A write-only stream that keeps what is written until it is drained: ``zipfile`` writes an
    archive into it (a stream it cannot seek in, so each entry gets a data descriptor), and the
    download hands on each chunk as soon as it is written."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []

    def write(self, data: bytes) -> int:
        self._chunks.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def drain(self) -> Iterator[bytes]:
        chunks, self._chunks = self._chunks, []
        yield from chunks


def hf_dataset_zip(
    *,
    filters: DialogueFilters,
    scratch_root: str | Path,
    folder: str,
    include_private: bool = False,
    chunk_size: int = EXPORT_CHUNK,
    block_size: int = 1 << 20,
) -> Iterator[bytes]:
    """The Hugging Face dataset of ``save_hf_dataset``, as the bytes of a zip archive holding
    its folder ``folder/`` (unzip it, then ``datasets.load_from_disk(folder)``).

    Nothing happens until the first chunk is asked for: then the dataset is written to a scratch
    folder under ``scratch_root``, zipped into the stream block by block, and the scratch
    folder removed when the archive is done or the download is dropped."""
    root = Path(scratch_root)
    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".dialab-download-", dir=root))
    try:
        target = scratch / folder
        save_hf_dataset(
            filters=filters, path=target, include_private=include_private, chunk_size=chunk_size
        )
        sink = _ChunkSink()
        # zipfile writes to a stream without seek or tell; its stubs ask for them.
        with zipfile.ZipFile(sink, "w") as archive:  # type: ignore[call-overload]
            for file in sorted(path for path in target.rglob("*") if path.is_file()):
                entry = zipfile.ZipInfo.from_file(file, f"{folder}/{file.relative_to(target)}")
                entry.compress_type = zipfile.ZIP_DEFLATED
                with file.open("rb") as source, archive.open(entry, "w") as copy:
                    while block := source.read(block_size):
                        copy.write(block)
                        yield from sink.drain()
                yield from sink.drain()
        yield from sink.drain()  # the archive's central directory
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
