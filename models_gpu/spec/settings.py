"""Typed, bounded settings: a backend's parameters, a generator family's knobs, a verifier's
options. Each is a tuple of ``Setting``; ``read_settings`` checks a stored mapping against one
and fills in the defaults, ``settings_problems`` says what is wrong for a form to show.

An unknown name is always an error: a misspelt option (``temprature``) silently falling back to
its default would quietly change a research result.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

SettingKind = Literal["int", "float", "bool", "str", "choice", "list"]


class Problem(NamedTuple):
    """Something wrong, and the field (of a form, a protocol, a run) it is about."""

    field: str
    message: str


class SettingsError(ValueError):
    """Values that do not fit their schema; ``problems`` lists each one."""

    def __init__(self, owner: str, problems: list[str]) -> None:
        super().__init__(f"{owner}: " + "; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Setting:
    """One named value and what it may be.

    kind: int | float | bool | str | choice | list (of strings).
    default: what an absent value means; None with ``required`` off means "unset" (the library
        underneath decides).
    low, high: the range of an int or float, or the length of a str; ``low_open`` makes the
        lower bound exclusive.
    choices: the allowed values of a ``choice``.
    pattern: a regular expression a ``str`` must match in full; ``pattern_help`` says it in words.
    optional: None is accepted as a value (meaning "unset").
    conceal: a problem never quotes the value (it may be a secret pasted in the wrong place).
    """

    name: str
    kind: SettingKind
    help: str
    default: Any = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] = ()
    pattern: str = ""
    pattern_help: str = ""
    required: bool = False
    optional: bool = False
    conceal: bool = False

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` for this setting, or None."""
        if value is None and self.optional:
            return None
        if self.kind == "bool":
            return (
                None
                if isinstance(value, bool)
                else f"{self.name} must be true or false{self._got(value)}"
            )
        if self.kind == "choice":
            if value in self.choices:
                return None
            return f"{self.name} must be one of {', '.join(self.choices)} (got {value!r})"
        if self.kind == "list":
            if isinstance(value, list) and all(isinstance(item, str) for item in value):
                return None
            return f"{self.name} must be a list of strings (got {value!r})"
        if self.kind == "str":
            return self._str_problem(value)
        return self._number_problem(value)

    def _str_problem(self, value: Any) -> str | None:
        if not isinstance(value, str):
            return f"{self.name} must be a string{self._got(value)}"
        if self.pattern and not re.fullmatch(self.pattern, value):
            wanted = self.pattern_help or f"like {self.pattern}"
            return f"{self.name} must be {wanted}{self._got(value)}"
        if not self._in_range(len(value)):
            return f"{self.name} must have a length {self.bounds()} (got {len(value)})"
        return None

    def _got(self, value: Any) -> str:
        return "" if self.conceal else f" (got {value!r})"

    def _number_problem(self, value: Any) -> str | None:
        integer = self.kind == "int"
        number = isinstance(value, int) if integer else isinstance(value, int | float)
        if isinstance(value, bool) or not number or not math.isfinite(value):
            kind = "a whole number" if integer else "a finite number"
            return f"{self.name} must be {kind} (got {value!r})"
        if not self._in_range(value):
            return f"{self.name} must be {self.bounds()} (got {value!r})"
        return None

    def _in_range(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or value <= self.high

    def bounds(self) -> str:
        """The range in words: "at least 1", "more than 0 and at most 1", ..."""
        low = (
            ""
            if self.low is None
            else f"{'more than' if self.low_open else 'at least'} {self.low:g}"
        )
        high = "" if self.high is None else f"at most {self.high:g}"
        return " and ".join(part for part in (low, high) if part) or "any value"

    def summary(self) -> str:
        """What the value may be and what it is when not given, in words (for pages)."""
        kinds = {"int": "a whole number", "float": "a number", "bool": "true or false"}
        kinds |= {"str": "text", "choice": " | ".join(self.choices), "list": "a list of text"}
        parts = [kinds[self.kind]]
        if self.kind in ("int", "float") and (self.low is not None or self.high is not None):
            parts.append(self.bounds())
        if self.pattern_help:
            parts.append(self.pattern_help)
        if self.required:
            parts.append("required")
        elif self.default is not None:
            parts.append(f"default {json.dumps(self.default)}")
        return ", ".join(parts)

    def normalise(self, value: Any) -> Any:
        """A valid value in its canonical type (a float setting given 1 is 1.0)."""
        if self.kind == "float" and value is not None:
            return float(value)
        return value


def settings_problems(
    values: Mapping[str, Any], schema: Iterable[Setting], *, noun: str = "setting"
) -> list[str]:
    """Every problem with ``values``: unknown names, missing required ones, bad values
    (``noun`` is what the names are called in messages: setting, parameter, knob)."""
    by_name = {setting.name: setting for setting in schema}
    problems = []
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        problems.append(
            f"unknown {noun}(s) {', '.join(unknown)}; known: {', '.join(by_name) or 'none'}"
        )
    for name, setting in by_name.items():
        if name not in values:
            if setting.required:
                problems.append(f"{name} is required")
            continue
        problem = setting.problem(values[name])
        if problem:
            problems.append(problem)
    return problems


def read_settings(
    values: Mapping[str, Any], schema: Iterable[Setting], *, owner: str, noun: str = "setting"
) -> dict[str, Any]:
    """Every setting of ``schema``: the value given, else its default; ``SettingsError`` (whose
    message starts with ``owner``) when anything is wrong."""
    schema = tuple(schema)
    problems = settings_problems(values, schema, noun=noun)
    if problems:
        raise SettingsError(owner, problems)
    return {
        setting.name: setting.normalise(values.get(setting.name, setting.default))
        for setting in schema
    }
