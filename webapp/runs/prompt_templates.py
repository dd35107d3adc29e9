"""The protocol's default prompt templates, as the web side shows and stores them.

The dialogue engine's defaults live in ``models_gpu.prompts.DEFAULT_TEMPLATES``; the web process
may not import model code, so they are mirrored here and a test
(tests/webapp/test_run_config_templates.py) checks that both say exactly the same. A protocol
stores its full set of templates (the defaults unless a researcher edited them), and a run
freezes them into its config at launch, so editing a default later never changes an old run.
"""

from __future__ import annotations

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

# What each template is for, shown next to its field in the protocol form.
TEMPLATE_HELP: Mapping[str, str] = {
    "student_system": "System prompt of the student (every mode).",
    "teacher_system": "System prompt of the teacher (didactic mode).",
    "user_simulator_system": "System prompt of the user simulator (sharded mode).",
    "nudge": "What the student is told after a wrong answer (self-correction, nudge style).",
    "self_critique": "Asks the student to critique its answer (self-correction, critique style).",
    "judge_turn_kind": "Asks the judge what kind of turn a student reply is (attempt, question).",
    "judge_leak": "Asks the judge whether a teacher turn gives the answer away.",
}


def complete_templates(templates: Mapping[str, str] | None) -> dict[str, str]:
    """Every known template: the stored text where there is one, the default otherwise."""
    stored = dict(templates or {})
    return {name: stored.get(name, default) for name, default in DEFAULT_TEMPLATES.items()}
