"""Protocols: how a static task becomes a dialogue, and which roles each one needs.

``ProtocolSpec`` is what the engine runs (``models_gpu.engine`` describes each mode);
``protocol_problems`` and ``role_problems`` are the rules the protocol form, the run form, the
launch service and the engine all check, so none of them can disagree.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, Literal

from models_gpu.spec.settings import Problem
from models_gpu.spec.templates import TEMPLATE_NAMES

ProtocolMode = Literal["didactic", "sharded", "self_correction", "single_turn"]
SelfCorrectionStyle = Literal["nudge", "critique"]
ModelRole = Literal["student", "teacher", "user_simulator", "judge"]

MODES: Mapping[str, str] = {
    "didactic": "Didactic (teacher feedback)",
    "sharded": "Sharded (underspecified, one shard per turn)",
    "self_correction": "Self-correction (no teacher)",
    "single_turn": "Single-turn baseline",
}
SELF_CORRECTION_STYLES: Mapping[str, str] = {
    "nudge": "Nudge (a fixed 'try again' message)",
    "critique": "Critique (the student critiques its own answer first)",
}
ROLES: tuple[ModelRole, ...] = ("student", "teacher", "user_simulator", "judge")
MAX_TURNS = 50
MAX_REGENERATIONS = 10


@dataclass(frozen=True)
class ProtocolSpec:
    """How dialogues run.

    mode: didactic | sharded | self_correction | single_turn (``MODES``).
    max_turns: the most student replies (rounds) a dialogue gets; single_turn has exactly 1.
    teacher_sees_reference / teacher_sees_verifier_details: the teacher's private context.
    templates: overrides of ``spec.templates.DEFAULT_TEMPLATES`` by name; missing names use the
        defaults, an empty string switches a system prompt off. A run's frozen configuration
        holds every template in full.
    self_correction: after a wrong attempt, "nudge" (a fixed message) or "critique" (the student
        critiques its own attempt first).
    regenerate_leaks: how many times a teacher turn flagged as leaking the answer is generated
        again (0: flag only).
    judge_turn_kinds: ambiguous student replies go to the judge model (when one is given).
    judge_leaks: teacher turns the rules did not flag go to the judge model (when one is given).
    id, name: the protocol row the run was launched with (provenance; the engine ignores them).
    """

    mode: ProtocolMode
    max_turns: int
    teacher_sees_reference: bool = True
    teacher_sees_verifier_details: bool = True
    templates: Mapping[str, str] = field(default_factory=dict)
    self_correction: SelfCorrectionStyle = "nudge"
    regenerate_leaks: int = 0
    judge_turn_kinds: bool = False
    judge_leaks: bool = False
    id: int | None = None
    name: str = ""

    @property
    def has_teacher(self) -> bool:
        return self.mode == "didactic"

    @property
    def asks_judge(self) -> bool:
        return self.judge_turn_kinds or self.judge_leaks

    def templates_used(self) -> list[str]:
        """The templates this protocol sends that may not be empty (system prompts may)."""
        used = []
        if self.mode == "self_correction":
            used.append("self_critique" if self.self_correction == "critique" else "nudge")
        if self.judge_turn_kinds:
            used.append("judge_turn_kind")
        if self.judge_leaks:
            used.append("judge_leak")
        return used


# The settings and prompt templates only some modes read, with the modes that read them; every
# other one applies to every mode. The protocol form shows a field only under its modes, and
# ``for_its_mode`` stores a setting its mode never reads at its neutral value.
SETTING_MODES: Mapping[str, tuple[str, ...]] = {
    "max_turns": ("didactic", "sharded", "self_correction"),  # single-turn: exactly 1
    "teacher_sees_reference": ("didactic",),
    "teacher_sees_verifier_details": ("didactic",),
    "self_correction": ("self_correction",),
    "regenerate_leaks": ("didactic",),
    "judge_turn_kinds": ("didactic", "sharded", "self_correction"),
    "judge_leaks": ("didactic",),
}
TEMPLATE_MODES: Mapping[str, tuple[str, ...]] = {
    "teacher_system": ("didactic",),
    "user_simulator_system": ("sharded",),
    "nudge": ("self_correction",),
    "self_critique": ("self_correction",),
    "judge_turn_kind": SETTING_MODES["judge_turn_kinds"],
    "judge_leak": SETTING_MODES["judge_leaks"],
}


def modes_of(name: str) -> tuple[str, ...]:
    """The modes that read the setting or template ``name`` (every mode for most)."""
    return SETTING_MODES.get(name) or TEMPLATE_MODES.get(name) or tuple(MODES)


def _neutral_value(name: str) -> Any:
    """What a setting whose mode never reads it is stored as: ProtocolSpec's default (off),
    and the one turn a single-turn dialogue has."""
    if name == "max_turns":
        return 1
    default = {spec_field.name: spec_field.default for spec_field in fields(ProtocolSpec)}[name]
    assert default is not MISSING, f"{name} needs a neutral value"
    return default


def for_its_mode(protocol: ProtocolSpec) -> ProtocolSpec:
    """``protocol`` with every setting its mode never reads at its neutral value: a setting
    left over from another mode (hidden on the form) neither breaks a rule nor makes two
    protocols that play alike differ."""
    if protocol.mode not in MODES:
        return protocol
    unread: dict[str, Any] = {
        name: _neutral_value(name)
        for name, modes in SETTING_MODES.items()
        if protocol.mode not in modes
    }
    return replace(protocol, **unread)


def protocol_problems(protocol: ProtocolSpec) -> list[Problem]:
    """Every rule ``protocol`` breaks, each with the field it is about (empty: none)."""
    problems = []
    mode, turns = protocol.mode, protocol.max_turns
    if mode not in MODES:
        problems.append(Problem("mode", f"unknown mode {mode!r}; modes: {', '.join(MODES)}"))
    if not 1 <= turns <= MAX_TURNS:
        problems.append(Problem("max_turns", f"max_turns must be between 1 and {MAX_TURNS}."))
    elif mode == "single_turn" and turns != 1:
        problems.append(Problem("max_turns", "A single-turn protocol has exactly 1 turn."))
    elif mode in ("sharded", "self_correction") and turns == 1:
        problems.append(
            Problem(
                "max_turns",
                f"The {MODES[mode]} mode needs at least 2 turns "
                "(use the single-turn mode for one).",
            )
        )
    if protocol.self_correction not in SELF_CORRECTION_STYLES:
        problems.append(
            Problem(
                "self_correction",
                f"self_correction must be one of {', '.join(SELF_CORRECTION_STYLES)}.",
            )
        )
    if not 0 <= protocol.regenerate_leaks <= MAX_REGENERATIONS:
        problems.append(
            Problem(
                "regenerate_leaks", f"regenerate_leaks must be between 0 and {MAX_REGENERATIONS}."
            )
        )
    elif protocol.regenerate_leaks and not protocol.has_teacher:
        problems.append(
            Problem(
                "regenerate_leaks",
                "Only the didactic mode has a teacher whose leaks could be regenerated: set 0.",
            )
        )
    if protocol.judge_leaks and not protocol.has_teacher:
        problems.append(
            Problem("judge_leaks", "Only the didactic mode has teacher turns for a judge to check.")
        )
    if protocol.judge_turn_kinds and mode == "single_turn":
        problems.append(
            Problem(
                "judge_turn_kinds",
                "A single-turn dialogue has one student turn, always an attempt: nothing to judge.",
            )
        )
    return problems + _template_problems(protocol)


def _template_problems(protocol: ProtocolSpec) -> list[Problem]:
    problems = [
        Problem(
            "templates", f"unknown prompt template {name!r}; known: {', '.join(TEMPLATE_NAMES)}"
        )
        for name in sorted(set(protocol.templates) - set(TEMPLATE_NAMES))
    ]
    for name in protocol.templates_used():
        text = protocol.templates.get(name)
        if text is not None and not text.strip():
            problems.append(
                Problem(
                    f"template_{name}",
                    "This protocol uses this template: write it, or paste back the default.",
                )
            )
    return problems


def role_problems(protocol: ProtocolSpec, chosen: Collection[str]) -> list[Problem]:
    """What is wrong with playing ``protocol`` with models in the ``chosen`` roles: a role it
    needs left empty, or a model in a role it never calls."""
    mode_name = protocol.mode.replace("_", "-")
    needs = {
        "student": "Every protocol needs a student model.",
        "teacher": "The didactic protocol needs a teacher model.",
        "user_simulator": "The sharded mode needs a user simulator to reveal the shards.",
    }
    used = {
        "student": True,
        "teacher": protocol.has_teacher,
        "user_simulator": protocol.mode == "sharded",
        "judge": protocol.asks_judge,
    }
    problems = []
    for role in ROLES:
        if used[role] and role in needs and role not in chosen:
            problems.append(Problem(role, needs[role]))
        elif role in chosen and not used[role] and role == "judge":
            problems.append(
                Problem(
                    role,
                    f"The protocol {protocol.name or mode_name} asks no judge anything (its judge "
                    "switches are off): leave this empty.",
                )
            )
        elif role in chosen and not used[role]:
            problems.append(
                Problem(
                    role,
                    f"A {mode_name} protocol has no {role.replace('_', ' ')}: leave this empty.",
                )
            )
    return problems
