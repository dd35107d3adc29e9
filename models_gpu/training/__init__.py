"""Fine-tuning a student on stored dialogues (methods, settings: ``models_gpu.spec.training``).

    encode    a dialogue as token ids and a loss mask, per method, with the model's chat template
    qpriming  Q-priming's rewrite: failed attempts become clarifying questions
    trainer   ``train``: TRL's SFTTrainer on those examples, full or LoRA, resumable, cancellable
    preview   ``training_preview``: what a launch would train on, before it is launched

Importing this package loads no torch: ``train`` imports it when called.
"""

from models_gpu.spec.reports import DatasetStats, TrainResult
from models_gpu.training.encode import (
    IGNORE_INDEX,
    ChatTemplateError,
    EncodedExample,
    encode_dialogue,
    encode_for_config,
    render_preview,
)
from models_gpu.training.qpriming import QuestionRequest, QuestionWriter, prime_dialogue
from models_gpu.training.trainer import train

__all__ = [
    "IGNORE_INDEX",
    "ChatTemplateError",
    "DatasetStats",
    "EncodedExample",
    "QuestionRequest",
    "QuestionWriter",
    "TrainResult",
    "encode_dialogue",
    "encode_for_config",
    "prime_dialogue",
    "render_preview",
    "train",
]
