"""The student's view: the engine's incremental form is the one training reads."""

from __future__ import annotations

import pytest

from models_gpu.conversation import StudentMessages, student_view
from models_gpu.spec.training import TrainingDialogue
from models_gpu.types import Message
from tests.models_gpu.training.dialogues import didactic, self_critique, sharded


@pytest.mark.parametrize(
    "dialogue",
    [didactic(), sharded(), self_critique()],
    ids=["didactic", "sharded", "self_critique"],
)
def test_the_view_kept_round_by_round_is_the_view_built_at_once(
    dialogue: TrainingDialogue,
) -> None:
    kept = StudentMessages(
        system=dialogue.student_system, task_prompt=dialogue.task_prompt, sharded=dialogue.sharded
    )
    for played in range(len(dialogue.turns) + 1):
        turns = dialogue.turns[:played]
        for instruction in ("", "Critique your last answer."):
            whole = student_view(
                system=dialogue.student_system,
                task_prompt=dialogue.task_prompt,
                sharded=dialogue.sharded,
                turns=turns,
                instruction=instruction,
            )
            assert kept.of(turns, instruction=instruction) == tuple(m.message for m in whole)


def test_the_view_shows_roles_and_never_the_private_context() -> None:
    dialogue = didactic()
    messages = StudentMessages(system="S", task_prompt="T", sharded=False).of(dialogue.turns)
    assert [m.role for m in messages] == ["system", "user"] + ["assistant", "user"] * 2 + [
        "assistant"
    ]
    assert messages[:2] == (Message("system", "S"), Message("user", "T"))
    assert not any("secret" in m.content for m in messages)


def test_turns_taken_away_are_refused() -> None:
    dialogue = didactic()
    kept = StudentMessages(system="", task_prompt="T", sharded=False)
    kept.of(dialogue.turns)
    with pytest.raises(ValueError, match="only ever appended"):
        kept.of(dialogue.turns[:2])
