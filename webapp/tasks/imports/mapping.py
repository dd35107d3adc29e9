"""Record -> task: which source field fills which task field, value conversion, validation.

A :class:`FieldMapping` (chosen in the mapping step, or given to ``import_tasks``) builds a
:class:`Task` from a record and names the line and the field of the first problem it finds;
:func:`build_dialab_task` takes a record of Dialab's own export as it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from models_gpu.spec.verifiers import reference_problems, verifier_config_problems
from webapp.tasks import bounds
from webapp.tasks.imports.errors import TaskImportError
from webapp.tasks.models import Task
from webapp.tasks.services import TASK_CONTENT_FIELDS

# Fields a source column can fill. answer/tests/entry_point/solution/prompt_prefix go into
# Task.reference (prompt_prefix: a code task's own code, e.g. HumanEval's function head);
# tests_setup is code the tests need first (MBPP's test_setup_code), put before the tests.
MAPPABLE_FIELDS = (
    "prompt",
    "answer",
    "tests",
    "tests_setup",
    "entry_point",
    "solution",
    "prompt_prefix",
    "shards",
    "verifier_kind",
    "domain",
    "difficulty",
    "tags",
    "external_id",
    "metadata",
)
REFERENCE_FIELDS = ("answer", "tests", "entry_point", "solution", "prompt_prefix")
# Fields a constant can fill when the source does not have them.
DEFAULTABLE_FIELDS = ("verifier_kind", "domain", "difficulty", "tags")
# Dialab's own JSONL carries exactly the fields that make a task what it is.
DIALAB_FIELDS = TASK_CONTENT_FIELDS


def lookup(record: dict[str, Any], path: str) -> Any:
    """A value by key, or by dotted path into nested objects and lists ("meta.level",
    "answers.0"). A key that itself contains dots wins over the path. Missing: None."""
    if path in record:
        return record[path]
    value: Any = record
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _as_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else str(value)


def _as_shards(value: Any) -> list[str]:
    if isinstance(value, str):
        value = bounds.json_loads(value)  # CSV cells hold shards as a JSON array
    if not isinstance(value, list):
        raise ValueError("expected a list of shards")
    if all(isinstance(item, dict) for item in value):
        # Lost-in-Conversation shards: [{"shard_id": 1, "shard_text": "..."}], ordered by id.
        ordered = sorted(value, key=lambda item: item.get("shard_id", 0))
        return [_as_text(item.get("shard_text", item.get("text", ""))) for item in ordered]
    return [_as_text(item) for item in value]


def _as_tags(value: Any) -> list[str]:
    if isinstance(value, str):
        if value.strip().startswith("["):
            value = bounds.json_loads(value)
        else:
            return [tag.strip() for tag in value.split(",") if tag.strip()]
    if not isinstance(value, list):
        raise ValueError("expected a list of tags")
    return [_as_text(tag) for tag in value]


def _as_difficulty(value: Any) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError("not a finite number")
    return number


def _as_verifier_kind(value: Any) -> str:
    kind = _as_text(value).strip()
    if kind not in Task.VerifierKind.values:
        raise ValueError(
            f"unknown verifier {kind!r} (one of {', '.join(Task.VerifierKind.values)})"
        )
    return kind


def _max_length(limit: int) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        text = _as_text(value).strip()
        if len(text) > limit:
            raise ValueError(f"longer than {limit} characters")
        return text

    return convert


def _as_tests(value: Any) -> Any:
    """Tests as the code verifier reads them, Python source: a list of test statements (MBPP's
    ``test_list``) becomes one per line. Anything else is left for the reference check."""
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        return "\n".join(value)
    return value


def _as_metadata(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        value = bounds.json_loads(value)
    if not isinstance(value, dict):
        raise ValueError("expected an object")
    return value


CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "shards": _as_shards,
    "tags": _as_tags,
    "difficulty": _as_difficulty,
    "verifier_kind": _as_verifier_kind,
    "domain": _max_length(64),
    "external_id": _max_length(200),
    "metadata": _as_metadata,
    "tests": _as_tests,
    "tests_setup": _as_tests,
}


def check_reference(
    where: str, kind: str, reference: dict[str, Any], origin: Callable[[str], str]
) -> None:
    """Refuse a record whose reference its verifier cannot check, with the same rule (and
    words) as the task editor: ``models_gpu.spec.verifiers.reference_problems``. ``origin``
    names where a reference field came from in the source."""
    problems = reference_problems(kind, reference)
    if problems:
        first = problems[0]
        raise TaskImportError(f"{where}: field {origin(first.field)}: {first.message}")


@dataclass(frozen=True)
class FieldMapping:
    """Task field -> source column or key (dotted paths reach into nested JSON), plus constant
    defaults for fields the source lacks. ``column_word`` names source fields in messages."""

    columns: dict[str, str]
    defaults: dict[str, Any] = field(default_factory=dict)
    column_word: str = "key"

    def problems(self) -> list[str]:
        """What is wrong with the mapping itself, before any record is read."""
        found = []
        unknown = set(self.columns) - set(MAPPABLE_FIELDS)
        if unknown:
            found.append(f"unknown task field(s): {', '.join(sorted(unknown))}")
        unknown_defaults = set(self.defaults) - set(DEFAULTABLE_FIELDS)
        if unknown_defaults:
            found.append(f"no default allowed for: {', '.join(sorted(unknown_defaults))}")
        if not self.columns.get("prompt"):
            found.append("map a source field to 'prompt'")
        if not (self.columns.get("answer") or self.columns.get("tests")):
            found.append("map a source field to 'answer' or to 'tests' (the reference)")
        for name, value in self.defaults.items():
            if name in CONVERTERS and not is_blank(value):
                try:
                    CONVERTERS[name](value)
                except (ValueError, TypeError) as error:
                    found.append(f"default for '{name}': {error}")
        return found

    def _origin(self, name: str) -> str:
        return f"(mapped from {self.column_word} '{self.columns[name]}')"

    def _field_origin(self, name: str) -> str:
        """A task field and where it comes from: "'answer' (mapped from column 'a')"."""
        if self.columns.get(name):
            return f"'{name}' {self._origin(name)}"
        return f"'{name}' (not mapped)"

    def build(self, where: str, record: dict[str, Any], position: int) -> Task:
        values: dict[str, Any] = {}
        for name, source in self.columns.items():
            if not source:
                continue
            value = lookup(record, source)
            if is_blank(value):
                continue
            too_large = bounds.field_too_large(value)
            if too_large:
                raise TaskImportError(f"{where}: field '{name}' {self._origin(name)} {too_large}")
            converter = CONVERTERS.get(name)
            if converter is not None:
                try:
                    value = converter(value)
                except (ValueError, TypeError) as error:
                    raise TaskImportError(
                        f"{where}: field '{name}' {self._origin(name)}: {error}"
                    ) from None
            values[name] = value
        for name, value in self.defaults.items():
            if name not in values and not is_blank(value):
                values[name] = CONVERTERS[name](value) if name in CONVERTERS else value
        if "prompt" not in values:
            raise TaskImportError(
                f"{where}: missing required field 'prompt' {self._origin('prompt')}"
            )
        # Answers stay lists or objects when they are (multiple choice); scalars become text.
        reference = {
            name: values[name] if isinstance(values[name], list | dict) else _as_text(values[name])
            for name in REFERENCE_FIELDS
            if name in values
        }
        if isinstance(reference.get("tests"), str) and isinstance(values.get("tests_setup"), str):
            reference["tests"] = f"{values['tests_setup']}\n{reference['tests']}"
        if "answer" not in reference and "tests" not in reference:
            mapped = [name for name in ("answer", "tests") if self.columns.get(name)]
            name = mapped[0] if mapped else "answer"
            origin = self._origin(name) if mapped else "(not mapped)"
            raise TaskImportError(f"{where}: missing required field '{name}' {origin}")
        default_kind = Task.VerifierKind.CODE if "tests" in reference else Task.VerifierKind.EXACT
        verifier_kind = values.get("verifier_kind", default_kind)
        check_reference(where, verifier_kind, reference, self._field_origin)
        return Task(
            position=position,
            prompt=_as_text(values["prompt"]),
            reference=reference,
            verifier_kind=verifier_kind,
            domain=values.get("domain", ""),
            difficulty=values.get("difficulty"),
            tags=values.get("tags", []),
            shards=values.get("shards", []),
            metadata=values.get("metadata", {}),
            external_id=values.get("external_id", ""),
        )


def build_dialab_task(where: str, record: dict[str, Any], position: int) -> Task:
    """A line of Dialab's own export: every task field by name, taken as it is."""
    unknown = set(record) - set(DIALAB_FIELDS)
    if unknown:
        raise TaskImportError(f"{where}: unknown field(s) {bounds.names_text(sorted(unknown))}")
    prompt = record.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise TaskImportError(f"{where}: missing required field 'prompt'")
    reference = record.get("reference")
    if not isinstance(reference, dict) or not ({"answer", "tests"} & set(reference)):
        raise TaskImportError(
            f"{where}: missing required field 'reference' (an object with 'answer' or 'tests')"
        )
    checks: list[tuple[str, type | tuple[type, ...]]] = [
        ("verifier_config", dict),
        ("tags", list),
        ("shards", list),
        ("metadata", dict),
        ("external_id", str),
        ("domain", str),
        ("difficulty", (int, float, type(None))),
        ("position", int),
    ]
    for name, kind in checks:
        if name in record and not isinstance(record[name], kind):
            raise TaskImportError(f"{where}: field '{name}' has the wrong type")
    sized = [("prompt", prompt), *((f"reference.{key}", value) for key, value in reference.items())]
    sized += [
        (name, record[name])
        for name in ("verifier_config", "tags", "shards", "metadata")
        if name in record
    ]
    for name, value in sized:
        too_large = bounds.field_too_large(value)
        if too_large:
            raise TaskImportError(f"{where}: field '{name}' {too_large}")
    try:
        kind_name = _as_verifier_kind(record.get("verifier_kind", Task.VerifierKind.EXACT))
        domain = _max_length(64)(record.get("domain", ""))
        external_id = _max_length(200)(record.get("external_id", ""))
    except ValueError as error:
        raise TaskImportError(f"{where}: {error}") from None
    check_reference(where, kind_name, reference, lambda name: f"'reference.{name}'")
    config_problems = verifier_config_problems(kind_name, record.get("verifier_config", {}))
    if config_problems:
        problem = config_problems[0]
        raise TaskImportError(
            f"{where}: field 'verifier_config': the {kind_name} verifier: {problem}"
        )
    difficulty = record.get("difficulty")
    return Task(
        position=record.get("position", position),
        prompt=prompt,
        reference=reference,
        verifier_kind=kind_name,
        verifier_config=record.get("verifier_config", {}),
        domain=domain,
        difficulty=None if difficulty is None else float(difficulty),
        tags=record.get("tags", []),
        shards=record.get("shards", []),
        metadata=record.get("metadata", {}),
        external_id=external_id,
    )
