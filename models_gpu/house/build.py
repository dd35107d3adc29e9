"""``build_house_model``: tokenizer, weights, pre-training, evaluation, saved in one directory."""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from models_gpu.house.corpus import CorpusMix, tokenizer_texts
from models_gpu.house.model import HouseConfig, init_model, save_checkpoint
from models_gpu.house.tokenizer import train_tokenizer
from models_gpu.house.train import Progress, TrainConfig, train

# The house model: 2 layers, 2 heads of 64 (vLLM's CPU attention needs 64), about 0.6M weights.
HOUSE_MODEL = HouseConfig(
    hidden_size=128, num_layers=2, num_heads=2, intermediate_size=512, vocab_size=1024
)
HOUSE_TRAINING = TrainConfig()
# The miniature's base (``sml_miniature`` builds one per seed): the same architecture, pre-trained
# on guess-the-number games alone, played by a random valid guesser, from the first step at the
# peak learning rate. Measured (docs/miniature-log.md): with arithmetic in the same 0.6 M weights
# and a build of about 5 minutes, a model made 55-74% valid guesses; alone, 94%.
GAME_TRAINING = TrainConfig(
    steps=1500, batch_size=16, warmup_steps=20, first_share=0.0, replay=0.0,
    mix=CorpusMix(guess_number=1.0),
)  # fmt: skip
TOKENIZER_EXAMPLES = 3000
LOSS_WINDOW = 50  # steps averaged for the first/last loss reported (a quarter of short runs)


def build_house_model(
    out_dir: str | Path,
    *,
    steps: int | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    model_config: HouseConfig = HOUSE_MODEL,
    train_config: TrainConfig = HOUSE_TRAINING,
    evaluate_tasks: int = 100,
) -> Path:
    """Build, pre-train, evaluate and save the house model in ``out_dir``; returns the directory.

    ``steps`` overrides ``train_config.steps``. ``progress(step, steps, loss)`` is called after
    each training step. ``evaluate_tasks`` held-out
    tasks per kind are measured after training (0: skip). ``dialab_house.json`` records the sizes,
    the training settings, the losses, the accuracy and the build time.
    """
    from models_gpu.house.evaluate import evaluate

    steps = train_config.steps if steps is None else steps
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    started = time.perf_counter()
    model_config = replace(model_config, seed=seed)
    train_config = replace(train_config, steps=steps, seed=seed)
    tokenizer = train_tokenizer(
        tokenizer_texts(seed, TOKENIZER_EXAMPLES), vocab_size=model_config.vocab_size
    )
    model = init_model(model_config, tokenizer)
    losses = train(model, tokenizer, train_config, progress)
    train_seconds = time.perf_counter() - started
    window = max(1, min(LOSS_WINDOW, len(losses) // 4))
    metadata: dict[str, Any] = {
        "what": "Dialab's house model: a small Llama pre-trained here on procedural dialogues "
        "(models_gpu/house; what they were: 'training').",
        "trained": True,
        "config": asdict(model_config),
        "training": asdict(train_config),
        "parameters": sum(parameter.numel() for parameter in model.parameters()),
        "loss_first": _mean(losses[:window]),
        "loss_last": _mean(losses[-window:]),
        "train_seconds": round(train_seconds, 1),
    }
    out = save_checkpoint(model, tokenizer, out_dir, metadata)
    if evaluate_tasks > 0:
        metadata.update(evaluate(out, seed=seed, tasks_per_kind=evaluate_tasks))
    metadata["build_seconds"] = round(time.perf_counter() - started, 1)
    return save_checkpoint(model, tokenizer, out, metadata)


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else float("nan")
