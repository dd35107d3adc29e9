"""The label schemas every installation starts with (created by migration 0004).

``ensure_default_schemas`` takes the model classes so the data migration can pass its historical
models; it is idempotent (a schema that exists, by name, is left as the researchers edited it).
"""

from __future__ import annotations

from typing import Any

HELPFULNESS_GUIDE = """\
How much does this feedback help the student reach the answer **on their own**?

- **5**: pinpoints the mistake and how to think about it, without giving the answer.
  *Example*: "Check the carry from the units column."
- **3**: relevant but vague. *Example*: "Double-check your arithmetic."
- **1**: no help, misleading, or off-topic.
"""

KIND_GUIDE = """\
- **hint**: a nudge towards the method ("think about the carry").
- **Socratic question**: asks the student something that leads them ("what is 7 + 5?").
- **points at the error**: says where the attempt went wrong, not how to fix it.
- **gives the answer**: states or all but states the answer.
- **wrong**: the feedback is incorrect.
"""

DEFAULT_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "Feedback quality",
        "guidelines": (
            "Label each **teacher** turn. The teacher saw the reference answer and the "
            "verifier's details (open *what the teacher privately saw*); it must help without "
            "revealing the answer."
        ),
        "questions": [
            {
                "key": "helpfulness",
                "text": "How helpful is this feedback?",
                "kind": "rating",
                "target": "teacher_turn",
                "options": [1, 5],
                "guidelines": HELPFULNESS_GUIDE,
            },
            {
                "key": "correct",
                "text": "Is the feedback correct?",
                "kind": "yes_no",
                "target": "teacher_turn",
                "guidelines": "Yes when everything the teacher states is true.",
            },
            {
                "key": "reveals_answer",
                "text": "Does it reveal the answer?",
                "kind": "yes_no",
                "target": "teacher_turn",
                "prefill": "leak_flag",
                "guidelines": (
                    "Pre-filled from the leak detector: **confirm or correct it**. Yes when a "
                    "student could copy the final answer from the feedback."
                ),
            },
            {
                "key": "feedback_kind",
                "text": "What kind of feedback is it?",
                "kind": "single_choice",
                "target": "teacher_turn",
                "options": [
                    "hint",
                    "Socratic question",
                    "points at the error",
                    "gives the answer",
                    "wrong",
                ],
                "guidelines": KIND_GUIDE,
            },
        ],
    },
    {
        "name": "Student behaviour",
        "guidelines": "Label each **student** turn: how the student used the conversation.",
        "questions": [
            {
                "key": "premature_attempt",
                "text": "Is this a premature answer attempt?",
                "kind": "yes_no",
                "target": "student_turn",
                "guidelines": (
                    "Yes when the student answers before it has what it needs (for example "
                    "before asking about an unclear instruction)."
                ),
            },
            {
                "key": "useful_question",
                "text": "Did the student ask a useful question?",
                "kind": "yes_no",
                "target": "student_turn",
                "guidelines": "Yes when the turn asks something whose answer moves it forward.",
            },
            {
                "key": "used_feedback",
                "text": "Did the student use the feedback?",
                "kind": "yes_no",
                "target": "student_turn",
                "guidelines": (
                    "Yes when the turn acts on the teacher's previous feedback. "
                    '*Example*: after "check the carry", it redoes the carry.'
                ),
            },
        ],
    },
]


def ensure_default_schemas(*, schema_model: Any, question_model: Any) -> int:
    """Create the default schemas that do not exist yet; return how many were created."""
    created = 0
    for spec in DEFAULT_SCHEMAS:
        schema, is_new = schema_model.objects.get_or_create(
            name=spec["name"], defaults={"guidelines": spec["guidelines"]}
        )
        if not is_new:
            continue
        created += 1
        for position, question in enumerate(spec["questions"]):
            question_model.objects.create(
                schema=schema,
                position=position,
                key=question["key"],
                text=question["text"],
                kind=question["kind"],
                target=question["target"],
                options=question.get("options", []),
                guidelines=question.get("guidelines", ""),
                prefill=question.get("prefill", ""),
            )
    return created
