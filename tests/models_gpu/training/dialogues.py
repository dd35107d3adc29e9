"""Hand-written stored dialogues for the training tests (``TrainingDialogue`` rows, as the web
side streams them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from models_gpu.spec.results import TurnRow
from models_gpu.spec.training import TrainingConfig, TrainingDialogue
from models_gpu.spec.turns import CRITIQUE_INSTRUCTION_KEY

SYSTEM = "Solve it."
TASK = "What is 12 + 7?"
# Private knowledge the teacher saw: it must never reach a training input.
PRIVATE = {"reference": {"answer": "19"}, "verdict_details": {"hint": "secret carry note"}}


def turn(index: int, round: int, role: str, kind: str, text: str, **extra: Any) -> TurnRow:
    return TurnRow(index=index, round=round, role=role, kind=kind, text=text, **extra)


def didactic(dialogue_id: int = 1, *, leak_first_feedback: bool = False) -> TrainingDialogue:
    """Two wrong attempts, each answered by the teacher, then the right one."""
    return TrainingDialogue(
        dialogue_id=dialogue_id,
        student_system=SYSTEM,
        task_prompt=TASK,
        sharded=False,
        reference={"answer": "19"},
        turns=(
            turn(0, 1, "student", "attempt", "The answer is 18.", is_correct=False),
            turn(1, 1, "teacher", "feedback", "Too low: check the units.",
                 private_context=PRIVATE, leak_flag=leak_first_feedback),
            turn(2, 2, "student", "attempt", "The answer is 20.", is_correct=False),
            turn(3, 2, "teacher", "feedback", "Too high now.", private_context=PRIVATE),
            turn(4, 3, "student", "attempt", "The answer is 19.", is_correct=True),
        ),
    )  # fmt: skip


def sharded() -> TrainingDialogue:
    """The student never saw the task prompt: the shards are user turns."""
    context = {"shard": 1, "shards_total": 2}
    return TrainingDialogue(
        dialogue_id=2,
        student_system="",
        task_prompt="FULL TASK NEVER SHOWN",
        sharded=True,
        reference={"answer": "19"},
        turns=(
            turn(0, 1, "user", "shard", "Add two numbers.", private_context=context),
            turn(1, 1, "student", "question", "Which numbers?"),
            turn(2, 1, "user", "shard", "12 and 7.", private_context={**context, "shard": 2}),
            turn(3, 2, "student", "attempt", "The answer is 19.", is_correct=True),
        ),
    )


def self_critique(instruction: str = "Critique your answer.") -> TrainingDialogue:
    """Self-correction, critique style: the student's critiques are student turns."""
    critique = {CRITIQUE_INSTRUCTION_KEY: instruction}
    return TrainingDialogue(
        dialogue_id=3,
        student_system=SYSTEM,
        task_prompt=TASK,
        sharded=False,
        reference={"answer": "19"},
        turns=(
            turn(0, 1, "student", "attempt", "The answer is 18.", is_correct=False),
            turn(1, 1, "student", "other", "I dropped a one.", private_context=critique),
            turn(2, 2, "student", "attempt", "The answer is 19.", is_correct=True),
        ),
    )


def sums(count: int, *, start: int = 0) -> list[TrainingDialogue]:
    """``count`` small solved dialogues (one wrong attempt, feedback, the right answer), each
    with its own numbers: a tiny training set."""
    rows = []
    for i in range(start, start + count):
        a, b = 10 + i % 13, 3 + (i * 7) % 11
        rows.append(
            TrainingDialogue(
                dialogue_id=i,
                student_system="",
                task_prompt=f"What is {a} + {b}?",
                sharded=False,
                reference={"answer": str(a + b)},
                turns=(
                    turn(
                        0, 1, "student", "attempt", f"The answer is {a + b + 1}.", is_correct=False
                    ),
                    turn(1, 1, "teacher", "feedback", "Too high.", private_context=PRIVATE),
                    turn(2, 2, "student", "attempt", f"The answer is {a + b}.", is_correct=True),
                ),
            )
        )
    return rows


def trained_token_loss(model_dir: Path | str, tokenizer: Any, config: TrainingConfig) -> float:
    """Mean cross-entropy of the trained tokens of ``sums(16)`` under the model in ``model_dir``,
    on CPU in float32 (whichever device trained it)."""
    import torch
    import transformers

    from models_gpu.training.encode import encode_for_config

    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    total = count = 0.0
    with torch.no_grad():
        for dialogue in sums(16):
            example = encode_for_config(tokenizer, dialogue, config)
            loss = model(
                input_ids=torch.tensor([example.input_ids]),
                labels=torch.tensor([example.labels]),
            ).loss
            total += float(loss) * example.trained_tokens
            count += example.trained_tokens
    return total / count
