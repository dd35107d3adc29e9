"""A frozen configuration (a run's ``config`` JSON) as people read it: settings by section,
prompt templates as text, and one dotted name per setting for comparing configurations."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

NOT_SET = "—"
# Sections whose values are long texts shown as they are (one box each), not as table cells.
TEXT_SECTIONS = ("templates",)


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """``{"protocol": {"max_turns": 5}}`` → ``{"protocol.max_turns": "5"}``: texts as they are,
    nothing (a role not played) as ``NOT_SET``, everything else as JSON."""
    if isinstance(value, Mapping) and value:
        flat: dict[str, str] = {}
        for key, item in value.items():
            flat.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    if value is None:
        return {prefix: NOT_SET}
    return {prefix: value if isinstance(value, str) else json.dumps(value, sort_keys=True)}


@dataclass(frozen=True)
class Section:
    title: str
    settings: list[tuple[str, str]]
    texts: list[tuple[str, str]]  # (name, text): prompt templates


def _title(key: str) -> str:
    return key.replace("_", " ").capitalize()


def config_sections(config: Mapping[str, Any]) -> list[Section]:
    """The top-level settings first (samples, seed, ...), then one section per part (task set,
    protocol, each role); a role that is not played is left out."""
    top = [(_title(key), flatten(value)[""]) for key, value in config.items()
           if not isinstance(value, Mapping) and value is not None]  # fmt: skip
    sections = [Section("Run", top, [])] if top else []
    for key, value in config.items():
        if not isinstance(value, Mapping):
            continue
        settings, texts = [], []
        for name, item in value.items():
            if name in TEXT_SECTIONS and isinstance(item, Mapping):
                texts += [(template, str(text)) for template, text in item.items()]
            else:
                settings += [(f"{_title(name)}{path.removeprefix(name)}", text)
                             for path, text in flatten(item, name).items()]  # fmt: skip
        sections.append(Section(_title(key), settings, texts))
    return sections
