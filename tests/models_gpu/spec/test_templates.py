from __future__ import annotations

import pytest

from models_gpu.spec.templates import DEFAULT_TEMPLATES, render_template, resolve_templates

CONTRACT_KEYS = {
    "student_system", "teacher_system", "user_simulator_system", "nudge", "self_critique",
    "judge_turn_kind", "judge_leak",
}  # fmt: skip


def test_the_defaults_cover_every_template_as_plain_strings() -> None:
    assert set(DEFAULT_TEMPLATES) == CONTRACT_KEYS
    assert all(isinstance(text, str) and text.strip() for text in DEFAULT_TEMPLATES.values())
    teacher = DEFAULT_TEMPLATES["teacher_system"].casefold()
    assert "never" in teacher and "answer" in teacher  # the teacher must not reveal the answer


def test_overrides_replace_only_their_keys() -> None:
    templates = resolve_templates({"nudge": "Nope.", "student_system": ""})
    assert templates["nudge"] == "Nope." and templates["student_system"] == ""
    assert templates["teacher_system"] == DEFAULT_TEMPLATES["teacher_system"]
    assert resolve_templates({}) == DEFAULT_TEMPLATES
    with pytest.raises(ValueError, match=r"unknown prompt template\(s\) \['nudge2'\]"):
        resolve_templates({"nudge2": "x"})
    with pytest.raises(ValueError, match="must be a string"):
        resolve_templates({"nudge": 3})  # type: ignore[dict-item]


def test_rendering_fills_known_placeholders_only() -> None:
    text = "Up to {max_turns} turns, {shards_total} shards; \\boxed{x}, {other}, {{max_turns}}."
    assert render_template(text, {"max_turns": 5, "shards_total": 3}) == (
        "Up to 5 turns, 3 shards; \\boxed{x}, {other}, {5}."
    )
    assert render_template("{shards_total}", {"max_turns": 5}) == ""
