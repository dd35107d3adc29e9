"""The training launch form's data, valid unless changed."""

from __future__ import annotations

from typing import Any


def form_data(world: dict[str, Any], **changes: Any) -> dict[str, Any]:
    data = {
        "selection": "outcome=solved", "name": "", "base_model": world["base"].pk,
        "eval_task_set": world["held_out"].pk, "eval_protocol": world["protocol"].pk,
        "eval_teacher": world["teacher"].pk, "eval_samples": 1,
        "method": "sft", "learning_rate": 0.001, "epochs": 1, "max_steps": 2, "batch_size": 2,
        "gradient_accumulation_steps": 1, "max_length": 512, "warmup_ratio": 0.0,
        "weight_decay": 0.0, "lr_scheduler": "linear", "finetuning": "full", "lora_r": 8,
        "lora_alpha": 16, "lora_dropout": 0.0, "seed": 0, "save_steps": 1,
        "keep_checkpoints": 2, "logging_steps": 1, "device": "cpu", "precision": "float32",
        "critique_instruction": "Critique the answer.", "qpriming_decay": 0.75,
        "qpriming_question_template": "Could you say more?",
    }  # fmt: skip
    return {**data, **changes}
