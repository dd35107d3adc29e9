"""The protocol's prompt templates: the defaults, and how a protocol overrides them.

A protocol stores the full text of every template (the defaults unless a researcher edited them)
and a run freezes them into its configuration at launch, so editing a default later never
changes an old run. ``ProtocolSpec.templates`` overrides the defaults key by key; a key it leaves
out falls back to ``DEFAULT_TEMPLATES``. An empty string switches a system prompt off.

Templates (who reads them, and when):
    student_system         system prompt of the student, every mode.
    teacher_system         system prompt of the teacher (didactic); it must tell the teacher never
                           to reveal the answer. The teacher's private context (reference,
                           verifier details) is added by the backend, not by this template.
    user_simulator_system  system prompt of a model-backed user simulator (sharded); the unrevealed
                           shards reach it as private context.
    nudge                  the fixed message after a wrong attempt (self-correction, "nudge").
    self_critique          appended as a user message to the student's prompt for the one call in
                           which it critiques its previous attempt (self-correction, "critique").
    judge_turn_kind        system prompt of the judge asked what kind a student reply is; the
                           reply and what it answered follow in a user message.
    judge_leak             system prompt of the judge asked whether a teacher turn gives the answer
                           away; the reference and the teacher's message follow in a user message.

Placeholders: ``{max_turns}`` (every template) and ``{shards_total}`` (sharded dialogues; empty
elsewhere) are filled in. Nothing else in braces is touched, so templates may quote LaTeX
(``\\boxed{...}``) or code freely.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

DEFAULT_TEMPLATES: dict[str, str] = {
    "student_system": (
        "You are a student solving a task. Think briefly, then give your final answer on the "
        "last line as 'The answer is ...'. If the task is unclear, you may ask one question."
    ),
    "teacher_system": (
        "You are a teacher. The student is trying to solve the task you posed. Use the private "
        "information to give short, specific feedback that helps the student find the answer "
        "themselves. Never state or hint at the exact answer."
    ),
    "user_simulator_system": (
        "You are a user who wants help with a task but states it a piece at a time. Reveal "
        "exactly one new piece of information per turn, only the next one, in your own words."
    ),
    "nudge": "That is not right. Check your work and try again.",
    "self_critique": (
        "Before trying again, critique your previous answer: find the mistake, then give a "
        "corrected final answer."
    ),
    "judge_turn_kind": (
        "Classify the assistant's last message as exactly one word: 'attempt' if it gives an "
        "answer to the task, 'question' if it asks for clarification, 'other' otherwise."
    ),
    "judge_leak": (
        "The reference answer is given below. Does the teacher's message state or directly "
        "give away this answer? Reply with exactly one word: 'yes' or 'no'."
    ),
}
TEMPLATE_NAMES: tuple[str, ...] = tuple(DEFAULT_TEMPLATES)
# What each template is for, in a line (the protocol form shows it next to the field).
TEMPLATE_HELP: Mapping[str, str] = {
    "student_system": "System prompt of the student (every mode).",
    "teacher_system": "System prompt of the teacher (didactic mode).",
    "user_simulator_system": "System prompt of the user simulator (sharded mode).",
    "nudge": "What the student is told after a wrong answer (self-correction, nudge style).",
    "self_critique": "Asks the student to critique its answer (self-correction, critique style).",
    "judge_turn_kind": "Asks the judge what kind of turn a student reply is (attempt, question).",
    "judge_leak": "Asks the judge whether a teacher turn gives the answer away.",
}
PLACEHOLDERS: tuple[str, ...] = ("max_turns", "shards_total")

_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


def resolve_templates(overrides: Mapping[str, str]) -> dict[str, str]:
    """Every template: the override where there is one, the default otherwise.

    An unknown name is an error: a misspelt key silently falling back to the default would
    quietly change an experiment.
    """
    unknown = sorted(set(overrides) - set(DEFAULT_TEMPLATES))
    if unknown:
        raise ValueError(
            f"unknown prompt template(s) {unknown}; known templates: {', '.join(TEMPLATE_NAMES)}"
        )
    for name, text in overrides.items():
        if not isinstance(text, str):
            raise ValueError(
                f"prompt template {name!r} must be a string, got {type(text).__name__}"
            )
    return {**DEFAULT_TEMPLATES, **overrides}


def render_template(text: str, values: Mapping[str, object]) -> str:
    """``text`` with each known ``{placeholder}`` replaced; anything else in braces is kept."""
    return _PLACEHOLDER.sub(lambda match: str(values.get(match[1], "")), text)


def render_for_dialogue(
    templates: Mapping[str, str], name: str, *, max_turns: int, shards_total: int
) -> str:
    """Template ``name`` as a dialogue shows it: ``{max_turns}`` is the protocol's limit and
    ``{shards_total}`` the task's number of shards (empty for a task without shards). The engine
    renders its prompts with this, and training rebuilds what the student saw with it."""
    values = {"max_turns": max_turns, "shards_total": shards_total or ""}
    return render_template(resolve_templates(templates)[name], values)
